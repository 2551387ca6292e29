/* Named barrier id of 256 threads: one warpgroup arrives (its turn is over), the other waits for it. */
__device__ __forceinline__ void sp_bar_arrive256(int id) { asm volatile("bar.arrive %0, 256;\n" :: "r"(id) : "memory"); }
__device__ __forceinline__ void sp_bar_sync256(int id) { asm volatile("bar.sync %0, 256;\n" :: "r"(id) : "memory"); }


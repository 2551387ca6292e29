
/* pdl = 2: launched with programmatic stream serialization, this kernel may start while the stream's previous
 * kernel runs: it waits for that kernel's completion and memory first, so no kernel reads or writes before its
 * predecessors are done; the next kernel launches once this one's CTAs have all exited */
__device__ __forceinline__ void sp_pdl_enter(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

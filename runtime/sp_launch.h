/* A compiled kernel loaded into the current context, ready to launch. */
#ifndef SP_LAUNCH_H
#define SP_LAUNCH_H

#include "sp_nvrtc.h"
#include "sp_template.h"
#include <cuda.h>

typedef struct sp_kernel {
    CUmodule module;
    CUfunction fn;
    char name[128];
    unsigned grid[3], block[3], cluster[3];
    unsigned smem;
} sp_kernel;

/* Loads cubin, finds src->kernel and raises its dynamic shared-memory limit to src->smem. */
sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out);
/* Launches with the geometry of the rendered source; args as for cuLaunchKernel. Checks the
 * launch itself (not the kernel's completion). */
sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args);
void sp_kernel_unload(sp_kernel *k);

#endif

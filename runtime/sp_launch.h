/* A compiled kernel loaded into the current context, ready to launch. */
#ifndef SP_LAUNCH_H
#define SP_LAUNCH_H

#include "sp_nvrtc.h"
#include "sp_template.h"
#include <cuda.h>

typedef struct sp_kernel_fn {
    CUfunction fn;
    char name[128];
    unsigned grid[3], block[3], cluster[3];
    unsigned smem;
} sp_kernel_fn;

typedef struct sp_kernel {
    CUmodule module;
    CUfunction fn;
    char name[128];
    unsigned grid[3], block[3], cluster[3];
    unsigned smem;
    int nthen;                          /* further kernels of a pipeline, launched after this one */
    sp_kernel_fn then[SP_MAX_THEN];
} sp_kernel;

/* Loads cubin, finds src->kernel and raises its dynamic shared-memory limit to src->smem. */
sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out);
/* Launches with the geometry of the rendered source (every kernel of a pipeline, in order, with
 * the same args); args as for cuLaunchKernel. Checks the launches (not the kernels' completion). */
sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args);
void sp_kernel_unload(sp_kernel *k);

#endif

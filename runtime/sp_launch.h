/* A compiled kernel loaded into the current context, ready to launch. */
#ifndef SP_LAUNCH_H
#define SP_LAUNCH_H

#include "sp_kernel_src.h"
#include "sp_nvrtc.h"
#include <cuda.h>

typedef struct sp_kernel_fn {
    CUfunction fn;
    sp_kernel_stage at;                 /* its name and geometry */
    unsigned smem_limit;                /* the dynamic shared memory it may take (raised at load as at needs) */
} sp_kernel_fn;

typedef struct sp_kernel {
    CUmodule module;
    int n;                              /* kernels, launched in order (a pipeline has several) */
    sp_kernel_fn fn[SP_MAX_KERNELS];
} sp_kernel;

/* Loads cubin, finds src's kernels and raises their dynamic shared-memory limits as needed. */
sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out);
/* Launches with the geometry of the rendered source (every kernel of a pipeline, in order, with
 * the same args); args as for cuLaunchKernel. A kernel that takes tensor maps gets them encoded
 * from its arguments (sp_tmaps) and passed after them. Checks the launches (not the kernels'
 * completion). */
sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args);
/* The same with another geometry of the same kernels (stages[i] names k's kernel i): a launch for
 * fewer tokens than the source was rendered for. Raises a kernel's shared-memory limit when a stage
 * asks for more than it was loaded with. */
sptune_status sp_kernel_launch_stages(sp_kernel *k, const sp_kernel_stage *stages, CUstream stream, void **args);
void sp_kernel_unload(sp_kernel *k);

#endif

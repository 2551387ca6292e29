/* A compiled kernel loaded into the current context, ready to launch. */
#ifndef SP_LAUNCH_H
#define SP_LAUNCH_H

#include "sp_cache.h"
#include "sp_nvrtc.h"
#include "sp_template.h"
#include <cuda.h>

typedef struct sp_kernel_fn {
    CUfunction fn;
    sp_kernel_stage at;                 /* its name and geometry */
} sp_kernel_fn;

typedef struct sp_kernel {
    CUmodule module;
    int n;                              /* kernels, launched in order (a pipeline has several) */
    sp_kernel_fn fn[SP_MAX_KERNELS];
} sp_kernel;

/* Renders configuration c and compiles it through the cache (may be NULL). On success src and cub
 * are filled and the caller frees both. On failure the message says whether rendering or
 * compiling failed, src is freed, and cub may hold the whole compile log: free cub in any case. */
sptune_status sp_variant_build(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p,
                               sp_cache *cache, sp_kernel_src *src, sp_cubin *cub);

/* Loads cubin, finds src's kernels and raises their dynamic shared-memory limits as needed. */
sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out);
/* Launches with the geometry of the rendered source (every kernel of a pipeline, in order, with
 * the same args); args as for cuLaunchKernel. A kernel that takes tensor maps gets them encoded
 * from its arguments (sp_tmaps) and passed after them. Checks the launches (not the kernels'
 * completion). */
sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args);
void sp_kernel_unload(sp_kernel *k);

#endif

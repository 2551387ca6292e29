/* One configuration of a template from text to machine code: rendered for a GPU and problem,
 * then compiled through the kernel cache. */
#ifndef SP_VARIANT_H
#define SP_VARIANT_H

#include "sp_cache.h"
#include "sp_template.h"

/* Renders configuration c and compiles it through the cache (may be NULL). On success src and cub
 * are filled and the caller frees both. On failure the message says whether rendering or
 * compiling failed, src is freed, and cub may hold the whole compile log: free cub in any case. */
sptune_status sp_variant_build(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p,
                               sp_cache *cache, sp_kernel_src *src, sp_cubin *cub);

#endif

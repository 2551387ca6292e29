#include "sp_variant.h"

#include <string.h>

sptune_status sp_variant_build(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p,
                               sp_cache *cache, sp_kernel_src *src, sp_cubin *cub)
{
    memset(cub, 0, sizeof *cub);
    sptune_status st = sp_template_emit(t, c, gpu, p, src);
    if (st != SPTUNE_OK) return st;
    st = sp_kernel_build(cache, src->source, src->stage[0].kernel, gpu->info.arch, (const char *const *)src->options,
                         src->noptions, cub);
    if (st != SPTUNE_OK) sp_kernel_src_free(src);
    return st;
}

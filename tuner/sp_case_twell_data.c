/* What the TwELL harnesses share: the gate activations they are tested and timed on, and the
 * element-wise helper kernel the dense baselines and references need (cuBLAS has none). */
#include "sp_case.h"
#include "sp_cache.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


sptune_status sp_twell_upload_packed(sp_bench *b, const sp_twell_shape *sh, const unsigned short *H,
                                     CUdeviceptr *packed, CUdeviceptr *pool)
{
    size_t words = (size_t)sp_twell_packed_words(sh);
    uint32_t *hp = malloc(words * 4), *hpool = NULL;
    sp_twell_stats stats;
    sptune_status st = hp ? sp_twell_pack(sh, H, hp, NULL, 0, &stats) : sp_fail(SPTUNE_ERR_NOMEM, "out of host memory");
    int64_t pool_words = st == SPTUNE_OK && stats.pool_needed > 0 ? stats.pool_needed : 1;
    if (st == SPTUNE_OK && !(hpool = malloc((size_t)pool_words * 4))) st = sp_fail(SPTUNE_ERR_NOMEM, "out of host memory");
    if (st == SPTUNE_OK) st = sp_twell_pack(sh, H, hp, hpool, pool_words, &stats);
    if (st == SPTUNE_OK && !(st = sp_bench_alloc(b, words * 4, packed)) &&
        !(st = sp_bench_alloc(b, (size_t)pool_words * 4, pool)) && !(st = sp_bench_upload(*packed, hp, words * 4)))
        st = sp_bench_upload(*pool, hpool, (size_t)pool_words * 4);
    free(hp);
    free(hpool);
    return st;
}

sptune_status sp_twell_out_alloc(sp_bench *b, int M, int F, long long pool_words, sp_twell_out *o)
{
    memset(o, 0, sizeof *o);
    size_t tiles64 = (size_t)(F + 63) / 64;
    o->packed_cap = (size_t)M * tiles64 * 64;
    o->capacity = (size_t)M * F / 2 + (size_t)M * tiles64 + 1024;
    if (o->capacity > SP_TWELL_MAX_POOL) o->capacity = SP_TWELL_MAX_POOL;   /* what offsets address */
    if (pool_words > (long long)o->capacity) o->capacity = (unsigned long long)pool_words;
    o->allocated = o->capacity;
    o->tile = 128;
    o->slots = 31;
    sptune_status st;
    if ((st = sp_bench_alloc(b, o->packed_cap * 4, &o->packed)) || (st = sp_bench_alloc(b, o->allocated * 4, &o->pool)) ||
        (st = sp_bench_alloc(b, 8, &o->counter)))
        sp_twell_out_free(o);
    return st;
}

void sp_twell_out_free(sp_twell_out *o)
{
    sp_bench_free(o->packed);
    sp_bench_free(o->pool);
    sp_bench_free(o->counter);
    o->packed = o->pool = o->counter = 0;
}

sptune_status sp_twell_out_bind(sp_twell_out *o, const char *op, int M, int F, const sp_template *t,
                                const sp_config *c)
{
    long long bn = sp_config_int(t, c, "bn"), slots = sp_config_int(t, c, "slots");
    if (bn < 2 || slots < 1 || slots >= bn)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: configuration lacks a valid bn/slots", op);
    size_t words = (size_t)M * (size_t)((F + bn - 1) / bn) * (size_t)(slots + 1);
    if (words > o->packed_cap)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: bn=%lld slots=%lld needs more packed space than allocated", op, bn, slots);
    o->tile = (int)bn;
    o->slots = (int)slots;
    return SPTUNE_OK;
}

sptune_status sp_twell_out_capacity(sp_twell_out *o, const unsigned short *G, int M, int F, int first, long long mode,
                                    const sp_template *t, const sp_config *c, const sp_problem *p)
{
    long long cap = mode;
    if (mode == -1) {
        sptune_status st = sp_config_scalar_size(t, c, p, "pool_capacity", 0, &cap);
        if (st != SPTUNE_OK) return st;
    } else if (mode == -2) {   /* what the gate needs with this tile and these slots */
        cap = 0;
        for (int r = 0; r < M; r++)
            for (int j0 = first; j0 < F; j0 += o->tile) {
                int n = 0;
                for (int j = j0; j < F && j < j0 + o->tile; j++) n += (G[(size_t)r * F + j] & 0x7fffu) != 0;
                if (n > o->slots) cap += n + 1;
            }
    } else if (mode < 0) {
        return sp_fail(SPTUNE_ERR_INVALID, "pool size %lld: -1 (typical), -2 (exact) or words", mode);
    }
    o->capacity = (unsigned long long)cap < o->allocated ? (unsigned long long)cap : o->allocated;
    return SPTUNE_OK;
}

sptune_status sp_twell_out_reset(const sp_twell_out *o, CUstream s)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    return st != SPTUNE_OK ? st : SP_CU(cu->MemsetD32Async(o->counter, 0, 2, s));
}

sptune_status sp_twell_out_poison(const sp_twell_out *o, CUstream s)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    if ((st = SP_CU(cu->MemsetD32Async(o->packed, 0xdeadbeefu, o->packed_cap, s)))) return st;
    return SP_CU(cu->MemsetD32Async(o->pool, 0xdeadbeefu, (size_t)o->allocated, s));
}

sptune_status sp_twell_out_used(const sp_twell_out *o, unsigned long long *used, int *fits, char *detail, size_t len)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    *used = 0;
    if ((st = SP_CU(cu->MemcpyDtoH(used, o->counter, 8)))) return st;
    *fits = *used <= o->capacity;
    if (!*fits) snprintf(detail, len, "overflow pool too small: needed %llu words, had %llu", *used, o->capacity);
    return SPTUNE_OK;
}

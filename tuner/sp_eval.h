/* One candidate from configuration to verdict: render, compile (through the cache), load,
 * verify against the reference, time. The outcome says where it stopped. */
#ifndef SP_EVAL_H
#define SP_EVAL_H

#include "sp_cache.h"
#include "sp_case.h"
#include "sp_db.h"

typedef struct sp_eval {
    sp_outcome outcome;
    char detail[1024];      /* the failure's message */
    char method[160];       /* how the timing was taken (timing.method points here after a copy) */
    sp_timing timing;       /* median etc. for OK; rel_error set once verified */
    sp_resources res;
    unsigned smem_dynamic;
    int from_cache;
    int sticky;             /* the CUDA context is unusable after this failure */
} sp_eval;

/* Evaluates configuration c of template t on case cs (whose bench gives GPU and stream). */
sptune_status sp_eval_variant(sp_case *cs, sp_template *t, const sp_config *c, sp_cache *cache, sp_eval *out);

/* The environment row for results measured on gpu (strings point into static storage of
 * this call's thread; valid until the next call). */
void sp_eval_env(const sp_gpu_profile *gpu, sp_env *env);

#endif

/* The calibration of twell-ffn's hot/cold split: which neurons fire most often, in what order the
 * application lays out its weights (sptune.h). Host code beside the TwELL format's (sp_twell.c), below
 * the api and the tuner, which both call it. */
#include "sptune.h"
#include "sp_status.h"
#include "sp_twell.h"

#include <stdlib.h>

sptune_status sptune_twell_count_active(const void *gate, long long tokens, int F, unsigned long long *counts)
{
    if (!gate || !counts) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_count_active: no gate or counts");
    if (tokens < 0 || F < 1) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_count_active: tokens=%lld, F=%d", tokens, F);
    const unsigned short *g = gate;
    for (long long r = 0; r < tokens; r++)
        for (int j = 0; j < F; j++) {
            counts[j] += sp_gate_active(g[(size_t)r * (size_t)F + (size_t)j]);
        }
    return SPTUNE_OK;
}

typedef struct ranked { unsigned long long count; int neuron; } ranked;

static int by_count(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return (x->neuron > y->neuron) - (x->neuron < y->neuron);
}

sptune_status sptune_twell_hot_order(const unsigned long long *counts, int F, int *perm)
{
    if (!counts || !perm) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_hot_order: no counts or permutation");
    if (F < 1) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_hot_order: F=%d", F);
    ranked *r = malloc((size_t)F * sizeof *r);
    if (!r) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory ordering %d neurons", F);
    for (int j = 0; j < F; j++) r[j] = (ranked){counts[j], j};
    qsort(r, (size_t)F, sizeof *r, by_count);
    for (int i = 0; i < F; i++) perm[i] = r[i].neuron;
    free(r);
    return SPTUNE_OK;
}

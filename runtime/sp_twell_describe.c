/* What a layer's activations are like, in the data dimensions of the TwELL problems (templates/lib/twell_dist.lua),
 * measured from a calibration batch: the problem an engine asks sptune_kernel_get for, so that the results looked
 * up were measured on data like its own rather than on the defaults. The estimates invert the benchmarks'
 * generator (tuner/sp_twell_dist.c), which draws neuron j's firing rate ~ rank^-tail, a share of dead neurons and
 * a few dense tokens; a test draws from it and recovers the dimensions. */
#include "sptune.h"
#include "sp_status.h"
#include "sp_twell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

sptune_status sptune_twell_count_tokens(const void *gate, long long tokens, int F, unsigned *active)
{
    if (!gate || !active) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_count_tokens: no gate or output");
    if (tokens < 0 || F < 1) return sp_fail(SPTUNE_ERR_INVALID, "sptune_twell_count_tokens: tokens=%lld, F=%d", tokens, F);
    const unsigned short *g = gate;
    for (long long r = 0; r < tokens; r++) {
        unsigned n = 0;
        for (int j = 0; j < F; j++) n += sp_gate_active(g[(size_t)r * (size_t)F + (size_t)j]);
        active[r] = n;
    }
    return SPTUNE_OK;
}

static int desc_u(const void *a, const void *b)
{
    const unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x < y) - (x > y);
}

static int desc_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The exponent a of counts ~ rank^-a over the live neurons (counts less the dense tokens' share, `floor`): a least
 * squares line through log count against log rank, over the ranks whose counts are neither saturated (a neuron
 * firing for nearly every token) nor so small that chance decides their order. 0 when too few ranks qualify. */
static double tail_of(const unsigned long long *counts, int F, double floor, double ordinary, sptune_status *st)
{
    double *c = malloc((size_t)F * sizeof *c);
    if (!c) {
        *st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory describing %d neurons", F);
        return 0;
    }
    int live = 0;
    for (int j = 0; j < F; j++)
        if (counts[j] > 0) c[live++] = (double)counts[j] - floor;
    qsort(c, (size_t)live, sizeof *c, desc_d);
    const double lo = fmax(16.0, 3.0 * floor), hi = 0.8 * ordinary;
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < live; i++) {
        if (c[i] > hi || c[i] < lo) continue;
        const double x = log(i + 1.0), y = log(c[i]);
        n++;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    free(c);
    if (n < 8 || n * sxx - sx * sx <= 0) return 0;
    const double a = -(n * sxy - sx * sy) / (n * sxx - sx * sx);
    return a < 0 ? 0 : a > 16 ? 16 : a;
}

/* The dense tokens of a batch: those far above the ordinary ones (eight times the median, and a 32nd of the layer);
 * their number, their active total, and how many lead the batch; and the batch's active total (all). */
typedef struct dense_tokens {
    double cut, total, all;
    long long n, leading;
} dense_tokens;

static sptune_status find_dense(const char *fn, long long tokens, const unsigned *active, int F, dense_tokens *d)
{
    unsigned *sorted = malloc((size_t)tokens * sizeof *sorted);
    if (!sorted) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory describing %lld tokens", tokens);
    double all = 0;
    for (long long r = 0; r < tokens; r++) {
        if (active[r] > (unsigned)F) {
            free(sorted);
            return sp_fail(SPTUNE_ERR_INVALID, "%s: token %lld has %u active neurons of %d", fn, r, active[r], F);
        }
        sorted[r] = active[r];
        all += active[r];
    }
    qsort(sorted, (size_t)tokens, sizeof *sorted, desc_u);
    const double median = sorted[tokens / 2];
    free(sorted);
    *d = (dense_tokens){.cut = fmax(8.0 * fmax(median, 1.0), F / 32.0), .all = all};
    for (long long r = 0; r < tokens; r++)
        if (active[r] > d->cut) {
            d->n++;
            d->total += active[r];
            if (d->leading == r) d->leading++;
        }
    return SPTUNE_OK;
}

static sptune_status check_args(const char *fn, long long tokens, int F, long long M, int D, int order)
{
    if (tokens < 1 || F < 1 || D < 1 || M < 1 || M > 2147483647LL || (order != 0 && order != 1))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: tokens=%lld, F=%d, M=%lld, D=%d, order=%d (wants at least one token, "
                       "positive sizes, M within 2^31, order 0 or 1)", fn, tokens, F, M, D, order);
    return SPTUNE_OK;
}

/* counts: per neuron over every token (ordinary = 0: the dense tokens' share is estimated and taken off for the
 * tail) or over the ordinary tokens alone (1); dt: the batch's dense tokens (find_dense). */
static sptune_status describe(const char *fn, long long tokens, const dense_tokens *dt, int F,
                              const unsigned long long *counts, int ordinary, long long M, int D, int order, char *buf,
                              size_t len)
{
    sptune_status st = SPTUNE_OK;
    const long long ndense = dt->n, leading = dt->leading;
    const double dense_total = dt->total, total = dt->all;
    long long dead = 0;
    for (int j = 0; j < F; j++) dead += counts[j] == 0;
    const double live = (double)(F - dead), dense_nnz = ndense ? dense_total / (double)ndense : 2000.0;
    /* where the dense tokens sit: the first ones (0), token 0 and others elsewhere (2, also where nothing tells),
     * elsewhere (1) */
    const int at = ndense == 0 || (leading > 0 && (leading < ndense || ndense == 1)) ? 2 : leading == ndense ? 0 : 1;
    /* a dense token fires most live neurons: spread evenly, its share of each count */
    const double floor = live > 0 && !ordinary ? (double)ndense * dense_nnz / live : 0;
    const double tail = live > 0 ? tail_of(counts, F, floor, (double)(tokens - ndense), &st) : 0;
    if (st != SPTUNE_OK) return st;
    long long nnz = llround(total / (double)tokens);
    if (nnz < 1) nnz = 1;
    const int n = snprintf(buf, len, "M=%lld,D=%d,F=%d,nnz=%lld,dead=%.0f,tail=%.1f,dense=%.2g,dense_nnz=%.0f,at=%d,"
                           "order=%d", M, D, F, nnz, 100.0 * (double)dead / F, tail, 100.0 * (double)ndense / tokens,
                           dense_nnz, at, order);
    if (n < 0 || (size_t)n >= len) {
        if (len) buf[0] = 0;
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the problem takes %d bytes, the buffer %zu", fn, n + 1, len);
    }
    return SPTUNE_OK;
}

sptune_status sptune_twell_describe(long long tokens, const unsigned *active, int F, const unsigned long long *counts,
                                    long long M, int D, int order, char *buf, size_t len)
{
    const char *fn = "sptune_twell_describe";
    if (buf && len) buf[0] = 0;
    if (!active || !counts || !buf) return sp_fail(SPTUNE_ERR_INVALID, "%s: no counts or buffer", fn);
    dense_tokens dt;
    sptune_status st = check_args(fn, tokens, F, M, D, order);
    if (st == SPTUNE_OK) st = find_dense(fn, tokens, active, F, &dt);
    /* counts no batch can have: a neuron active on more tokens than there are, or two tallies of one batch that
       disagree (the tokens' actives and the neurons' counts add up to the same number of active entries) */
    unsigned long long by_token = 0, by_neuron = 0;
    for (long long r = 0; st == SPTUNE_OK && r < tokens; r++) by_token += active[r];
    for (int j = 0; st == SPTUNE_OK && j < F; j++) {
        if (counts[j] > (unsigned long long)tokens)
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: neuron %d is active on %llu tokens of %lld", fn, j, counts[j], tokens);
        by_neuron += counts[j];
    }
    if (st == SPTUNE_OK && by_token != by_neuron)
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: the tokens' counts add up to %llu active entries, the neurons' to %llu: "
                     "count both over the same batch", fn, by_token, by_neuron);
    return st != SPTUNE_OK ? st : describe(fn, tokens, &dt, F, counts, 0, M, D, order, buf, len);
}

sptune_status sptune_twell_describe_gate(const void *gate, long long tokens, int F, long long M, int D, int order,
                                         char *buf, size_t len)
{
    const char *fn = "sptune_twell_describe_gate";
    if (buf && len) buf[0] = 0;
    if (!gate || !buf) return sp_fail(SPTUNE_ERR_INVALID, "%s: no gate or buffer", fn);
    sptune_status st = check_args(fn, tokens, F, M, D, order);
    if (st != SPTUNE_OK) return st;
    unsigned *active = malloc((size_t)tokens * sizeof *active);
    unsigned long long *counts = calloc((size_t)F, sizeof *counts);
    dense_tokens dt;
    if (!active || !counts) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory describing %lld tokens of %d neurons", tokens, F);
    if (st == SPTUNE_OK) st = sptune_twell_count_tokens(gate, tokens, F, active);
    if (st == SPTUNE_OK) st = find_dense(fn, tokens, active, F, &dt);
    /* the neurons' counts over the ordinary tokens alone: the tail as those see it */
    for (long long r = 0; st == SPTUNE_OK && r < tokens; r++)
        if (active[r] <= dt.cut) st = sptune_twell_count_active((const unsigned short *)gate + (size_t)r * F, 1, F, counts);
    /* a neuron only dense tokens fire is live: counted once so that it is not taken for dead */
    for (long long r = 0; st == SPTUNE_OK && r < tokens; r++)
        if (active[r] > dt.cut)
            for (int j = 0; j < F; j++)
                if (!counts[j] && sp_gate_active(((const unsigned short *)gate)[(size_t)r * F + j])) counts[j] = 1;
    if (st == SPTUNE_OK) st = describe(fn, tokens, &dt, F, counts, 1, M, D, order, buf, len);
    free(active);
    free(counts);
    return st;
}

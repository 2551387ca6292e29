#include "sp_twell_dist.h"
#include "sp_bench.h"
#include "sp_rng.h"
#include "sp_status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A dead neuron's quantile (a marker: dead neurons never fire, dense tokens included). */
#define DEAD_Z (-40.0)
/* Producer data: column 0 of X is 1 for every token (a bias input) and dead neurons' weight there
 * is this, far below any dot product the other columns give. */
#define DEAD_BIAS (-16384.0f)
#define MAX_RATE 0.95

sptune_status sp_twell_dist_get(const sp_problem *p, int F, sp_twell_dist *d)
{
    double at = 2;
    memset(d, 0, sizeof *d);
    d->dead = 30;
    d->tail = 0.7;
    d->dense = 0.5;
    d->dense_nnz = 2000;
    if (!sp_problem_get(p, "nnz", &d->nnz)) return sp_fail(SPTUNE_ERR_INVALID, "the problem has no nnz (mean nonzeros per token)");
    sp_problem_get(p, "dead", &d->dead);
    sp_problem_get(p, "tail", &d->tail);
    sp_problem_get(p, "dense", &d->dense);
    sp_problem_get(p, "dense_nnz", &d->dense_nnz);
    sp_problem_get(p, "at", &at);
    double gen = 0;
    d->spread = 0.5;
    sp_problem_get(p, "gen", &gen);
    sp_problem_get(p, "spread", &d->spread);
    if (gen == 2)
        return sp_fail(SPTUNE_ERR_INVALID, "gen=2 marks results measured on an application's own tensors (autotune, "
                       "`sptune tune --data FILE`): no generator makes that data; give --data, or gen=0 or 1");
    if (!(gen == 0 || gen == 1)) return sp_fail(SPTUNE_ERR_INVALID, "gen=%g: 0 (rates per neuron) or 1 (made by the layer)", gen);
    if (!(d->spread >= 0 && d->spread <= 3)) return sp_fail(SPTUNE_ERR_INVALID, "spread=%g: a log-gain sigma in [0, 3]", d->spread);
    d->gen = (int)gen;
    if (!(d->nnz > 0 && d->nnz <= F)) return sp_fail(SPTUNE_ERR_INVALID, "nnz=%g: wants 0 < nnz <= F (%d)", d->nnz, F);
    if (!(d->dead >= 0 && d->dead < 100))
        return sp_fail(SPTUNE_ERR_INVALID, "dead=%g: a percentage below 100", d->dead);
    if (!(d->tail >= 0 && d->tail <= 8)) return sp_fail(SPTUNE_ERR_INVALID, "tail=%g: an exponent in [0, 8]", d->tail);
    if (!(d->dense >= 0 && d->dense <= 100))
        return sp_fail(SPTUNE_ERR_INVALID, "dense=%g: a percentage of tokens in [0, 100]", d->dense);
    if (!(d->dense_nnz >= 0)) return sp_fail(SPTUNE_ERR_INVALID, "dense_nnz=%g: wants a count >= 0", d->dense_nnz);
    if (!(at == 0 || at == 1 || at == 2))
        return sp_fail(SPTUNE_ERR_INVALID, "at=%g: 0 (first tokens), 1 (scattered) or 2 (token 0, the rest scattered)",
                       at);
    d->at = (int)at;
    return SPTUNE_OK;
}

static double normal_cdf(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }

/* z with Phi(z) = p (bisection: exact enough for drawing data). */
static double probit(double p)
{
    double lo = -9, hi = 9;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        if (normal_cdf(mid) < p) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

void sp_twell_draw_free(sp_twell_draw *w)
{
    free(w->prob);
    free(w->dense_prob);
    free(w->z);
    free(w->dense_row);
    memset(w, 0, sizeof *w);
}

sptune_status sp_twell_draw_init(uint64_t *rng, int M, int F, const sp_twell_dist *d, sp_twell_draw *w)
{
    memset(w, 0, sizeof *w);
    w->M = M;
    w->F = F;
    double *weight = malloc((size_t)F * sizeof *weight);
    w->prob = malloc((size_t)F * sizeof *w->prob);
    w->dense_prob = malloc((size_t)F * sizeof *w->dense_prob);
    w->z = malloc((size_t)F * sizeof *w->z);
    w->dense_row = calloc((size_t)M, 1);
    int *pick = malloc((size_t)M * sizeof *pick);
    if (!weight || !w->prob || !w->dense_prob || !w->z || !w->dense_row || !pick) {
        free(weight);
        free(pick);
        sp_twell_draw_free(w);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of host memory drawing activations (M=%d, F=%d)", M, F);
    }
    /* which neurons are dead, and the others' heavy-tailed weights (ranks drawn, so unordered) */
    for (int j = 0; j < F; j++) {
        int dead = (double)(sp_rng_next(rng) % 100000) < d->dead * 1000;
        weight[j] = dead ? 0.0 : pow(1.0 + (double)(sp_rng_next(rng) % (uint64_t)F), -d->tail);
    }
    /* dense tokens */
    if (d->dense > 0 && M > 0) {
        double want = ceil((double)M * d->dense / 100.0 - 1e-9);
        w->ndense = want < 1 ? 1 : want > M ? M : (int)want;
    }
    for (int r = 0; r < M; r++) pick[r] = r;
    int first = d->at == 0 ? w->ndense : d->at == 2 && w->ndense > 0 ? 1 : 0;
    for (int r = 0; r < first; r++) w->dense_row[r] = 1;
    for (int k = 0; k < w->ndense - first; k++) {   /* the rest scattered over rows first.. (partial shuffle) */
        int span = M - first - k, i = first + k + (int)(sp_rng_next(rng) % (uint64_t)span);
        int t = pick[first + k];
        pick[first + k] = pick[i];
        pick[i] = t;
        w->dense_row[pick[first + k]] = 1;
    }
    free(pick);
    /* Ordinary tokens' rates scaled so that the whole batch has a mean of nnz per token, with the dense
     * tokens' count as their lambda achieves it (capped: see below): two rounds, the second with the
     * count the first achieved. */
    double dense_count = d->dense_nnz;
    for (int round = 0; round < 2; round++) {
        double ordinary = w->ndense < M ? (d->nnz * M - w->ndense * dense_count) / (M - w->ndense) : d->nnz;
        if (ordinary < 0.25) {
            free(weight);
            sptune_status st = sp_fail(SPTUNE_ERR_INVALID, "nnz=%g cannot be the mean over %d tokens of which %d"
                                       " dense with ~%.0f nonzeros each: raise nnz or M, or lower dense or dense_nnz",
                                       d->nnz, M, w->ndense, dense_count);
            sp_twell_draw_free(w);
            return st;
        }
        double lo = 0, hi = 1;
        for (int it = 0; it < 200; it++) {
            double s = 0;
            for (int j = 0; j < F; j++) s += fmin(MAX_RATE, hi * weight[j]);
            if (s >= ordinary || hi > 1e300) break;
            hi *= 2;
        }
        for (int it = 0; it < 80; it++) {
            double mid = 0.5 * (lo + hi), s = 0;
            for (int j = 0; j < F; j++) s += fmin(MAX_RATE, mid * weight[j]);
            if (s < ordinary) lo = mid; else hi = mid;
        }
        for (int j = 0; j < F; j++) {
            w->prob[j] = fmin(MAX_RATE, hi * weight[j]);
            w->z[j] = weight[j] > 0 ? probit(fmax(w->prob[j], 1e-12)) : DEAD_Z;
        }
        /* dense tokens fire live neuron j with Phi(lambda z_j) (lambda = 1: an ordinary token); the
         * count is capped by what lambda = -1.1 gives, most of the live neurons */
        double a = -1.1, b = 1.0;
        for (int it = 0; it < 60; it++) {
            double mid = 0.5 * (a + b), s = 0;
            for (int j = 0; j < F; j++) s += w->z[j] > DEAD_Z ? normal_cdf(mid * w->z[j]) : 0.0;
            if (s > d->dense_nnz) a = mid; else b = mid;
        }
        w->lambda = 0.5 * (a + b);
        dense_count = 0;
        for (int j = 0; j < F; j++) {
            w->dense_prob[j] = w->z[j] > DEAD_Z ? normal_cdf(w->lambda * w->z[j]) : 0.0;
            dense_count += w->dense_prob[j];
        }
        if (w->ndense == 0 || fabs(dense_count - d->dense_nnz) <= 0.02 * d->dense_nnz + 1) break;
    }
    free(weight);
    return SPTUNE_OK;
}

sptune_status sp_twell_gate_data(uint64_t *rng, int M, int F, const sp_twell_dist *d, unsigned short *G)
{
    sp_twell_draw w;
    sptune_status st = sp_twell_draw_init(rng, M, F, d, &w);
    if (st != SPTUNE_OK) return st;
    for (int r = 0; r < M; r++) {
        const double *p = w.dense_row[r] ? w.dense_prob : w.prob;
        unsigned short *row = G + (size_t)r * F;
        for (int j = 0; j < F; j++)
            row[j] = sp_rng_unit(rng) < p[j] ? sp_float_to_bf16((float)(1.0 - sp_rng_unit(rng))) : 0;
    }
    sp_twell_draw_free(&w);
    return SPTUNE_OK;
}

/* The mean count over live neurons of a token of gain g when neuron j fires with Phi(c z_j / g). */
static double count_at(const sp_twell_draw *w, double c, double g)
{
    double s = 0;
    for (int j = 0; j < w->F; j++)
        if (w->z[j] > DEAD_Z) s += normal_cdf(c * w->z[j] / g);
    return s;
}

#define GAINS 24
#define MAX_GAIN 1000.0

/* gen 1 (sp_twell_dist.h): the rates of the draw become biases c z_j, c chosen so that the ordinary tokens'
 * mean count over their gains (log-normal, at GAINS quantiles) is what the first generator gives them. */
static sptune_status layer_made(uint64_t *rng, int M, int D, int F, const sp_twell_dist *d, const sp_twell_draw *w,
                                unsigned short *X, unsigned short *Wg)
{
    if (D < 2) return sp_fail(SPTUNE_ERR_INVALID, "gen=1 needs D >= 2 (a bias input and a token)");
    double q[GAINS], target = 0, lo = 0.05, hi = 20;
    for (int i = 0; i < GAINS; i++) q[i] = exp(d->spread * probit((i + 0.5) / GAINS));
    for (int j = 0; j < F; j++) target += w->prob[j];
    for (int it = 0; it < 50; it++) {   /* larger c, rarer firing (most z_j < 0) */
        const double c = sqrt(lo * hi);
        double s = 0;
        for (int i = 0; i < GAINS; i++) s += count_at(w, c, q[i]) / GAINS;
        if (s > target) lo = c; else hi = c;
    }
    const double c = sqrt(lo * hi);
    /* dense tokens: the gain that fires dense_nnz (past about half the live neurons no gain reaches) */
    double glo = 1, ghi = MAX_GAIN;
    for (int it = 0; it < 50; it++) {
        const double g = sqrt(glo * ghi);
        if (count_at(w, c, g) < d->dense_nnz) glo = g; else ghi = g;
    }
    const double dense_gain = sqrt(glo * ghi);
    sp_normals nrm = {rng, 0, 0};
    for (int r = 0; r < M; r++) {
        double g = w->dense_row[r] ? dense_gain : exp(d->spread * sp_normal(&nrm));
        if (g > MAX_GAIN) g = MAX_GAIN;
        X[(size_t)r * D] = sp_float_to_bf16(1.0f);
        for (int k = 1; k < D; k++) X[(size_t)r * D + k] = sp_float_to_bf16((float)(g * sp_normal(&nrm)));
    }
    const double scale = 1.0 / sqrt((double)(D - 1));
    for (int j = 0; j < F; j++) {
        const int dead = w->z[j] <= DEAD_Z;
        Wg[(size_t)j * D] = sp_float_to_bf16(dead ? DEAD_BIAS : (float)(c * w->z[j]));
        for (int k = 1; k < D; k++) Wg[(size_t)j * D + k] = sp_float_to_bf16((float)(scale * sp_normal(&nrm)));
    }
    return SPTUNE_OK;
}

sptune_status sp_twell_producer_data(uint64_t *rng, int M, int D, int F, const sp_twell_dist *d, unsigned short *X,
                                     unsigned short *Wg)
{
    sp_twell_draw w;
    sptune_status st = sp_twell_draw_init(rng, M, F, d, &w);
    if (st != SPTUNE_OK) return st;
    if (d->gen == 1) {
        st = layer_made(rng, M, D, F, d, &w, X, Wg);
        sp_twell_draw_free(&w);
        return st;
    }
    /* x = c + (u - 1/2), u uniform: an ordinary token has c = 1/2 (x in [0, 1)); x_0 = 1 (the dead
     * neurons' bias input). Wg[j] = u_j + noise
     * in [-1, 1): x.Wg[j] = u_j c D + a noise of variance D (c^2 + 1/12) / 3, so with u_j set from z_j
     * at c = 1/2 the neuron fires with Phi(z_j), and a token with c^2 = l^2 / (16 - 12 l^2) with
     * Phi(l z_j). */
    double l = w.lambda, cd = (l < 0 ? -1 : 1) * sqrt(l * l / (16 - 12 * l * l));
    for (int r = 0; r < M; r++) {
        double c = w.dense_row[r] ? cd : 0.5;
        for (int k = 0; k < D; k++)
            X[(size_t)r * D + k] =
                sp_float_to_bf16(k == 0 ? 1.0f : (float)(c + (double)(sp_rng_next(rng) >> 11) * 0x1p-53 - 0.5));
    }
    for (int j = 0; j < F; j++) {
        int dead = w.z[j] <= DEAD_Z;
        double u = dead ? 0.0 : w.z[j] * (sqrt((double)D) / 3.0) / (D / 2.0);
        for (int k = 0; k < D; k++) {
            double n = (double)(sp_rng_next(rng) >> 11) * 0x1p-52 - 1.0;
            Wg[(size_t)j * D + k] = sp_float_to_bf16(k == 0 && dead ? DEAD_BIAS : (float)(u + n));
        }
    }
    sp_twell_draw_free(&w);
    return SPTUNE_OK;
}

/* What the tuner's TwELL data generators make, on the CPU machine (bench/experiments/twell-data-stats.sh builds and runs it):
 * relu(X Wg^T) of the producer data the harness draws for a twell-ffn problem, over S tokens spread across the batch.
 * Prints the mean count per token, its p50/p90/p99/max, the neurons that never fired, and the share of all firings in
 * the eighth and the quarter of the neurons that fire most (what hot=1 and hot=2 run as a dense slice), beside what
 * the rates the problem asks for promise that eighth, and the tokens (and their share of the firings) at or above
 * each of several counts (what a dense path taking such tokens would take: twell-ffn's route).
 *   twell-data-stats PROBLEM [TOKENS]       e.g. "M=16384,D=2048,F=5632,nnz=40,dense=0,gen=1,spread=0.1" 400 */
#include "sp_bench.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_twell_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int by_count_desc(const void *a, const void *b)
{
    const long x = *(const long *)a, y = *(const long *)b;
    return (x < y) - (x > y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROBLEM [TOKENS]   (a twell-ffn problem, e.g. M=16384,D=2048,F=5632,nnz=40,gen=1)\n",
                argv[0]);
        return 2;
    }
    const int S = argc > 2 ? atoi(argv[2]) : 400;
    sp_template *t = NULL;
    sp_problem p;
    sp_twell_dist d;
    if (sp_template_load("twell-ffn", &t) != SPTUNE_OK || sp_problem_parse(t, argv[1], &p) != SPTUNE_OK) {
        fprintf(stderr, "%s\n", sptune_last_error());
        return 2;
    }
    double m = 0, dd = 0, f = 0;
    sp_problem_get(&p, "M", &m);
    sp_problem_get(&p, "D", &dd);
    sp_problem_get(&p, "F", &f);
    const int M = (int)m, D = (int)dd, F = (int)f;
    if (S < 1 || S > M || sp_twell_dist_get(&p, F, &d) != SPTUNE_OK) {
        fprintf(stderr, "%s\n", S < 1 || S > M ? "TOKENS: 1 to the problem's M" : sptune_last_error());
        return 2;
    }
    unsigned short *X = malloc((size_t)M * D * 2), *W = malloc((size_t)F * D * 2);
    float *w = malloc((size_t)F * D * sizeof *w), *x = malloc((size_t)D * sizeof *x);
    double *count = malloc((size_t)S * sizeof *count), promised = 0, total_rate = 0;
    long *fired = calloc((size_t)F, sizeof *fired);
    uint64_t rng = 12345, again = 12345;
    sp_twell_draw draw;
    if (!X || !W || !w || !x || !count || !fired || sp_twell_producer_data(&rng, M, D, F, &d, X, W) != SPTUNE_OK ||
        sp_twell_draw_init(&again, M, F, &d, &draw) != SPTUNE_OK) {
        fprintf(stderr, "%s\n", sptune_last_error()[0] ? sptune_last_error() : "out of memory");
        return 1;
    }
    for (size_t i = 0; i < (size_t)F * D; i++) w[i] = sp_bf16_to_float(W[i]);
    double sum = 0;
    for (int s = 0; s < S; s++) {
        const size_t r = (size_t)s * (size_t)M / (size_t)S;
        for (int k = 0; k < D; k++) x[k] = sp_bf16_to_float(X[r * D + k]);
        int c = 0;
        for (int j = 0; j < F; j++) {
            float acc = 0;
            for (int k = 0; k < D; k++) acc += x[k] * w[(size_t)j * D + k];
            if (acc > 0) { c++; fired[j]++; }
        }
        count[s] = c;
        sum += c;
    }
    qsort(count, (size_t)S, sizeof *count, by_value);
    long all = 0, never = 0, top8 = 0, top4 = 0;
    for (int j = 0; j < F; j++) { all += fired[j]; never += fired[j] == 0; }
    qsort(fired, (size_t)F, sizeof *fired, by_count_desc);
    for (int j = 0; j < F / 4; j++) { top4 += fired[j]; if (j < F / 8) top8 += fired[j]; }
    /* what the rates promise the most frequent eighth (ordinary tokens) */
    qsort(draw.prob, (size_t)F, sizeof *draw.prob, by_value);
    for (int j = 0; j < F; j++) { total_rate += draw.prob[j]; if (j >= F - F / 8) promised += draw.prob[j]; }
    printf("%s, %d tokens: mean %.1f per token, p50 %.0f p90 %.0f p99 %.0f max %.0f; %ld of %d neurons never fired; "
           "top F/8 %.1f %% of the firings (the rates promise %.1f %%), top F/4 %.1f %%; %.1f per token outside F/8\n",
           argv[1], S, sum / S, count[S / 2], count[S * 9 / 10], count[S * 99 / 100], count[S - 1], never, F,
           all ? 100.0 * top8 / all : 0, total_rate > 0 ? 100.0 * promised / total_rate : 0, all ? 100.0 * top4 / all : 0,
           (double)(all - top8) / S);
    /* what a dense path taking every token of R or more active neurons would take (twell-ffn's route) */
    const int routes[] = {64, 128, 192, 256, 512};
    printf("  tokens (entries) at or above route:");
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        double n = 0, e = 0;
        for (int s = 0; s < S; s++)
            if (count[s] >= routes[i]) { n++; e += count[s]; }
        printf(" %d: %.1f %% (%.1f %%)", routes[i], 100.0 * n / S, sum > 0 ? 100.0 * e / sum : 0);
    }
    printf("\n");
    sp_twell_draw_free(&draw);
    free(X); free(W); free(w); free(x); free(count); free(fired);
    sp_template_free(t);
    return 0;
}

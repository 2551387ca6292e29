/* Activations shaped like those of trained ReLU FFNs, for the TwELL harnesses, tests and benches.
 *
 * Real layers are far from uniform: a share of the neurons never fire ("dead"), the firing rates
 * of the others are heavy-tailed (a few fire for most tokens, most fire rarely), and a few
 * tokens (the first ones, attention sinks, delimiters) activate thousands of neurons. The
 * problem's dimensions say how (all optional, realistic by default; templates/lib/twell_dist.lua
 * declares them):
 *   nnz        mean nonzeros per token over the whole batch, dense tokens included
 *   dead       percent of neurons that never fire (30)
 *   tail       exponent a of the firing rates, rate ~ rank^-a (0.7; 0: every live neuron alike)
 *   dense      percent of tokens that are dense (0.5; at least one token when > 0)
 *   dense_nnz  mean nonzeros of a dense token (2000, at most the live neurons' share of F)
 *   at         where dense tokens sit: 0 the first tokens, 1 scattered, 2 token 0 and the rest
 *              scattered (2)
 * dense=0 and tail=0 give the uniform data of the first benchmarks. The ops that take X and Wg also say how
 * their data is made (gen: 0 each neuron fires at its rate, independently, 1 the layer makes it: Gaussian tokens
 * of per-token gains, log-normal with sigma `spread`, through weights whose biases set the rates; absent: 0).
 * Measured (bench/experiments/twell-data-stats.sh, docs/journal): gen 0's producer data does not keep the rates' tail:
 * each neuron's fixed noise row times the tokens' mean input shifts its bias, so at d=2048, d_ff=5632 and 40 per
 * token about a tenth of the neurons take every firing (the rates give the top eighth 55 %); gen 1 keeps it (57 %),
 * and its spread sets how unlike one another the tokens are (0.1: per-token counts p50 36, p99 128 at a mean of 42;
 * 0.5: p50 6, p99 745).
 * Results of both are kept and the lookup serves the best worst case over them (templates' `across`). */
#ifndef SP_TWELL_DIST_H
#define SP_TWELL_DIST_H

#include "sp_template.h"
#include "sptune.h"

#include <stdint.h>

typedef struct sp_twell_dist {
    double nnz, dead, tail, dense, dense_nnz;
    int at;
    int gen;          /* 0: rates drawn per neuron; 1: made by the layer (sp_twell_producer_data) */
    double spread;    /* gen 1: sigma of the ordinary tokens' log-gain */
} sp_twell_dist;

/* Reads and checks the distribution's dimensions of problem p (F: the layer's neurons). */
sptune_status sp_twell_dist_get(const sp_problem *p, int F, sp_twell_dist *d);

/* The per-token picture a generator follows: for neuron j, prob[j] (ordinary tokens) and
 * dense_prob[j] (dense tokens) of firing, and z[j] = the normal quantile of prob[j]; which tokens
 * are dense (dense_row[r] != 0); lambda: the scale of z that gives a dense token dense_nnz. */
typedef struct sp_twell_draw {
    int M, F;
    double *prob, *dense_prob, *z;
    unsigned char *dense_row;
    int ndense;
    double lambda;
} sp_twell_draw;
sptune_status sp_twell_draw_init(uint64_t *rng, int M, int F, const sp_twell_dist *d, sp_twell_draw *w);
void sp_twell_draw_free(sp_twell_draw *w);

/* Gate activations G (M x F bf16, nonzeros in (0, 1]) drawn from the distribution. */
sptune_status sp_twell_gate_data(uint64_t *rng, int M, int F, const sp_twell_dist *d, unsigned short *G);
/* Producer inputs X (M x D) and Wg (F x D) such that relu(X Wg^T) follows the distribution. gen 0: neuron
 * j's weights are a bias u_j plus uniform noise, token rows uniform in [0, 1) (dense tokens: shifted
 * so that the same biases fire more neurons). gen 1: x = (1, g z), z ~ N(0, I), the gain g log-normal for
 * ordinary tokens (a mean count of nnz over the batch) and large for dense ones (dense_nnz, at most about half
 * the live neurons); Wg[j] = (b_j, w_j), w_j ~ N(0, I / (D - 1)), so that neuron j fires with Phi(b_j / g); dead
 * neurons' bias far below any gain's reach. */
sptune_status sp_twell_producer_data(uint64_t *rng, int M, int D, int F, const sp_twell_dist *d, unsigned short *X,
                                     unsigned short *Wg);

#endif

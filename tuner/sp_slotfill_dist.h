/* Weights shaped like pruned LLM weights, for the slotfill-spmm harness, tests and benches.
 * The problem dimension dist says how W (M x K, a share `sparsity` of it zero) is drawn:
 *   0  uniform: each element kept with probability 1 - sparsity, values N(0, 1);
 *   1  magnitude-pruned (the default of the benchmarks): W = N(0, 1) scaled per row (log-normal,
 *      sigma 0.3) and per input column (log-normal, sigma 0.6: outlier channels), the smallest
 *      magnitudes of the whole matrix removed: rows and columns end up unevenly dense;
 *   2  per-row (as Wanda and SparseGPT prune): every row keeps exactly its share, chosen by
 *      |w| times its column's scale;
 *   3  exactly 2:4 (two of every four, sparsity ignored): only the Sparse-TC layer is used;
 *   4  the hard cases together: every 7th row 90 % dense, every 11th empty, one column dense, the
 *      rest uniform (the residual overflows what a stage holds; the tests use it).
 * runtime/sp_slotfill_profile.c tells them apart again from an encoding (sptune_slotfill_problem). */
#ifndef SP_SLOTFILL_DIST_H
#define SP_SLOTFILL_DIST_H

#include "sptune.h"
#include "sp_rng.h"
#include "sp_tensor_file.h"
#include <stdint.h>

/* W (M x K, row-major 16-bit floats: fp16 when f16, else bf16) drawn as dist says; fails only on memory. */
sptune_status sp_slotfill_draw(uint64_t *rng, int M, int K, double sparsity, int dist, int f16, unsigned short *W);

/* The user's pruned weights (--data): the tensor `names` calls w (default "weight"), checked against rows x cols
 * and format where those are given (0, SP_TENSOR_UNKNOWN: any). */
sptune_status sp_slotfill_read_weights(const char *path, const char *names, long long rows, long long cols,
                                       sp_tensor_format format, sp_tensor *out);

#endif

/* TwELL: activation-sparse rows packed tile by tile, exactly (nothing dropped, nothing wrapped).
 *
 * An activation matrix H (M rows x F columns, bf16, mostly zeros: relu outputs) is cut into
 * column tiles of width T (the producer GEMM's output tile). For each (row, tile) the packed
 * array holds W = S + 1 32-bit words (S = slots per tile):
 *
 *   word 0      count of nonzeros n (bit 31 clear) when n <= S, then words 1..n hold them;
 *               or 0x80000000 | p (p < 2^30) when n > S: the tile overflowed, and its entries
 *               live in the overflow pool at word p: pool[p] = n, pool[p+1 .. p+n] the entries;
 *               or 0xC0000000 (SP_TWELL_LOST): the tile overflowed and the pool had no room: its
 *               entries are not stored anywhere (twell-ffn recomputes such tiles from X and Wg).
 *   entry       (bf16 bits << 16) | column index within the tile (0 .. T-1), columns ascending.
 *
 * Words of unused slots are unspecified. The overflow pool is a flat word array with a
 * capacity; the producer takes space in it with an atomic counter. If the pool is too small the
 * tiles that found no room are marked lost and the counter still counts what was asked for, so
 * the caller sees `needed > capacity`; twell-ffn stays exact by recomputing lost tiles, while a
 * caller of the producer alone reruns it with a larger pool. A nonzero is an activation whose
 * bf16 value is not +0 or -0.
 *
 * Layout: packed[(row * ntiles + tile) * W + w], ntiles = ceil(F / T); the last tile of a row
 * may be partial (columns >= F never appear). Limits: T in [2, 65536], S in [1, T]. */
#ifndef SP_TWELL_H
#define SP_TWELL_H

#include "sptune.h"
#include <stddef.h>
#include <stdint.h>

#define SP_TWELL_OVERFLOW 0x80000000u
#define SP_TWELL_LOST 0xC0000000u
#define SP_TWELL_MAX_POOL 0x40000000u   /* pool words addressable (offsets have 30 bits) */

typedef struct sp_twell_shape {
    int64_t rows;   /* M */
    int64_t cols;   /* F (d_ff) */
    int tile;       /* T */
    int slots;      /* S */
} sp_twell_shape;

/* Checks the shape; ntiles and words per (row, tile) derived. */
sptune_status sp_twell_check_shape(const sp_twell_shape *s);
int64_t sp_twell_ntiles(const sp_twell_shape *s);
int64_t sp_twell_packed_words(const sp_twell_shape *s); /* rows * ntiles * (S + 1) */

typedef struct sp_twell_stats {
    int64_t nonzeros;          /* total */
    int64_t overflow_tiles;    /* (row, tile) pairs with more than S nonzeros */
    int64_t pool_needed;       /* words the overflow pool needs for this matrix */
    int max_row_nonzeros;      /* heaviest row */
} sp_twell_stats;

/* Reference packer (CPU): h is M x F row-major bf16 bits. packed has packed_words entries; pool
 * has pool_capacity words (may be 0/NULL). Fills stats. Returns SPTUNE_ERR_INVALID for a bad
 * shape and SPTUNE_ERR_NOMEM-free: when the pool is too small it returns SPTUNE_OK with
 * stats->pool_needed > pool_capacity and the packed array NOT usable (the caller retries). */
sptune_status sp_twell_pack(const sp_twell_shape *s, const uint16_t *h, uint32_t *packed, uint32_t *pool,
                            int64_t pool_capacity, sp_twell_stats *stats);

/* Reference unpacker: packed (+ pool) -> dense M x F bf16 bits (zeros elsewhere). Validates every
 * word (counts, pool offsets, column order and range) and returns SPTUNE_ERR_INVALID naming the
 * first bad (row, tile) instead of reading out of bounds: packed data may come from a faulty
 * kernel under test. */
sptune_status sp_twell_unpack(const sp_twell_shape *s, const uint32_t *packed, const uint32_t *pool,
                              int64_t pool_words, uint16_t *h);

/* An active (positive) gate value of 16-bit bits: the sign clear and not zero (bf16 and fp16 alike). */
static inline int sp_gate_active(uint16_t v) { return !(v & 0x8000u) && (v & 0x7fffu); }

#endif

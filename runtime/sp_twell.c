#include "sp_twell.h"
#include "sp_status.h"

#include <inttypes.h>
#include <string.h>

sptune_status sp_twell_check_shape(const sp_twell_shape *s)
{
    if (!s) return sp_fail(SPTUNE_ERR_INVALID, "TwELL: no shape");
    if (s->rows < 0 || s->cols < 1)
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL: bad matrix %" PRId64 " x %" PRId64, s->rows, s->cols);
    if (s->tile < 2 || s->tile > 65536)
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL: tile width %d outside [2, 65536]", s->tile);
    if (s->slots < 1 || s->slots > s->tile)
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL: %d slots per tile outside [1, %d]", s->slots, s->tile);
    int64_t ntiles = sp_twell_ntiles(s);
    if (s->rows > 0 && ntiles > INT64_MAX / s->rows / (s->slots + 1))
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL: %" PRId64 " x %" PRId64 " is too large", s->rows, s->cols);
    return SPTUNE_OK;
}

int64_t sp_twell_ntiles(const sp_twell_shape *s) { return (s->cols + s->tile - 1) / s->tile; }

int64_t sp_twell_packed_words(const sp_twell_shape *s)
{
    return s->rows * sp_twell_ntiles(s) * (s->slots + 1);
}

/* bf16 +0 and -0 are zeros; everything else (NaN included) is an entry. */
static int nonzero(uint16_t v) { return (v & 0x7fffu) != 0; }

sptune_status sp_twell_pack(const sp_twell_shape *s, const uint16_t *h, uint32_t *packed, uint32_t *pool,
                            int64_t pool_capacity, sp_twell_stats *stats)
{
    sptune_status st = sp_twell_check_shape(s);
    if (st != SPTUNE_OK) return st;
    if (!h || !packed || !stats || pool_capacity < 0 || (pool_capacity > 0 && !pool))
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL pack: missing buffer");
    const int64_t ntiles = sp_twell_ntiles(s), W = s->slots + 1;
    memset(stats, 0, sizeof *stats);
    for (int64_t r = 0; r < s->rows; r++) {
        const uint16_t *row = h + r * s->cols;
        int row_nz = 0;
        for (int64_t t = 0; t < ntiles; t++) {
            const int64_t c0 = t * s->tile;
            const int width = (int)(s->cols - c0 < s->tile ? s->cols - c0 : s->tile);
            uint32_t *w = packed + (r * ntiles + t) * W;
            int n = 0;
            for (int j = 0; j < width; j++) n += nonzero(row[c0 + j]);
            row_nz += n;
            stats->nonzeros += n;
            uint32_t *dst = w + 1;
            if (n > s->slots) {
                const int64_t at = stats->pool_needed; /* pool words before this tile */
                stats->overflow_tiles++;
                stats->pool_needed += n + 1;
                if (at + n + 1 > pool_capacity || at + n + 1 > (int64_t)SP_TWELL_MAX_POOL) {
                    w[0] = SP_TWELL_LOST; /* counted, not written */
                    continue;
                }
                w[0] = SP_TWELL_OVERFLOW | (uint32_t)at;
                pool[at] = (uint32_t)n;
                dst = pool + at + 1;
            } else {
                w[0] = (uint32_t)n;
            }
            for (int j = 0, k = 0; j < width; j++)
                if (nonzero(row[c0 + j])) dst[k++] = (uint32_t)row[c0 + j] << 16 | (uint32_t)j;
        }
        if (row_nz > stats->max_row_nonzeros) stats->max_row_nonzeros = row_nz;
    }
    return SPTUNE_OK;
}

sptune_status sp_twell_unpack(const sp_twell_shape *s, const uint32_t *packed, const uint32_t *pool,
                              int64_t pool_words, uint16_t *h)
{
    sptune_status st = sp_twell_check_shape(s);
    if (st != SPTUNE_OK) return st;
    if (!packed || !h || pool_words < 0 || (pool_words > 0 && !pool))
        return sp_fail(SPTUNE_ERR_INVALID, "TwELL unpack: missing buffer");
    const int64_t ntiles = sp_twell_ntiles(s), W = s->slots + 1;
    memset(h, 0, (size_t)(s->rows * s->cols) * sizeof *h);
    for (int64_t r = 0; r < s->rows; r++) {
        for (int64_t t = 0; t < ntiles; t++) {
            const int64_t c0 = t * s->tile;
            const int width = (int)(s->cols - c0 < s->tile ? s->cols - c0 : s->tile);
            const uint32_t *w = packed + (r * ntiles + t) * W;
            const uint32_t *e = w + 1;
            int64_t n = w[0];
            if ((w[0] & SP_TWELL_LOST) == SP_TWELL_LOST)
                return sp_fail(SPTUNE_ERR_INVALID, "TwELL: row %" PRId64 " tile %" PRId64 ": entries lost (the overflow"
                               " pool was too small when it was packed)", r, t);
            if (w[0] & SP_TWELL_OVERFLOW) {
                int64_t p = w[0] & ~SP_TWELL_OVERFLOW;
                if (p >= pool_words)
                    return sp_fail(SPTUNE_ERR_INVALID, "TwELL: row %" PRId64 " tile %" PRId64 ": pool offset %" PRId64
                                   " outside the pool (%" PRId64 " words)", r, t, p, pool_words);
                n = pool[p];
                if (n <= s->slots || n > width || p + 1 + n > pool_words)
                    return sp_fail(SPTUNE_ERR_INVALID, "TwELL: row %" PRId64 " tile %" PRId64 ": bad overflow count %" PRId64,
                                   r, t, n);
                e = pool + p + 1;
            } else if (n > s->slots) {
                return sp_fail(SPTUNE_ERR_INVALID, "TwELL: row %" PRId64 " tile %" PRId64 ": count %" PRId64
                               " exceeds %d slots", r, t, n, s->slots);
            }
            int last = -1;
            for (int64_t k = 0; k < n; k++) {
                int col = (int)(e[k] & 0xffffu);
                uint16_t v = (uint16_t)(e[k] >> 16);
                if (col <= last || col >= width || !nonzero(v))
                    return sp_fail(SPTUNE_ERR_INVALID, "TwELL: row %" PRId64 " tile %" PRId64 ": entry %" PRId64
                                   " (column %d) out of order, out of range or zero", r, t, k, col);
                last = col;
                h[r * s->cols + c0 + col] = v;
            }
        }
    }
    return SPTUNE_OK;
}

/* The bitmap layout of Slot-Filling images (sp_slotfill.h): per 16 x 128 block a header of step offsets,
 * a bit per element in the order of the mma.m16n8k16 A fragments that slotfill-spmm decodes them into,
 * and the values; an encoder, a decoder that checks every field, and the byte counts. */
#include "sp_slotfill_internal.h"
#include "sp_status.h"

#include <stdlib.h>
#include <string.h>

#define STEPS 8 /* 16-column steps of a 128-column block */

/* Element (row, column) of the 16 x 16 step that bit (register r, half h) of lane l stands for. */
static void bit_position(int l, int r, int h, int *row, int *col)
{
    *row = (l >> 2) + 8 * (r & 1);
    *col = 2 * (l & 3) + 8 * (r >> 1) + h;
}

/* Bytes of a block with nnz values: header, bitmap, values, padded to 16. */
static size_t block_bytes(long long nnz) { return ((size_t)(SP_SF_BM_HEADER + SP_SF_BM_MASKS + 2 * nnz) + 15) & ~(size_t)15; }

sptune_status sp_sf_encode_bitmap(const uint16_t *w, long long ld, sp_slotfill *out)
{
    const long long M = out->M, K = out->K;
    const long long nblk = out->tiles * out->chunks;
    /* first pass: each block's values (its size), so that the image is allocated once */
    uint32_t *units = malloc((size_t)(nblk + 1) * sizeof *units);
    if (!units) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory encoding a %lld x %lld matrix", M, K);
    unsigned long long total = 0;
    for (long long i = 0; i < out->tiles; i++)
        for (long long c = 0; c < out->chunks; c++) {
            long long nnz = 0;
            const long long r1 = 16 * i + 16 < M ? 16 * i + 16 : M, k0 = c * 128, k1 = k0 + 128 < K ? k0 + 128 : K;
            for (long long r = 16 * i; r < r1; r++)
                for (long long k = k0; k < k1; k++) nnz += sp_sf_kept(w[r * ld + k]);
            const long long bytes = (long long)block_bytes(nnz);
            units[i * out->chunks + c] = (uint32_t)total;
            total += (unsigned long long)bytes / 16;
            out->stats.nonzeros += nnz;
            if (bytes > out->stats.max_chunk_extras) out->stats.max_chunk_extras = bytes;
            if (total > 0xffffffffull) {
                free(units);
                return sp_fail(SPTUNE_ERR_UNSUPPORTED, "Slot-Filling: a %lld x %lld matrix past 64 GiB", M, K);
            }
        }
    units[nblk] = (uint32_t)total;
    sp_sf_sections(out, total);
    out->image = calloc(1, out->size);
    if (!out->image) {
        free(units);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory for a %zu-byte Slot-Filling image", out->size);
    }
    memcpy(out->image + out->xoff_off, units, (size_t)(nblk + 1) * 4);
    /* a step's 256 elements in the order their values are stored: their offset in W from the step's
     * corner and their bit (word 2 l + s / 4, bit 8 r + 2 (s % 4) + h, s % 4 added per step) */
    long long at[256];
    unsigned char word[256], bit[256], rowt[256], colt[256];
    for (int l = 0, e = 0; l < 32; l++)
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < 2; h++, e++) {
                int row, col;
                bit_position(l, r, h, &row, &col);
                at[e] = row * ld + col;
                rowt[e] = (unsigned char)row;
                colt[e] = (unsigned char)col;
                word[e] = (unsigned char)(2 * l);
                bit[e] = (unsigned char)(8 * r + h);
            }
    for (long long i = 0; i < out->tiles; i++)
        for (long long c = 0; c < out->chunks; c++) {
            unsigned char *blk = out->image + out->extra_off + (size_t)units[i * out->chunks + c] * 16;
            uint16_t *hdr = (uint16_t *)blk, *vals = (uint16_t *)(blk + SP_SF_BM_HEADER + SP_SF_BM_MASKS);
            uint32_t *mask = (uint32_t *)(blk + SP_SF_BM_HEADER);
            const int inside = 16 * i + 16 <= M && c * 128 + 128 <= K; /* no tail: the tables alone */
            size_t n = 0;
            for (int s = 0; s < STEPS; s++) {
                hdr[s] = (uint16_t)(2 * n);
                const uint16_t *corner = w + 16 * i * ld + c * 128 + 16 * s;
                const int wsel = s >> 2, sbit = 2 * (s & 3);
                for (int e = 0; e < 256; e++) {
                    uint16_t v;
                    if (inside) {
                        v = corner[at[e]];
                    } else {
                        const long long gr = 16 * i + rowt[e], gk = c * 128 + 16 * s + colt[e];
                        v = gr < M && gk < K ? w[gr * ld + gk] : 0;
                    }
                    if (!sp_sf_kept(v)) continue;
                    mask[word[e] + wsel] |= 1u << (bit[e] + sbit);
                    vals[n++] = v;
                }
            }
        }
    free(units);
    out->stats.tc = out->stats.nonzeros;
    sp_sf_bitmap_stats(out);
    sp_sf_write_header(out);
    return SPTUNE_OK;
}

sptune_status sp_sf_walk_bitmap(const sp_slotfill *m, sp_sf_visit visit, void *ud)
{
    const uint32_t *xoff = (const uint32_t *)(m->image + m->xoff_off);
    const unsigned long long xunits = (m->extra_bytes - 16) / 16;
    for (long long i = 0; i < m->tiles; i++)
        for (long long c = 0; c < m->chunks; c++) {
            const uint32_t u0 = xoff[i * m->chunks + c], u1 = xoff[i * m->chunks + c + 1];
            if (u0 > u1 || u1 > xunits || (u1 - u0) * 16ull < SP_SF_BM_HEADER + SP_SF_BM_MASKS || (u1 - u0) * 16ull > SP_SF_BM_MAX + 15)
                return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: block [%u, %u) outside the image or "
                               "not a block's size", i, c, u0, u1);
            const unsigned char *blk = m->image + m->extra_off + (size_t)u0 * 16;
            const uint16_t *hdr = (const uint16_t *)blk, *vals = (const uint16_t *)(blk + SP_SF_BM_HEADER + SP_SF_BM_MASKS);
            const uint32_t *mask = (const uint32_t *)(blk + SP_SF_BM_HEADER);
            long long n = 0;
            for (int s = 0; s < STEPS; s++)
                for (int l = 0; l < 32; l++) n += __builtin_popcount((mask[2 * l + (s >> 2)] >> (2 * (s & 3))) & 0x03030303u);
            if (block_bytes(n) != (size_t)(u1 - u0) * 16)
                return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: %lld values do not fill a block of %u "
                               "bytes", i, c, n, (u1 - u0) * 16);
            n = 0;
            for (int s = 0; s < STEPS; s++) {
                if (hdr[s] != 2 * n)
                    return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: step %d's values at byte %u, "
                                   "the bitmap puts them at %lld", i, c, s, hdr[s], 2 * n);
                for (int l = 0; l < 32; l++)
                    for (int r = 0; r < 4; r++)
                        for (int h = 0; h < 2; h++) {
                            if (!(mask[2 * l + (s >> 2)] >> (8 * r + 2 * (s & 3) + h) & 1)) continue;
                            int row, col;
                            bit_position(l, r, h, &row, &col);
                            const long long gr = 16 * i + row, gk = c * 128 + 16 * s + col;
                            const uint16_t v = vals[n++];
                            if (gr >= m->M || gk >= m->K || v == 0)
                                return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: a value at row %lld, "
                                               "column %lld is outside the matrix or zero", i, c, gr, gk);
                            visit(ud, gr, gk, v);
                        }
            }
        }
    return SPTUNE_OK;
}

typedef struct dense_out { uint16_t *w; long long ld; } dense_out;

static void put(void *ud, long long row, long long col, uint16_t v)
{
    dense_out *d = ud;
    d->w[row * d->ld + col] = v;
}

sptune_status sp_sf_decode_bitmap(const sp_slotfill *m, uint16_t *w, long long ld)
{
    for (long long r = 0; r < m->M; r++) memset(w + r * ld, 0, (size_t)m->K * 2);
    dense_out d = {w, ld};
    return sp_sf_walk_bitmap(m, put, &d);
}

void sp_sf_bitmap_stats(sp_slotfill *m)
{
    sp_sf_stats *s = &m->stats;
    const long long blocks = m->tiles * m->chunks;
    s->filled = s->residual = 0;
    s->bytes_tc = 2 * s->nonzeros;
    s->bytes_fill = 0;
    s->bytes_index = (long long)m->xoff_bytes + blocks * (SP_SF_BM_HEADER + SP_SF_BM_MASKS);
    s->bytes_residual = (long long)m->extra_bytes - 16 - blocks * (SP_SF_BM_HEADER + SP_SF_BM_MASKS) - s->bytes_tc; /* padding */
    s->bytes_dense = m->M * m->K * 2;
}

/* Slot-Filling encoder, decoder and file image (the format: sp_slotfill.h); the bitmap layout's own
 * encoder and decoder are in sp_slotfill_bitmap.c. */
#include "sp_slotfill.h"
#include "sp_slotfill_internal.h"
#include "sp_file.h"
#include "sp_hash.h"
#include "sp_status.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- header ------------------------------------------------------------------------------------- */

/* Little-endian fields of the 256-byte header. */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_HEADER = 12, H_DTYPE = 16, H_WINDOW = 20, H_DBITS = 24, H_FILL = 28,
    H_M = 32, H_K = 40, H_REC = 48, H_XOFF = 56, H_EXTRA = 64,
    H_NNZ = 72, H_TC = 80, H_FILLED = 88, H_RESID = 96, H_MAXX = 104, H_SUM = 112, H_LAYOUT = 144, H_END = 148
};

static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static uint32_t get32(const unsigned char *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

sptune_status sp_sf_params_check(const sp_sf_params *p)
{
    if (!p) return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: no encoding parameters");
    if (p->window != 64 && p->window != 128 && p->window != 256)
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: window %d (64, 128 or 256)", p->window);
    int lg = p->window == 64 ? 6 : p->window == 128 ? 7 : 8;
    if (p->dbits < 3 || p->dbits > lg + 1)
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: dbits %d (3 to %d for a window of %d)", p->dbits, lg + 1,
                       p->window);
    if (p->fill != 0 && p->fill != 1) return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: fill %d (0 or 1)", p->fill);
    if (p->layout != SP_SF_MASK && p->layout != SP_SF_LIST && p->layout != SP_SF_BITMAP && p->layout != SP_SF_SP24)
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: layout %d (0 mask, 1 list, 2 bitmap, 3 sp24)", p->layout);
    if (p->layout == SP_SF_SP24 && (p->window != 64 || p->dbits != sp_sf_list_dbits(64) || p->fill != 0))
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: the sp24 layout takes window 64, dbits %d and fill 0 (got %d, %d, "
                       "%d)", sp_sf_list_dbits(64), p->window, p->dbits, p->fill);
    if (p->layout == SP_SF_BITMAP && (p->window != 128 || p->dbits != 5 || p->fill != 0))
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: the bitmap layout takes window 128, dbits 5 and fill 0 (got %d, %d, "
                       "%d)", p->window, p->dbits, p->fill);
    if (p->layout == SP_SF_LIST && p->dbits != sp_sf_list_dbits(p->window))
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: a list layout with a window of %d takes dbits %d (a 16-bit entry "
                       "holds the slot and the distance)", p->window, sp_sf_list_dbits(p->window));
    return SPTUNE_OK;
}

/* Section offsets and sizes from the shape and the extras' length (16-byte units). */
void sp_sf_sections(sp_slotfill *m, unsigned long long extra_units)
{
    m->tiles = (m->M + 15) / 16;
    m->chunks = (m->K + m->params.window - 1) / m->params.window;
    m->rec_bytes = (size_t)(m->tiles * m->chunks) * sp_sf_record_bytes(&m->params);
    m->xoff_bytes = (size_t)(m->tiles * m->chunks + 1) * 4;
    m->extra_bytes = (size_t)extra_units * 16 + 16;
    m->rec_off = SP_SF_HEADER;
    m->xoff_off = m->rec_off + align256(m->rec_bytes);
    m->extra_off = m->xoff_off + align256(m->xoff_bytes);
    m->size = m->extra_off + align256(m->extra_bytes);
}

void sp_sf_write_header(sp_slotfill *m)
{
    unsigned char *h = m->image;
    memset(h, 0, SP_SF_HEADER);
    memcpy(h + H_MAGIC, SP_SF_MAGIC, 8);
    put32(h + H_VERSION, SP_SF_VERSION);
    put32(h + H_HEADER, SP_SF_HEADER);
    put32(h + H_DTYPE, (uint32_t)m->dtype);
    put32(h + H_WINDOW, (uint32_t)m->params.window);
    put32(h + H_DBITS, (uint32_t)m->params.dbits);
    put32(h + H_FILL, (uint32_t)m->params.fill);
    put32(h + H_LAYOUT, (uint32_t)m->params.layout);
    put64(h + H_M, (uint64_t)m->M);
    put64(h + H_K, (uint64_t)m->K);
    put64(h + H_REC, m->rec_bytes);
    put64(h + H_XOFF, m->xoff_bytes);
    put64(h + H_EXTRA, m->extra_bytes);
    put64(h + H_NNZ, (uint64_t)m->stats.nonzeros);
    put64(h + H_TC, (uint64_t)m->stats.tc);
    put64(h + H_FILLED, (uint64_t)m->stats.filled);
    put64(h + H_RESID, (uint64_t)m->stats.residual);
    put64(h + H_MAXX, (uint64_t)m->stats.max_chunk_extras);
    sp_sf_seal(m->image, m->size);
}

void sp_sf_seal(unsigned char *image, size_t size)
{
    put64(image + H_SUM, sp_checksum64(image + SP_SF_HEADER, size - SP_SF_HEADER));
}

/* The per-layer byte counts, from the shape and the extras (also for images read back). */
static void byte_stats(sp_slotfill *m)
{
    if (m->params.layout == SP_SF_BITMAP) {
        sp_sf_bitmap_stats(m);
        return;
    }
    sp_sf_stats *s = &m->stats;
    long long recs = m->tiles * m->chunks, w = m->params.window;
    s->bytes_tc = recs * 18 * w;
    s->bytes_index = (long long)m->xoff_bytes;
    s->bytes_dense = m->M * m->K * 2;
    /* masks and distances (or list entries and their counts); the rest of the extras is residual
     * words and padding */
    const int list = m->params.layout != SP_SF_MASK;
    long long dist = list ? s->filled * 2 + recs * 4 : (s->filled * m->params.dbits + 7) / 8;
    s->bytes_fill = (list ? 0 : recs * w) + dist;
    s->bytes_residual = (long long)m->extra_bytes - dist;
}

/* ---- encoder ------------------------------------------------------------------------------------ */

/* One row of one chunk, as the encoder lays it out before the record is assembled. */
typedef struct row_chunk {
    uint16_t *val;      /* window / 2 slots: the value in each slot (0 when empty) */
    uint8_t *idx;       /* per slot: its 2-bit column index in the group */
    uint8_t *filler;    /* per slot: 1 when it holds an overflow nonzero */
    uint16_t *dist;     /* per slot: the filler's encoded distance */
    uint32_t *resid;    /* residual words of this row (value << 16 | row << 8 | column) */
    int nresid;
    /* scratch */
    int *ovf_col;       /* overflow columns (within the chunk) */
    uint16_t *ovf_val;
    int *free_slot;     /* free slots, in column order */
    int nfilled;        /* slots filled */
} row_chunk;

/* What a group of 4 with nonzero pattern nz (bit e: column e) keeps in its two slots: the column
 * indices i0 < i1 of the slots (a free slot points at a column that is zero in W), which slots
 * hold a kept value, and the columns that overflow (the 3rd and 4th nonzero). */
typedef struct group_pattern {
    uint8_t i0, i1, kept0, kept1, novf, ovf[2], nonzeros;
} group_pattern;
static group_pattern patterns[16];

static void init_patterns(void)
{
    for (unsigned nz = 0; nz < 16; nz++) {
        group_pattern *g = &patterns[nz];
        int kept[2], nk = 0;
        memset(g, 0, sizeof *g);
        for (int e = 0; e < 4; e++) {
            if (!(nz >> e & 1)) continue;
            if (nk < 2) kept[nk++] = e;
            else g->ovf[g->novf++] = (uint8_t)e;
        }
        int z = 0;
        while (nz >> z & 1) z++;
        int z2 = z + 1;
        while (nz >> z2 & 1) z2++;
        int i0 = nk == 2 ? kept[0] : nk == 1 ? (kept[0] < z ? kept[0] : z) : z;
        int i1 = nk == 2 ? kept[1] : nk == 1 ? (kept[0] < z ? z : kept[0]) : z2;
        g->i0 = (uint8_t)i0;
        g->i1 = (uint8_t)i1;
        g->kept0 = (uint8_t)(nz >> i0 & 1);
        g->kept1 = (uint8_t)(nz >> i1 & 1);
        g->nonzeros = (uint8_t)(nk + g->novf);
    }
}

/* Lays out row r (global row `row`, may be past M) of chunk c, filling slots from its overflows. */
static void encode_row_chunk(const uint16_t *w, long long M, long long K, long long ld, const sp_sf_params *p,
                             long long row, long long c, int r, row_chunk *rc, sp_sf_stats *st)
{
    const int W = p->window, G = W / 4, R = 1 << (p->dbits - 1);
    int novf = 0, nfree = 0;
    long long nnz = 0, tc = 0;
    rc->nresid = 0;
    rc->nfilled = 0;
    const uint16_t *src = row < M ? w + row * ld + c * W : NULL;
    const long long left = K - c * W; /* columns of this chunk inside W */
    for (int q = 0; q < G; q++) {
        uint16_t v[4] = {0, 0, 0, 0};
        if (src && 4 * q + 4 <= left) memcpy(v, src + 4 * q, 8);
        else if (src)
            for (int e = 0; e < 4 && 4 * q + e < left; e++) v[e] = src[4 * q + e];
        const unsigned nz = sp_sf_kept(v[0]) | sp_sf_kept(v[1]) << 1 | sp_sf_kept(v[2]) << 2 | sp_sf_kept(v[3]) << 3;
        const group_pattern *g = &patterns[nz];
        nnz += g->nonzeros;
        tc += g->kept0 + g->kept1;
        rc->idx[2 * q] = g->i0;
        rc->idx[2 * q + 1] = g->i1;
        rc->val[2 * q] = g->kept0 ? v[g->i0] : 0;
        rc->val[2 * q + 1] = g->kept1 ? v[g->i1] : 0;
        rc->filler[2 * q] = rc->filler[2 * q + 1] = 0;
        if (!g->kept0) rc->free_slot[nfree++] = 2 * q;
        if (!g->kept1) rc->free_slot[nfree++] = 2 * q + 1;
        for (int o = 0; o < g->novf; o++) {
            rc->ovf_col[novf] = 4 * q + g->ovf[o];
            rc->ovf_val[novf++] = v[g->ovf[o]];
        }
    }
    st->nonzeros += nnz;
    st->tc += tc;
    /* overflows in column order, each into the leftmost free slot within reach */
    int f = 0;
    for (int o = 0; o < novf; o++) {
        int kc = rc->ovf_col[o];
        if (p->fill)
            while (f < nfree && 4 * (rc->free_slot[f] / 2) <= kc - R) f++;
        /* within reach: kc - R < slot's column <= kc + R, so that the distance fits in dbits */
        if (p->fill && f < nfree && 4 * (rc->free_slot[f] / 2) <= kc + R) {
            int s = rc->free_slot[f++];
            rc->val[s] = rc->ovf_val[o];
            rc->filler[s] = 1;
            rc->dist[s] = (uint16_t)(kc - 4 * (s / 2) + R);
            rc->nfilled++;
            st->filled++;
        } else {
            rc->resid[rc->nresid++] = (uint32_t)rc->ovf_val[o] << 16 | (uint32_t)r << 8 | (uint32_t)kc;
            st->residual++;
        }
    }
}

/* Appends the dbits-bit field v at bit position *bit of words (zeroed beforehand). */
static void put_bits(uint32_t *words, long long *bit, unsigned v, int dbits)
{
    long long b = *bit;
    words[b >> 5] |= v << (b & 31);
    if ((b & 31) + dbits > 32) words[(b >> 5) + 1] |= v >> (32 - (b & 31));
    *bit = b + dbits;
}

sptune_status sp_sf_encode(const uint16_t *w, long long M, long long K, long long ld, sp_sf_dtype dtype,
                           const sp_sf_params *p, sp_slotfill *out)
{
    memset(out, 0, sizeof *out);
    sptune_status st = sp_sf_params_check(p);
    if (st != SPTUNE_OK) return st;
    if (M < 1 || K < 1 || ld < K || M > (1ll << 31) || K > (1ll << 31))
        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: bad shape %lld x %lld (row stride %lld)", M, K, ld);
    if (!w) return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: no matrix");
    if (dtype != SP_SF_BF16 && dtype != SP_SF_F16) return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: bad dtype %d", dtype);
    out->dtype = dtype;
    out->params = *p;
    out->M = M;
    out->K = K;
    sp_sf_sections(out, 0);
    if (p->layout == SP_SF_BITMAP) return sp_sf_encode_bitmap(w, ld, out);
    const int W = p->window, S = W / 2, steps = W / 32, list = p->layout != SP_SF_MASK;
    const size_t rb = sp_sf_record_bytes(p);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_patterns);
    const long long nrec = out->tiles * out->chunks;
    /* extras are built in a growing buffer (words), then copied behind the records */
    size_t xcap = 1 << 16, xlen = 0; /* words */
    uint32_t *xw = calloc(xcap, 4);
    /* the records and offsets are written in place in the image, allocated with room for extras of a
     * quarter of the records (grown if the matrix needs more); extras are gathered separately */
    size_t room = out->rec_bytes / 4 / 16;
    sp_sf_sections(out, room);
    out->image = malloc(out->size);
    if (out->image && out->size >= (8u << 20)) {
        /* large pages for the image: a few hundred faults instead of ~10^5 on first touch */
        uintptr_t a = ((uintptr_t)out->image + 4095) & ~(uintptr_t)4095;
        madvise((void *)a, out->size - (a - (uintptr_t)out->image), MADV_HUGEPAGE);
    }
    unsigned char *rec = out->image ? out->image + out->rec_off : NULL;
    uint32_t *xoff = out->image ? (uint32_t *)(out->image + out->xoff_off) : NULL;
    row_chunk rc[16];
    memset(rc, 0, sizeof rc);
    int oom = !xw || !xoff || !rec;
    for (int r = 0; r < 16 && !oom; r++) {
        rc[r].val = malloc((size_t)S * 2);
        rc[r].idx = malloc((size_t)S);
        rc[r].filler = malloc((size_t)S);
        rc[r].dist = malloc((size_t)S * 2);
        rc[r].resid = malloc((size_t)W * 4);
        rc[r].ovf_col = malloc((size_t)W * sizeof(int));
        rc[r].ovf_val = malloc((size_t)W * 2);
        rc[r].free_slot = malloc((size_t)S * sizeof(int));
        oom = !rc[r].val || !rc[r].idx || !rc[r].filler || !rc[r].dist || !rc[r].resid || !rc[r].ovf_col ||
              !rc[r].ovf_val || !rc[r].free_slot;
    }
    if (oom) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory encoding a %lld x %lld matrix", M, K); goto done; }

    for (long long i = 0; i < out->tiles; i++) {
        for (long long c = 0; c < out->chunks; c++) {
            for (int r = 0; r < 16; r++) encode_row_chunk(w, M, K, ld, p, 16 * i + r, c, r, &rc[r], &out->stats);
            if (p->layout == SP_SF_SP24 && out->stats.residual) {   /* a group of more than 2: named (the first) */
                long long row = 0, col = 0;
                int n = 0;
                sp_sf_two_four(w, M, K, ld, &row, &col, &n);
                st = sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling: W is not 2:4 sparse (row %lld, columns %lld..%lld hold %d "
                             "nonzeros; the sp24 layout keeps at most 2 of every 4): encode it with the bitmap layout",
                             row, col, col + 3 < K ? col + 3 : K - 1, n);
                goto done;
            }
            unsigned char *R = rec + (size_t)(i * out->chunks + c) * rb;
            uint32_t *vals = (uint32_t *)R, *meta = (uint32_t *)(R + 16 * W);
            unsigned char scratch[256 / 32 * 32]; /* the list layout's masks exist only while encoding */
            unsigned char *mask = list ? scratch : R + 18 * W;
            memset(mask, 0, (size_t)W);
            for (int s = 0; s < steps; s++)
                for (int l = 0; l < 32; l++) {
                    int g = l >> 2, t = l & 3;
                    for (int wd = 0; wd < 4; wd++) {
                        const row_chunk *x = &rc[g + 8 * (wd & 1)];
                        int q = s * 8 + t + 4 * (wd >> 1);
                        vals[(s * 32 + l) * 4 + wd] = (uint32_t)x->val[2 * q] | (uint32_t)x->val[2 * q + 1] << 16;
                        for (int h = 0; h < 2; h++)
                            if (x->filler[2 * q + h]) mask[l * (W / 32) + s] |= (unsigned char)(1u << (wd * 2 + h));
                    }
                }
            for (int pr = 0; pr < steps / 2; pr++)
                for (int l = 0; l < 32; l++) {
                    int g = l >> 2, s = 2 * pr + ((l >> 1) & 1), j = l & 1;
                    uint32_t word = 0;
                    for (int half = 0; half < 2; half++) {
                        const row_chunk *x = &rc[g + 8 * half];
                        for (int u = 0; u < 4; u++) {
                            int q = s * 8 + 4 * j + u;
                            word |= (uint32_t)(x->idx[2 * q] | x->idx[2 * q + 1] << 2) << (16 * half + 4 * u);
                        }
                    }
                    meta[pr * 32 + l] = word;
                }
            /* extras: the distances in lane order, each lane's slots in mask order; then residual */
            long long npos = 0;
            for (int r = 0; r < 16; r++) npos += rc[r].nfilled;
            long long nres = 0;
            for (int r = 0; r < 16; r++) nres += rc[r].nresid;
            size_t need = (size_t)(list ? 1 + (npos + 1) / 2 : (npos * p->dbits + 31) / 32) + (size_t)nres + 8;
            if (xlen + need > xcap) {
                size_t cap = xcap;
                while (xlen + need > cap) cap *= 2;
                uint32_t *nx = realloc(xw, cap * 4);
                if (!nx) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory encoding a %lld x %lld matrix", M, K); goto done; }
                memset(nx + xcap, 0, (cap - xcap) * 4);
                xw = nx;
                xcap = cap;
            }
            xoff[i * out->chunks + c] = (uint32_t)(xlen / 4);
            size_t start = xlen;
            long long bit = list ? 32 : 0, n = 0;
            for (int l = 0; l < 32; l++) {
                int g = l >> 2, t = l & 3;
                for (int s = 0; s < steps; s++)
                    for (int wd = 0; wd < 4; wd++)
                        for (int h = 0; h < 2; h++) {
                            const row_chunk *x = &rc[g + 8 * (wd & 1)];
                            int slot = 2 * (s * 8 + t + 4 * (wd >> 1)) + h;
                            if (!x->filler[slot]) continue;
                            /* list: the value's half-word index in the record, then the distance */
                            unsigned v = list ? (unsigned)((((s * 32 + l) * 4 + wd) * 2 + h) << p->dbits) | x->dist[slot]
                                              : x->dist[slot];
                            put_bits(xw + xlen, &bit, v, list ? 16 : p->dbits);
                            n++;
                        }
            }
            if (list) xw[xlen] = (uint32_t)n;
            xlen += (size_t)((bit + 31) / 32);
            for (int r = 0; r < 16; r++)
                for (int e = 0; e < rc[r].nresid; e++) xw[xlen++] = rc[r].resid[e];
            xlen = (xlen + 3) & ~(size_t)3; /* 16-byte units */
            long long bytes = (long long)(xlen - start) * 4;
            if (bytes > out->stats.max_chunk_extras) out->stats.max_chunk_extras = bytes;
            if (xlen / 4 > 0xffffffffull) { st = sp_fail(SPTUNE_ERR_UNSUPPORTED, "Slot-Filling: extras past 64 GiB"); goto done; }
        }
    }
    xoff[nrec] = (uint32_t)(xlen / 4);
    if (xlen / 4 > room) {
        sp_sf_sections(out, xlen / 4);
        unsigned char *grown = realloc(out->image, out->size);
        if (!grown) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory for a %zu-byte Slot-Filling image", out->size); goto done; }
        out->image = grown;
    }
    sp_sf_sections(out, xlen / 4);
    /* the padding between sections and after the extras is zero (a file compares byte for byte) */
    memset(out->image, 0, SP_SF_HEADER);
    memset(out->image + out->rec_off + out->rec_bytes, 0, out->xoff_off - out->rec_off - out->rec_bytes);
    memset(out->image + out->xoff_off + out->xoff_bytes, 0, out->extra_off - out->xoff_off - out->xoff_bytes);
    memcpy(out->image + out->extra_off, xw, xlen * 4);
    memset(out->image + out->extra_off + xlen * 4, 0, out->size - out->extra_off - xlen * 4);
    byte_stats(out);
    sp_sf_write_header(out);
done:
    for (int r = 0; r < 16; r++) {
        free(rc[r].val); free(rc[r].idx); free(rc[r].filler); free(rc[r].dist); free(rc[r].resid);
        free(rc[r].ovf_col); free(rc[r].ovf_val); free(rc[r].free_slot);
    }
    free(xw);
    if (st != SPTUNE_OK) sp_sf_free(out);
    return st;
}

void sp_sf_free(sp_slotfill *m)
{
    if (!m) return;
    free(m->image);
    memset(m, 0, sizeof *m);
}

/* ---- decoder ------------------------------------------------------------------------------------ */

/* Places value v at (row, col) of w, refusing positions outside the matrix and a second value. */
static int place(uint16_t *w, long long ld, long long M, long long K, long long row, long long col, uint16_t v)
{
    if (v == 0) return 1;
    if (row >= M || col >= K || col < 0) return 0;
    uint16_t *at = &w[row * ld + col];
    if (*at != 0) return 0;
    *at = v;
    return 1;
}

sptune_status sp_sf_decode(const sp_slotfill *m, uint16_t *w, long long ld)
{
    if (!m || !m->image || !w || ld < m->K) return sp_fail(SPTUNE_ERR_INVALID, "sp_sf_decode: bad arguments");
    if (m->params.layout == SP_SF_BITMAP) return sp_sf_decode_bitmap(m, w, ld);
    const int W = m->params.window, steps = W / 32, dbits = m->params.dbits, R = 1 << (dbits - 1);
    const int list = m->params.layout != SP_SF_MASK;
    const size_t rb = sp_sf_record_bytes(&m->params);
    const uint32_t *xoff = (const uint32_t *)(m->image + m->xoff_off);
    const uint32_t *xw = (const uint32_t *)(m->image + m->extra_off);
    const unsigned long long xunits = (m->extra_bytes - 16) / 16;
    unsigned char lmask[256];    /* the list layout's filled-slot masks, rebuilt per chunk */
    uint16_t ldist[8 * 256];     /* and each filled slot's distance */
    for (long long r = 0; r < m->M; r++) memset(w + r * ld, 0, (size_t)m->K * 2);
    for (long long i = 0; i < m->tiles; i++)
        for (long long c = 0; c < m->chunks; c++) {
            const unsigned char *Rp = m->image + m->rec_off + (size_t)(i * m->chunks + c) * rb;
            const uint32_t *vals = (const uint32_t *)Rp, *meta = (const uint32_t *)(Rp + 16 * W);
            const unsigned char *mask = list ? lmask : Rp + 18 * W;
            uint32_t x0 = xoff[i * m->chunks + c], x1 = xoff[i * m->chunks + c + 1];
            if (x0 > x1 || x1 > xunits)
                return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: extras [%u, %u) outside [0, %llu)",
                               i, c, x0, x1, xunits);
            const uint32_t *ex = xw + (size_t)x0 * 4;
            const long long nwords = (long long)(x1 - x0) * 4;
            long long npos = 0, dwords;
            if (list) {
                npos = nwords > 0 ? ex[0] : 0;
                dwords = 1 + (npos + 1) / 2;
                /* the sp24 kernel reads the records alone: anything in the extras would be dropped */
                for (long long e = 0; m->params.layout == SP_SF_SP24 && e < nwords; e++)
                    if (ex[e])
                        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: an sp24 image with filled "
                                       "slots or residual values (it holds exactly 2:4 weights only)", i, c);
                if (npos > 8 * W || dwords > nwords)
                    return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: a list of %lld entries does "
                                   "not fit the chunk's %lld words", i, c, npos, nwords);
                memset(lmask, 0, (size_t)W);
                for (long long e = 0; e < npos; e++) {
                    unsigned ent = (ex[1 + e / 2] >> (16 * (e & 1))) & 0xffffu, slot = ent >> dbits;
                    /* slot = ((s * 32 + l) * 4 + w) * 2 + h; mask bit 8 s + 2 w + h of lane l */
                    unsigned l = (slot >> 3) & 31u, s = slot >> 8, bitn = slot & 7u;
                    if (slot >= 8u * (unsigned)W || (lmask[l * (W / 32) + s] >> bitn & 1))
                        return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: list entry %lld names slot "
                                       "%u twice or outside the record", i, c, e, slot);
                    lmask[l * (W / 32) + s] |= (unsigned char)(1u << bitn);
                    ldist[slot] = (uint16_t)(ent & ((1u << dbits) - 1));
                }
            } else {
                for (int b = 0; b < W; b++) npos += __builtin_popcount(mask[b]);
                dwords = (npos * dbits + 31) / 32;
                if (dwords > nwords)
                    return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: %lld distances need %lld words, "
                                   "the chunk has %lld", i, c, npos, dwords, nwords);
            }
            long long bit = 0;
            for (int l = 0; l < 32; l++) {
                int g = l >> 2, t = l & 3;
                for (int s = 0; s < steps; s++) {
                    /* this lane's words of step s; metadata from the lane that holds it */
                    for (int wd = 0; wd < 4; wd++) {
                        int row = g + 8 * (wd & 1), q = s * 8 + t + 4 * (wd >> 1);
                        int ml = 4 * g + 2 * (s & 1) + (q % 8 >= 4 ? 1 : 0);
                        uint32_t mw = meta[(s / 2) * 32 + ml];
                        unsigned nib = (mw >> (16 * (wd & 1) + 4 * (q % 4))) & 15u, i0 = nib & 3u, i1 = nib >> 2;
                        if (i0 >= i1)
                            return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: bad metadata %x at row "
                                           "%d group %d", i, c, nib, row, q);
                        uint32_t v = vals[(s * 32 + l) * 4 + wd];
                        for (int h = 0; h < 2; h++) {
                            uint16_t val = (uint16_t)(h ? v >> 16 : v & 0xffffu);
                            long long col = c * W + 4 * q;
                            if (mask[l * (W / 32) + s] >> (wd * 2 + h) & 1) {
                                uint32_t d;
                                if (list) {
                                    d = ldist[((s * 32 + l) * 4 + wd) * 2 + h];
                                } else {
                                    d = ex[bit >> 5] >> (bit & 31);
                                    if ((bit & 31) + dbits > 32) d |= ex[(bit >> 5) + 1] << (32 - (bit & 31));
                                    d &= (1u << dbits) - 1;
                                    bit += dbits;
                                }
                                long long kc = 4 * q + (long long)d - R;
                                if (kc < 0 || kc >= W)
                                    return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: a distance "
                                                   "leaves the chunk (row %d, group %d)", i, c, row, q);
                                col = c * W + kc;
                            } else {
                                col += h ? i1 : i0;
                            }
                            if (!place(w, ld, m->M, m->K, 16 * i + row, col, val))
                                return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: a value at row "
                                               "%lld, column %lld is outside the matrix or given twice", i, c,
                                               16 * i + row, col);
                        }
                    }
                }
            }
            for (long long e = dwords; e < nwords; e++) {
                uint32_t x = ex[e];
                if (x == 0) continue; /* padding */
                long long row = 16 * i + ((x >> 8) & 0xff), col = c * W + (x & 0xff);
                if (((x >> 8) & 0xff) >= 16 || (long long)(x & 0xff) >= W || !place(w, ld, m->M, m->K, row, col, (uint16_t)(x >> 16)))
                    return sp_fail(SPTUNE_ERR_INVALID, "Slot-Filling tile %lld chunk %lld: residual word %08x is outside "
                                   "the tile, the matrix, or repeats a value", i, c, x);
            }
        }
    return SPTUNE_OK;
}

/* ---- file image --------------------------------------------------------------------------------- */

sptune_status sp_sf_adopt(unsigned char *image, size_t size, const char *name, sp_slotfill *out)
{
    memset(out, 0, sizeof *out);
    sptune_status st = SPTUNE_OK;
    const unsigned char *h = image;
    if (size < SP_SF_HEADER || memcmp(h, SP_SF_MAGIC, 8) != 0) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: not an sptune Slot-Filling matrix (no %s header)", name, SP_SF_MAGIC);
        goto fail;
    }
    const uint32_t version = get32(h + H_VERSION);
    if (version < 1 || version > SP_SF_VERSION) {
        st = sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: format version %u, this sptune reads versions 1 to %d%s", name, version,
                     SP_SF_VERSION, version > SP_SF_VERSION ? " (written by a newer sptune)" : "");
        goto fail;
    }
    out->dtype = (sp_sf_dtype)get32(h + H_DTYPE);
    out->params.window = (int)get32(h + H_WINDOW);
    out->params.dbits = (int)get32(h + H_DBITS);
    out->params.fill = (int)get32(h + H_FILL);
    out->params.layout = (int)get32(h + H_LAYOUT);
    uint64_t M = get64(h + H_M), K = get64(h + H_K);
    if (get32(h + H_HEADER) != SP_SF_HEADER || (out->dtype != SP_SF_BF16 && out->dtype != SP_SF_F16) ||
        sp_sf_params_check(&out->params) != SPTUNE_OK || M < 1 || K < 1 || M > (1ull << 31) || K > (1ull << 31) ||
        (out->params.layout == SP_SF_BITMAP && version < 2)) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: damaged header (shape, type or parameters out of range)", name);
        goto fail;
    }
    out->M = (long long)M;
    out->K = (long long)K;
    uint64_t extra = get64(h + H_EXTRA);
    if (extra < 16 || extra % 16 != 0 || extra > size) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: damaged header (extras of %llu bytes)", name, (unsigned long long)extra);
        goto fail;
    }
    sp_sf_sections(out, (extra - 16) / 16);
    if (get64(h + H_REC) != out->rec_bytes || get64(h + H_XOFF) != out->xoff_bytes) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: damaged header (sections of %llu and %llu bytes, the shape gives %zu and %zu)",
                     name, (unsigned long long)get64(h + H_REC), (unsigned long long)get64(h + H_XOFF), out->rec_bytes,
                     out->xoff_bytes);
        goto fail;
    }
    if (out->size != size) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: %zu bytes where the header describes %zu: truncated or damaged", name, size,
                     out->size);
        goto fail;
    }
    if (sp_checksum64(image + SP_SF_HEADER, size - SP_SF_HEADER) != get64(h + H_SUM)) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: checksum mismatch: the matrix is damaged", name);
        goto fail;
    }
    /* the offsets the kernel follows: non-decreasing and inside the extras */
    const uint32_t *xoff = (const uint32_t *)(image + out->xoff_off);
    long long n = out->tiles * out->chunks;
    for (long long i = 0; i < n; i++)
        if (xoff[i] > xoff[i + 1]) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: chunk offsets decrease at %lld", name, i);
            goto fail;
        }
    if (xoff[0] != 0 || (unsigned long long)xoff[n] * 16 + 16 != extra) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: chunk offsets do not span the extras", name);
        goto fail;
    }
    /* the header's tallies (outside the checksum): every nonzero in one layer, none past the matrix or the extras */
    const uint64_t nnz = get64(h + H_NNZ), tc = get64(h + H_TC), filled = get64(h + H_FILLED),
                   resid = get64(h + H_RESID), maxx = get64(h + H_MAXX);
    if (nnz / (uint64_t)out->K > (uint64_t)out->M || tc > nnz || filled > nnz - tc || resid != nnz - tc - filled ||
        maxx > extra || (out->params.layout == SP_SF_BITMAP && nnz > extra / 2)) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: damaged header (%llu nonzeros: %llu, %llu and %llu in the layers, chunks "
                     "of up to %llu extra bytes, in a %lld x %lld matrix)", name, (unsigned long long)nnz,
                     (unsigned long long)tc, (unsigned long long)filled, (unsigned long long)resid,
                     (unsigned long long)maxx, out->M, out->K);
        goto fail;
    }
    out->stats.nonzeros = (long long)nnz;
    out->stats.tc = (long long)tc;
    out->stats.filled = (long long)filled;
    out->stats.residual = (long long)resid;
    out->stats.max_chunk_extras = (long long)maxx;
    out->image = image;
    byte_stats(out);
    return SPTUNE_OK;
fail:
    free(image);
    memset(out, 0, sizeof *out);
    return st;
}

sptune_status sp_sf_read(const char *path, sp_slotfill *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return sp_fail(errno == ENOENT ? SPTUNE_ERR_NOT_FOUND : SPTUNE_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    unsigned char head[SP_SF_HEADER];
    size_t got = fread(head, 1, sizeof head, f);
    if (got < sizeof head || memcmp(head, SP_SF_MAGIC, 8) != 0) {
        fclose(f);
        return sp_fail(SPTUNE_ERR_INVALID, "%s: not an sptune Slot-Filling matrix (no %s header)", path, SP_SF_MAGIC);
    }
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return sp_fail(SPTUNE_ERR_IO, "cannot read %s", path); }
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return sp_fail(SPTUNE_ERR_IO, "cannot read %s", path); }
    unsigned char *image = malloc((size_t)size);
    if (!image) { fclose(f); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory reading %s (%ld bytes)", path, size); }
    got = fread(image, 1, (size_t)size, f);
    int err = ferror(f);
    fclose(f);
    if (err || got != (size_t)size) { free(image); return sp_fail(SPTUNE_ERR_IO, "cannot read %s", path); }
    return sp_sf_adopt(image, (size_t)size, path, out);
}

sptune_status sp_sf_write(const sp_slotfill *m, const char *path)
{
    if (!m || !m->image) return sp_fail(SPTUNE_ERR_INVALID, "sp_sf_write: no matrix");
    return sp_write_file_atomic(path, m->image, m->size); /* a file already there survives a failed write */
}

int sp_sf_two_four(const uint16_t *w, long long M, long long K, long long ld, long long *row, long long *col, int *n)
{
    for (long long r = 0; r < M; r++)
        for (long long q = 0; q < K; q += 4) {
            int c = 0;
            for (long long e = q; e < q + 4 && e < K; e++) c += sp_sf_kept(w[r * ld + e]);
            if (c > 2) {
                if (row) *row = r;
                if (col) *col = q;
                if (n) *n = c;
                return 0;
            }
        }
    return 1;
}

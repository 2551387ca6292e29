/* Slot-Filling: a weight matrix at moderate unstructured sparsity (~50 %) in a compact image that
 * slotfill-spmm reads on the GPU, exact for any pattern.
 *
 * W is M x K (rows = output features, as nn.Linear keeps its weight), 16-bit floats (bf16 or fp16;
 * the encoder only looks at bits): a zero is pruned, +0 and -0 alike (w * mask leaves -0 where a weight was
 * negative; a product with it adds nothing), anything else (NaN, Inf and subnormals included) is a value and is
 * kept. Decoding gives W back bit for bit, a pruned -0 as +0. The product computed with it is
 * Y[N x M] = X[N x K] * W^T (op slotfill-spmm), the layout inference engines use.
 *
 * Rows are taken 16 at a time (a tile, the m16 of the tensor-core instructions) and columns `window`
 * at a time (a chunk). Three layouts (sp_sf_layout):
 *
 *  - bitmap (the default): each (tile, chunk) is one block of a header (16 bytes: the byte offset of
 *    each 16-column step's values, u16 x 8), the bitmap (256 bytes: lane l of a warp owns bytes
 *    8 l .. 8 l + 7, two words: steps 0-3 and 4-7; bit 8 r + 2 (s % 4) + h marks element h of register r
 *    of step s in lane l's mma.m16n8k16 A fragment: register 0 = row g = l / 4, columns 2 t, 2 t + 1 with
 *    t = l % 4; 1 = row g + 8; 2 = row g, columns 2 t + 8, 2 t + 9; 3 = row g + 8, those columns), then the
 *    values of the nonzeros, step by step, lane 0 to 31, in bit order, padded to 16 bytes. 0.5625 of
 *    dense bytes at 50 % (one bit per element, two bytes per value) whatever the pattern: a warp
 *    decodes its fragments from shared memory without a residual or a limit on a row's density.
 *    window 128 only; dbits and fill unused (5 and 0).
 *  - sp24: W exactly 2:4 (every aligned group of 4 along K holds at most 2 nonzeros, as 2:4 pruning leaves it):
 *    the list layout's records with window 64 and nothing else in use (no filled slots, no residual: the
 *    extras hold each chunk's zero count), 0.5625 of dense bytes plus 1 %; slotfill-spmm streams the records
 *    straight into mma.sp fragments without decoding anything. The encoder refuses any other pattern, naming
 *    the first group of 4 with more than 2 values; sptune_slotfill_encode picks it by itself for such weights.
 *  - owner and list (the first design, kept readable and tested): every group of 4 columns of a row
 *    keeps up to 2 values in a Sparse-TC layer in mma.sp register order (values: per k32 step, lane l
 *    holds 4 words: row g = l / 4 (+8 for words 1 and 3), groups t = l % 4 (+4 for words 2 and 3) of the
 *    step, each word slot 0 | slot 1 << 16; metadata: per pair of k32 steps, lane l holds the word the
 *    sparsity selector (l / 2) % 2 of step (l / 2) % 2 reads: bits 0-15 row g, bits 16-31 row g + 8, the 4
 *    groups 4 (l % 2) .. +3, 4 bits each: idx0 | idx1 << 2, idx0 < idx1); a group with fewer than 2
 *    nonzeros points its free slots at columns that are zero in W. A Slot-Filling layer puts a nonzero
 *    that overflows its group (the 3rd and 4th) into a free slot of the same row and chunk, its true
 *    column recorded as a differential distance d = column - slot's group column + 2^(dbits-1) in dbits
 *    bits, slots assigned greedily (overflows in column order, each to the leftmost free slot within
 *    reach); `owner` records the filled slots as a per-lane mask in the record (bit 8 s + 2 w + h: step s,
 *    word w, half h) with the distances after it in the extras (lanes 0..31, each lane's slots in mask
 *    order, packed LSB first), `list` as a count word and 16-bit entries (half-word index of the value in
 *    the record << dbits | distance). A Residual layer keeps whatever found no slot, as words
 *    value << 16 | row << 8 | column (row within the tile, column within the chunk), so nothing is dropped.
 *
 * Memory: one buffer (sp_slotfill.image), a 256-byte header and three sections:
 *   records   owner/list: tiles x chunks fixed-size records of 19 * window bytes (18 in the list layout):
 *             values (16 window), metadata (2 window), masks (window; owner), tile-major; bitmap: none;
 *   xoff      tiles x chunks + 1 words: chunk (i, c)'s extras (owner/list) or block (bitmap) start at
 *             16-byte unit xoff[i*chunks+c] and end where the next starts (tile-major: a tile's chunks
 *             follow each other);
 *   extras    owner/list: distances (or the count and list entries) then residual words per chunk, zero-padded
 *             to 16 bytes (a zero word is padding: no residual value has bits 0x0000); bitmap: the blocks;
 *             then 16 zero bytes.
 * The same bytes are the file format (`sptune encode`), versioned (a bitmap image is version 2; version 1
 * images, owner and list, still read) and checksummed (a 64-bit checksum of the sections, against damage;
 * like any file it is validated, never trusted), and what the kernel reads once uploaded. */
#ifndef SP_SLOTFILL_H
#define SP_SLOTFILL_H

#include "sptune.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SP_SF_MAGIC "SPTUNESF"
#define SP_SF_VERSION 2 /* written; 1 is read too (owner and list only) */
#define SP_SF_HEADER 256

typedef enum sp_sf_dtype { SP_SF_BF16 = 0, SP_SF_F16 = 1 } sp_sf_dtype;

/* How the Slot-Filling layer records which slots it filled. */
typedef enum sp_sf_layout {
    SP_SF_MASK = 0, /* a bit per slot in the record, distances packed in lane order (a warp prefix sum finds each
                       lane's first): fewest bytes */
    SP_SF_LIST = 1, /* a list of 16-bit entries per chunk (count word first): the value's half-word index in the
                       record's values, then the distance in the remaining bits: decoded evenly by every lane */
    SP_SF_BITMAP = 2, /* a bit per element in mma fragment order and the values: fewest bytes at ~50 %, any pattern */
    SP_SF_SP24 = 3    /* W exactly 2:4 (at most 2 of every 4 along K): the list layout's records alone (window 64,
                         no filling, no residual), streamed straight into mma.sp fragments */
} sp_sf_layout;

/* bitmap blocks: header, bitmap, and the most values a 16 x 128 block holds */
#define SP_SF_BM_HEADER 16
#define SP_SF_BM_MASKS 256
#define SP_SF_BM_MAX (SP_SF_BM_HEADER + SP_SF_BM_MASKS + 2 * 16 * 128)

/* Encoding parameters (part of slotfill-spmm's tuning space). */
typedef struct sp_sf_params {
    int window;   /* chunk width: 64, 128 or 256 (bitmap: 128) */
    int dbits;    /* bits of a filler's distance: 3 .. log2(window) + 1 (reach: +-2^(dbits-1) columns);
                     the list layout takes sp_sf_list_dbits(window); bitmap: 5 (unused) */
    int fill;     /* 0: no Slot-Filling layer (2:4 plus residual only); bitmap: 0 */
    int layout;   /* sp_sf_layout */
} sp_sf_params;

/* A layout by the name slotfill-spmm's `decode` parameter gives it ("bitmap", "owner": the mask layout,
 * "list"), and back. */
static inline const char *sp_sf_layout_name(int layout)
{
    return layout == SP_SF_BITMAP ? "bitmap" : layout == SP_SF_LIST ? "list" : layout == SP_SF_SP24 ? "sp24" : "owner";
}
static inline int sp_sf_layout_named(const char *decode)
{
    return decode && strcmp(decode, "bitmap") == 0 ? SP_SF_BITMAP
           : decode && strcmp(decode, "list") == 0 ? SP_SF_LIST
           : decode && strcmp(decode, "sp24") == 0 ? SP_SF_SP24 : SP_SF_MASK;
}

/* The distance bits a list entry leaves next to its slot index: 16 - log2(8 * window). */
static inline int sp_sf_list_dbits(int window) { return window == 64 ? 7 : window == 128 ? 6 : 5; }

/* Checks p (SPTUNE_ERR_INVALID naming the bad field). */
sptune_status sp_sf_params_check(const sp_sf_params *p);

typedef struct sp_sf_stats {
    long long nonzeros;      /* values of W (bits != 0) */
    long long tc;            /* in the Sparse-TC layer (bitmap: all, decoded on chip for the tensor cores) */
    long long filled;        /* in the Slot-Filling layer */
    long long residual;      /* in the Residual layer */
    long long max_chunk_extras; /* largest extras (bitmap: block) of one chunk, bytes */
    /* bytes of each layer (the records' values and metadata; masks and distances; residual words
     * and padding; the offsets) and of the dense matrix; bitmap: values, 0, padding, offsets and
     * bitmaps and headers */
    long long bytes_tc, bytes_fill, bytes_residual, bytes_index, bytes_dense;
} sp_sf_stats;

typedef struct sp_slotfill {
    unsigned char *image;    /* header + sections: what the kernel reads and the file holds */
    size_t size;
    /* from the header */
    sp_sf_dtype dtype;
    sp_sf_params params;
    long long M, K;
    long long tiles, chunks;  /* ceil(M / 16), ceil(K / window) */
    size_t rec_off, rec_bytes, xoff_off, xoff_bytes, extra_off, extra_bytes; /* sections, in image */
    sp_sf_stats stats;
} sp_slotfill;

/* Encodes W (M x K, row-major, 16-bit elements, ld = the row stride in elements, >= K). */
sptune_status sp_sf_encode(const uint16_t *w, long long M, long long K, long long ld, sp_sf_dtype dtype,
                           const sp_sf_params *p, sp_slotfill *out);
/* Rebuilds the dense W (M x K, ld >= K) bit for bit, validating every field on the way: an image
 * from a file or a faulty encoder is refused with SPTUNE_ERR_INVALID naming the first bad
 * (tile, chunk) instead of read out of bounds. */
sptune_status sp_sf_decode(const sp_slotfill *m, uint16_t *w, long long ld);
void sp_sf_free(sp_slotfill *m);

/* Whether every aligned group of 4 along K of W (M x K, row stride ld) holds at most 2 nonzeros (bits != 0);
 * if not, the first group that holds more (row, first column, count; each may be NULL). */
int sp_sf_two_four(const uint16_t *w, long long M, long long K, long long ld, long long *row, long long *col, int *n);

/* W as the encoding shows it: nonzeros in all and per row (smallest, largest, mean, variance), and whether
 * every aligned group of 4 along K holds exactly 2 (2:4). The bitmap layout is read in place; the first
 * design's layouts are decoded whole (M x K x 2 bytes for the call). */
typedef struct sp_sf_profile {
    long long nonzeros, row_min, row_max;
    double row_mean, row_var;
    int two_four;
} sp_sf_profile;
sptune_status sp_sf_profile_get(const sp_slotfill *m, sp_sf_profile *out);
/* The slotfill-spmm problem's dist for weights so profiled (0 independent elements, 1 magnitude-pruned over
 * rows of different scales, 2 per-row, 3 2:4, 4 extreme rows; tuner/sp_case_slotfill.c draws each). */
int sp_sf_profile_dist(const sp_sf_profile *p, long long K);

/* The image as a file and back. Reading checks the magic ("not an sptune Slot-Filling matrix"),
 * the version ("written by a newer sptune"), the header's fields and section bounds, and the
 * checksum ("damaged"), before anything is used. */
sptune_status sp_sf_write(const sp_slotfill *m, const char *path);
sptune_status sp_sf_read(const char *path, sp_slotfill *out);
/* The same checks on an image in memory (takes ownership of image on success and on failure). */
sptune_status sp_sf_adopt(unsigned char *image, size_t size, const char *name, sp_slotfill *out);

/* Writes the checksum of the sections into the header (the encoder's last step; tests use it to
 * build images that are damaged but sealed). */
void sp_sf_seal(unsigned char *image, size_t size);

/* Whether a 16-bit element of W is a value the encoding keeps (not +0 or -0). */
static inline int sp_sf_kept(uint16_t v) { return (v & 0x7fffu) != 0; }

/* Bytes of one record: values and metadata, and the masks in the mask layout (the bitmap layout has none). */
static inline size_t sp_sf_record_bytes(const sp_sf_params *p)
{
    return p->layout == SP_SF_BITMAP ? 0 : (size_t)(p->layout == SP_SF_MASK ? 19 : 18) * (size_t)p->window;
}

#endif

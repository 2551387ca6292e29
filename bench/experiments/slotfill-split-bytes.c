/* Bytes and per-lane work of Slot-Filling layouts on the tuner's weight generators, on the CPU machine
 * (bench/experiments/slotfill-split-bytes.sh builds and runs it). Two things per matrix:
 *
 * 1. Where the owner/list layout's bytes go (the real encoder, runtime/sp_slotfill.c): the fixed record (2:4 values,
 *    metadata, fill masks), the distances, the residual words, the offsets; the share of the overflow that found
 *    no slot within reach.
 * 2. The split with corrections on the tensor cores (the design of docs/journal/2026-12-04.md): the 2:4 layer A1
 *    as sp24 streams it; two type bits a group (normal, overflow target, one filled slot, two filled slots); the
 *    correction C = (overflow at true columns) - (fillers at their slots) is itself 2:4, so a second mma.sp over it
 *    makes the product exact. Fillers are matched to targets through a FIFO per scope (the 2 rows of a quad, or the
 *    16 rows of a warp) in K order, reset every `seg` columns (split-K starts there): a filled slot pushes its value,
 *    a target pops the oldest; a target finding the FIFO empty takes its value from the residual stream (2 bytes).
 *    Counts the residual, the FIFO's depth and each lane's pushes + pops per 16 x 32 step (lane 4 g + t: rows g,
 *    g + 8, groups t, t + 4, as mma.sp's A fragment holds them), mean and the warp's busiest lane.
 *   slotfill-split-bytes M K [seg ...]          e.g. 4096 4096 256 1024 0   (seg 0: the whole K) */
#include "sp_slotfill.h"
#include "sp_slotfill_dist.h"
#include "sp_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FIFO_CAP = 256 };

typedef struct split_stats {
    long long groups, overflow, filled, residual, steps;
    double lane_mean, lane_busiest;
    int fifo_max;
} split_stats;

/* Overflow (k - 2) and free slots (2 - k) of the groups of 4 in rows tile .. tile + 15, k32 step s. */
static void step_groups(const uint16_t *W, int M, int K, int tile, int s, int over[16][8], int freed[16][8])
{
    for (int r = 0; r < 16; r++)
        for (int j = 0; j < 8; j++) {
            int k = 0;
            const int row = tile + r, c0 = s * 32 + 4 * j;
            for (int c = c0; c < c0 + 4 && row < M && c < K; c++) k += W[(size_t)row * K + c] != 0;
            over[r][j] = k > 2 ? k - 2 : 0;
            freed[r][j] = k < 2 ? 2 - k : 0;
        }
}

/* One FIFO scope over one segment of steps [s0, s1): the decoder pushes a step's filled slots (never past the
 * ring), then pops for its targets; a target finding the ring empty reads the residual. With `limit` >= 0 only the
 * first `limit` free slots are filled (the encoder leaves unfilled what no target would pop). Counts into st and
 * lane_work_steps where given. Returns the pops. */
static long long scope_run(const uint16_t *W, int M, int K, int tile, int s0, int s1, int scope, int rows_per_scope,
                           long long limit, split_stats *st, int *lane_work_steps)
{
    int over[16][8], freed[16][8], fifo = 0;
    long long pushed = 0, popped = 0;
    for (int s = s0; s < s1; s++) {
        step_groups(W, M, K, tile, s, over, freed);
        int *lane_work = lane_work_steps ? lane_work_steps + 32 * (s - s0) : NULL;
        for (int r = 0; r < 16; r++) {
            if (rows_per_scope == 2 && r % 8 != scope) continue;
            for (int j = 0; j < 8; j++) {
                int p = freed[r][j] < FIFO_CAP - fifo ? freed[r][j] : FIFO_CAP - fifo;
                if (limit >= 0 && p > limit - pushed) p = (int)(limit - pushed);
                fifo += p;
                pushed += p;
                if (lane_work) lane_work[4 * (r % 8) + j % 4] += p;
            }
        }
        for (int r = 0; r < 16; r++) {
            if (rows_per_scope == 2 && r % 8 != scope) continue;
            for (int j = 0; j < 8; j++)
                for (int o = 0; o < over[r][j]; o++) {
                    if (lane_work) lane_work[4 * (r % 8) + j % 4]++;
                    if (fifo > 0) { fifo--; popped++; }
                    else if (st) st->residual++;
                    if (st) st->overflow++;
                }
        }
        if (st && fifo > st->fifo_max) st->fifo_max = fifo;
    }
    if (st) st->filled += popped;
    return popped;
}

/* The split over W (M x K) with FIFO scopes of `rows_per_scope` rows (2: a quad's rows g, g + 8; 16: the warp). */
static void split_sim(const uint16_t *W, int M, int K, int seg, int rows_per_scope, split_stats *st)
{
    memset(st, 0, sizeof *st);
    const int ksteps = K / 32, per_seg = seg > 0 ? seg / 32 : ksteps;
    int *work = malloc(sizeof(int) * 32 * (size_t)per_seg);
    for (int tile = 0; tile < M; tile += 16)
        for (int s0 = 0; s0 < ksteps; s0 += per_seg) {
            const int s1 = s0 + per_seg < ksteps ? s0 + per_seg : ksteps;
            memset(work, 0, sizeof(int) * 32 * (size_t)per_seg);
            for (int sc = 0; sc < 16 / rows_per_scope; sc++) {
                const long long matched = scope_run(W, M, K, tile, s0, s1, sc, rows_per_scope, -1, NULL, NULL);
                scope_run(W, M, K, tile, s0, s1, sc, rows_per_scope, matched, st, work);
            }
            for (int s = 0; s < s1 - s0; s++) {
                int busiest = 0, sum = 0;
                for (int l = 0; l < 32; l++) { sum += work[32 * s + l]; if (work[32 * s + l] > busiest) busiest = work[32 * s + l]; }
                st->lane_mean += sum / 32.0;
                st->lane_busiest += busiest;
                st->steps++;
            }
        }
    st->groups = (long long)M * (K / 4);
    st->lane_mean /= (double)st->steps;
    st->lane_busiest /= (double)st->steps;
    free(work);
}

static void owner_breakdown(const uint16_t *W, int M, int K, int window, int dbits)
{
    sp_slotfill m;
    sp_sf_params p = {window, dbits, 1, SP_SF_MASK};
    if (sp_sf_encode(W, M, K, K, SP_SF_BF16, &p, &m) != SPTUNE_OK) {
        printf("    owner window %d dbits %d: %s\n", window, dbits, sptune_last_error());
        return;
    }
    const sp_sf_stats *s = &m.stats;
    const double d = (double)s->bytes_dense, over = (double)(s->filled + s->residual);
    printf("    owner w%-3d d%d: %.4f of dense = tc %.4f + masks/distances %.4f + residual %.4f + offsets %.4f;"
           " overflow %.1f %% of nonzeros, %.1f %% of it residual\n", window, dbits,
           (double)(s->bytes_tc + s->bytes_fill + s->bytes_residual + s->bytes_index) / d, s->bytes_tc / d,
           s->bytes_fill / d, s->bytes_residual / d, s->bytes_index / d, 100.0 * over / (double)s->nonzeros,
           over > 0 ? 100.0 * (double)s->residual / over : 0.0);
    sp_sf_free(&m);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s M K [seg ...]   (seg: columns between FIFO resets, a multiple of 32; 0: all of K)\n",
                argv[0]);
        return 2;
    }
    const int M = atoi(argv[1]), K = atoi(argv[2]);
    if (M < 16 || K < 32 || M % 16 || K % 32) { fprintf(stderr, "M: a multiple of 16, K: a multiple of 32\n"); return 2; }
    int segs[8] = {256, 1024, 0}, nseg = 3;
    if (argc > 3) {
        nseg = 0;
        for (int i = 3; i < argc && nseg < 8; i++) segs[nseg++] = atoi(argv[i]);
    }
    uint16_t *W = malloc((size_t)M * K * sizeof *W);
    if (!W) { fprintf(stderr, "out of memory\n"); return 1; }
    static const char *names[] = {"uniform", "magnitude", "per-row (Wanda-style)"};
    const double sparsities[] = {0.5, 0.6, 0.7};
    for (int dist = 0; dist < 3; dist++)
        for (int si = 0; si < 3; si++) {
            uint64_t rng = 7 + (uint64_t)dist * 31 + (uint64_t)si;
            if (sp_slotfill_draw(&rng, M, K, sparsities[si], dist, 0, W) != SPTUNE_OK) {
                fprintf(stderr, "%s\n", sptune_last_error());
                return 1;
            }
            printf("%d x %d, %s, %.0f %% sparse\n", M, K, names[dist], 100 * sparsities[si]);
            owner_breakdown(W, M, K, 128, 5);
            owner_breakdown(W, M, K, 256, 7);
            for (int i = 0; i < nseg; i++)
                for (int scope = 2; scope <= 16; scope += 14) {
                    split_stats st;
                    split_sim(W, M, K, segs[i], scope, &st);
                    /* dense: 2 bytes an element; A1: 16 values (2 bytes) + 8 groups x 4 bits a row and step of 32;
                     * types: 2 bits a group; residual: 2 bytes a value; a 4-byte residual offset per tile segment */
                    const double dense = 2.0 * M * K, a1 = 0.5625 * dense, types = st.groups * 0.25,
                                 res = 2.0 * st.residual,
                                 offs = 4.0 * (M / 16) * ((K + (segs[i] ? segs[i] : K) - 1) / (segs[i] ? segs[i] : K));
                    printf("    split %-4s seg %-5d: %.4f of dense (types %.4f, residual %.4f); overflow %.1f %% of"
                           " elements, %.1f %% of it residual; FIFO depth max %d; pushes + pops a lane and step:"
                           " mean %.2f, busiest %.2f\n", scope == 2 ? "quad" : "warp", segs[i] ? segs[i] : K,
                           (a1 + types + res + offs) / dense, types / dense, res / dense,
                           100.0 * st.overflow / ((double)M * K), st.overflow ? 100.0 * st.residual / st.overflow : 0.0,
                           st.fifo_max, st.lane_mean, st.lane_busiest);
                }
        }
    free(W);
    return 0;
}

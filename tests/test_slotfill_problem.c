/* The slotfill-spmm problem built from an encoded matrix (sptune_slotfill_problem): the sparsity and the kind of
 * pruning measured from the encoding come out as the benchmarks' generator drew them (every dist, two
 * sparsities, bf16 and fp16, the bitmap layout read in place and the first design's decoded), and bad arguments
 * are refused with a message. */
#include "sp_rng.h"
#include "sp_slotfill.h"
#include "sp_slotfill_dist.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Draws W as dist says, encodes it (config NULL: the default), and checks the problem built from it. */
static void check_drawn(int M, int K, double sparsity, int dist, int f16, const char *config, long long tokens)
{
    uint64_t rng = 0x51077ull + (uint64_t)dist * 977 + (uint64_t)(sparsity * 100);
    unsigned short *w = malloc((size_t)M * K * 2);
    CHECK(w != NULL);
    if (!w) return;
    CHECK_ST(sp_slotfill_draw(&rng, M, K, sparsity, dist, f16, w), SPTUNE_OK);
    sptune_slotfill *m = NULL;
    CHECK_ST(sptune_slotfill_encode(w, M, K, f16, config, &m), SPTUNE_OK);
    if (m) {
        char got[128], want[128];
        CHECK_ST(sptune_slotfill_problem(m, tokens, got, sizeof got), SPTUNE_OK);
        /* the sparsity measured: exactly what was asked where every element or row keeps its share (2:4 keeps
         * half whatever was asked); within 2 points where a threshold from a sample (1) or the hard rows (4)
         * decide */
        int measured = -1, asked = dist == 3 ? 50 : (int)(sparsity * 100 + 0.5);
        const char *at = strstr(got, "sparsity=");
        if (at) measured = atoi(at + 9);
        const int slack = dist == 1 || dist == 4 ? 2 : 0;
        CHECK_MSG(measured >= asked - slack && measured <= asked + slack, "dist %d: sparsity %d measured, %d drawn (%s)",
                  dist, measured, asked, got);
        snprintf(want, sizeof want, "M=%d,K=%d,N=%lld,sparsity=%d,fp16=%d,dist=%d", M, K, tokens, measured, f16, dist);
        CHECK_MSG(strcmp(got, want) == 0, "dist %d, sparsity %.2f, %s: got '%s', want '%s'", dist, sparsity,
                  config ? config : "default encoding", got, want);
        sp_test_problem_parses("slotfill-spmm", got);   /* the string is a problem the op takes */
    }
    sptune_slotfill_free(m);
    free(w);
}

int main(void)
{
    for (int dist = 0; dist <= 4; dist++) check_drawn(256, 1024, 0.5, dist, 0, NULL, 16);
    check_drawn(256, 1024, 0.7, 1, 0, NULL, 1);
    check_drawn(256, 1024, 0.7, 2, 1, NULL, 8);
    check_drawn(128, 2048, 0.6, 0, 0, NULL, 64);
    /* the first design's layout: decoded whole, the same answer */
    check_drawn(128, 512, 0.5, 2, 0, "decode=owner,window=128,dbits=6,fill=1", 4);
    check_drawn(128, 512, 0.5, 1, 0, "decode=list,window=128,dbits=6,fill=1", 4);

    /* bad arguments */
    uint64_t rng = 7;
    unsigned short *w = malloc(64 * 128 * 2);
    CHECK(w != NULL);
    if (w) {
        CHECK_ST(sp_slotfill_draw(&rng, 64, 128, 0.5, 2, 0, w), SPTUNE_OK);
        sptune_slotfill *m = NULL;
        CHECK_ST(sptune_slotfill_encode(w, 64, 128, 0, NULL, &m), SPTUNE_OK);
        char buf[128] = "x", tiny[8] = "x";
        CHECK_ST(sptune_slotfill_problem(m, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), "tokens = 0") && buf[0] == 0, "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_problem(m, 2147483648LL, buf, sizeof buf), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_slotfill_problem(m, 4, tiny, sizeof tiny), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), "the buffer 8") && tiny[0] == 0, "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_problem(NULL, 4, buf, sizeof buf), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_slotfill_problem(m, 4, NULL, 0), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_slotfill_problem(m, 2147483647LL, buf, sizeof buf), SPTUNE_OK);
        CHECK_MSG(strcmp(buf, "M=64,K=128,N=2147483647,sparsity=50,fp16=0,dist=2") == 0, "%s", buf);
        sptune_slotfill_free(m);
    }
    free(w);
    return sp_test_done("test_slotfill_problem");
}

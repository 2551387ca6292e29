/* The TwELL problem measured from activations (sptune_twell_describe): gates drawn by the benchmarks' generator
 * with known dimensions come back as those dimensions (nnz exactly, dead and dense within what chance and the
 * batch allow, the tail exponent within 0.25 from counts and 0.15 from the gate itself, where dense tokens sit), the
 * string is a problem twell-ffn takes,
 * and bad arguments are refused with a message. */
#include "sp_rng.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_twell_dist.h"
#include "sptune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double dim(const char *problem, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, ",%s=", name);
    const char *at = strstr(problem, key);
    return at ? atof(at + strlen(key)) : -1;
}

static void recover(int M, int F, sp_twell_dist d)
{
    uint64_t rng = 0xfee1 + (uint64_t)(d.nnz * 7 + d.tail * 100 + d.dense * 13 + d.at);
    unsigned short *G = malloc((size_t)M * F * 2);
    unsigned *active = malloc((size_t)M * sizeof *active);
    unsigned long long *counts = calloc((size_t)F, sizeof *counts);
    CHECK(G && active && counts);
    if (G && active && counts) {
        CHECK_ST(sp_twell_gate_data(&rng, M, F, &d, G), SPTUNE_OK);
        CHECK_ST(sptune_twell_count_tokens(G, M, F, active), SPTUNE_OK);
        CHECK_ST(sptune_twell_count_active(G, M, F, counts), SPTUNE_OK);
        char got[160], exact[160];
        CHECK_ST(sptune_twell_describe(M, active, F, counts, 16384, 2048, 1, got, sizeof got), SPTUNE_OK);
        /* from the gate itself the neurons are counted over the ordinary tokens: the tail closer, the rest alike */
        CHECK_ST(sptune_twell_describe_gate(G, M, F, 16384, 2048, 1, exact, sizeof exact), SPTUNE_OK);
        CHECK_MSG(fabs(dim(exact, "tail") - d.tail) <= 0.15, "tail from the gate: %s", exact);
        CHECK_MSG(dim(exact, "nnz") == dim(got, "nnz") && dim(exact, "dense") == dim(got, "dense") &&
                  dim(exact, "at") == dim(got, "at") && fabs(dim(exact, "dead") - dim(got, "dead")) <= 1, "%s / %s", exact,
                  got);
        printf("drawn nnz=%g,dead=%g,tail=%g,dense=%g,dense_nnz=%g,at=%d\n  got %s\n", d.nnz, d.dead, d.tail, d.dense,
               d.dense_nnz, d.at, got);
        printf("  gate %s\n", exact);
        CHECK_MSG(!strncmp(got, "M=16384,D=2048,F=", 17) && strstr(got, ",order=1"), "%s", got);
        CHECK_MSG(fabs(dim(got, "nnz") - d.nnz) <= 1, "nnz: %s", got);
        /* live neurons too rare to fire in this batch count as dead: a few points more at heavy tails */
        CHECK_MSG(dim(got, "dead") >= d.dead - 2 && dim(got, "dead") <= d.dead + 5, "dead: %s", got);
        CHECK_MSG(fabs(dim(got, "tail") - d.tail) <= 0.25, "tail: %s", got);
        const double ndense = d.dense > 0 ? fmax(1, ceil(M * d.dense / 100 - 1e-9)) : 0;
        CHECK_MSG(fabs(dim(got, "dense") - 100 * ndense / M) <= 0.05 * 100 * ndense / M + 0.01, "dense: %s", got);
        if (ndense > 0) {
            CHECK_MSG(fabs(dim(got, "dense_nnz") - d.dense_nnz) <= 0.1 * d.dense_nnz, "dense_nnz: %s", got);
            CHECK_MSG(dim(got, "at") == d.at, "at: %s", got);
        }
        sp_test_problem_parses("twell-ffn", got);
    }
    free(G);
    free(active);
    free(counts);
}

int main(void)
{
    const int M = 2048, F = 5632;
    recover(M, F, (sp_twell_dist){.nnz = 40, .dead = 30, .tail = 0.7, .dense = 0.5, .dense_nnz = 2000, .at = 2});
    recover(M, F, (sp_twell_dist){.nnz = 40, .dead = 30, .tail = 0.7, .dense = 2, .dense_nnz = 1500, .at = 0});
    recover(M, F, (sp_twell_dist){.nnz = 150, .dead = 0, .tail = 0, .dense = 0, .dense_nnz = 2000, .at = 2});
    recover(M, F, (sp_twell_dist){.nnz = 300, .dead = 10, .tail = 1.0, .dense = 1, .dense_nnz = 3000, .at = 1});

    /* bad arguments */
    unsigned active[4] = {3, 1, 2, 9};
    unsigned long long counts[8] = {1, 2, 2, 3, 0, 0, 1, 1};   /* 10 active entries, as the tokens' say once mended */
    char buf[160] = "x", tiny[16] = "x";
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "token 3 has 9 active neurons of 8") && buf[0] == 0, "%s", sptune_last_error());
    active[3] = 4;
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 2, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_describe(0, active, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_describe(4, NULL, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 0, tiny, sizeof tiny), SPTUNE_ERR_INVALID);
    CHECK_MSG(tiny[0] == 0, "%s", tiny);
    /* counts no batch can have: a neuron active on more tokens than the batch has, tallies that disagree */
    counts[3] = 5;
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "neuron 3 is active on 5 tokens of 4"), "%s", sptune_last_error());
    counts[3] = 4;
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "add up to 10 active entries, the neurons' to 11"), "%s", sptune_last_error());
    counts[3] = 3;
    CHECK_ST(sptune_twell_describe(4, active, 8, counts, 64, 32, 0, buf, sizeof buf), SPTUNE_OK);
    CHECK_MSG(!strcmp(buf, "M=64,D=32,F=8,nnz=3,dead=25,tail=0.0,dense=0,dense_nnz=2000,at=2,order=0"), "%s", buf);
    CHECK_ST(sptune_twell_count_tokens(NULL, 1, 8, active), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_twell_describe_gate(NULL, 1, 8, 64, 32, 0, buf, sizeof buf), SPTUNE_ERR_INVALID);
    const unsigned short row[8] = {0x3f80, 0, 0xbf80, 0x3f80, 0, 0, 0, 0}; /* 1, 0, -1, 1: two active */
    CHECK_ST(sptune_twell_describe_gate(row, 1, 8, 64, 32, 0, buf, sizeof buf), SPTUNE_OK);
    CHECK_MSG(!strcmp(buf, "M=64,D=32,F=8,nnz=2,dead=75,tail=0.0,dense=0,dense_nnz=2000,at=2,order=0"), "%s", buf);
    return sp_test_done("test_twell_describe");
}

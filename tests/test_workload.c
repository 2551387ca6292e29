/* Workloads: the built-in list, a user's file (comments, notes, errors with the line), and
 * sharding that covers a list exactly once over N shards. */
#include "sp_status.h"
#include "sp_test.h"
#include "sp_workload.h"

#include <stdlib.h>
#include <string.h>

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void check_shards(const char *what, sp_workload (*make)(const char *), const char *arg)
{
    sp_workload all = make(arg);
    int *seen = calloc((size_t)all.n + 1, sizeof *seen);
    for (int n = 1; n <= 4; n++) {
        memset(seen, 0, ((size_t)all.n + 1) * sizeof *seen);
        for (int i = 1; i <= n; i++) {
            sp_workload w = make(arg);
            char spec[16];
            snprintf(spec, sizeof spec, "%d/%d", i, n);
            CHECK_ST(sp_workload_shard(&w, spec), SPTUNE_OK);
            for (int k = 0; k < w.n; k++)
                for (int j = 0; j < all.n; j++)
                    if (strcmp(w.items[k].problem, all.items[j].problem) == 0 && strcmp(w.items[k].op, all.items[j].op) == 0) seen[j]++;
            sp_workload_free(&w);
        }
        for (int j = 0; j < all.n; j++) CHECK_MSG(seen[j] == 1, "%s: %d shards: item %d seen %d times", what, n, j, seen[j]);
    }
    free(seen);
    sp_workload_free(&all);
}

static sp_workload make_default(const char *arg)
{
    sp_workload w;
    (void)arg;
    if (sp_workload_default(&w) != SPTUNE_OK) exit(1);
    return w;
}

static sp_workload make_file(const char *path)
{
    sp_workload w;
    if (sp_workload_load(path, &w) != SPTUNE_OK) exit(1);
    return w;
}

int main(void)
{
    /* the default list: the product first with the largest shares, gemm (the reference) last and least */
    {
        sp_workload d;
        CHECK_ST(sp_workload_default(&d), SPTUNE_OK);
        CHECK(d.n > 3 && strcmp(d.items[0].op, "twell-ffn") == 0 && strcmp(d.items[1].op, "slotfill-spmm") == 0);
        double gemm_max = 0, product_min = 1e9;
        for (int i = 0; i < d.n; i++) {
            CHECK(d.items[i].share > 0);
            if (strcmp(d.items[i].op, "gemm") == 0 && d.items[i].share > gemm_max) gemm_max = d.items[i].share;
            if (!strcmp(d.items[i].op, "twell-ffn") || !strcmp(d.items[i].op, "slotfill-spmm"))
                product_min = d.items[i].share < product_min ? d.items[i].share : product_min;
            if (i > 0 && strcmp(d.items[i - 1].op, "gemm") == 0)
                CHECK_MSG(!strcmp(d.items[i].op, "gemm"), "gemm before %s", d.items[i].op);
        }
        CHECK(gemm_max > 0 && gemm_max < product_min);
        sp_workload_free(&d);
    }
    const char *dir = sp_test_tmpdir("test_workload");
    char path[1200];
    snprintf(path, sizeof path, "%s/w.txt", dir);
    write_text(path, "# problems\n\ngemm  M=1,N=2,K=3\n  gemm\t4x5x6   the note stays\r\ntwell-d2t M=1,D=2,F=3,nnz=1\n");
    sp_workload w;
    CHECK_ST(sp_workload_load(path, &w), SPTUNE_OK);
    CHECK_EQ(w.n, 3);
    if (w.n == 3) {
        CHECK(strcmp(w.items[0].op, "gemm") == 0 && strcmp(w.items[0].problem, "M=1,N=2,K=3") == 0);
        CHECK(strcmp(w.items[1].problem, "4x5x6") == 0 && strcmp(w.items[1].why, "the note stays") == 0);
        CHECK(strcmp(w.items[2].op, "twell-d2t") == 0);
    }
    sp_workload_free(&w);
    check_shards("file", make_file, path);
    check_shards("default", make_default, NULL);

    write_text(path, "gemm M=1,N=2,K=3\ngemm\n");
    CHECK_ST(sp_workload_load(path, &w), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "w.txt:2:") != NULL);
    write_text(path, "# nothing\n\n");
    CHECK_ST(sp_workload_load(path, &w), SPTUNE_ERR_INVALID);
    snprintf(path, sizeof path, "%s/missing.txt", dir);
    CHECK_ST(sp_workload_load(path, &w), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_workload_default(&w), SPTUNE_OK);
    static const char *bad[] = {"0/2", "3/2", "1/0", "x", "1/2/3", "-1/2", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_ST(sp_workload_shard(&w, bad[i]), SPTUNE_ERR_INVALID);
    sp_workload_free(&w);
    return sp_test_done("test_workload");
}

/* sptune best: what the runtime API (sptune_kernel_get) serves an application for a problem:
 * the configuration, where it came from, and how each kernel is launched. */
#include "cli.h"
#include "sp_status.h"

#include <string.h>

int cmd_best(cli_cmd *cmd, int npos, char **pos)
{
    (void)npos;
    const char *shape = cli_get(cmd, "shape"), *gpu = cli_get(cmd, "gpu");
    char measured[256];
    int rc = cli_data_shape(cmd, pos[0], 0, 0, &shape, measured, sizeof measured);
    if (rc != CLI_OK) return rc;
    if (!shape) return cli_usage_error(cmd->name, "--shape is required (e.g. M=16384,D=2048,F=5632,nnz=40), or --data");
    const char *db = cli_get(cmd, "no-db") ? "" : cli_get(cmd, "db");
    sptune_kernel_request req = {.op = pos[0], .problem = shape, .gpu = gpu ? gpu : "auto", .db_path = db,
                                 .cache_dir = cli_get(cmd, "cache-dir"),
                                 .ignore_shipped = cli_get(cmd, "no-shipped") != NULL,
                                 .fixed = cli_get(cmd, "fixed")};
    sptune_kernel *k = NULL;
    sptune_status st = sptune_kernel_get(&req, &k);
    if (st != SPTUNE_OK) {
        rc = cli_error(cmd->name, st);
        if (st == SPTUNE_ERR_NOT_FOUND || st == SPTUNE_ERR_INVALID) return CLI_USAGE;
        return st == SPTUNE_ERR_NO_GPU ? CLI_NO_GPU : rc;
    }
    static const char *origins[] = {"exact", "nearest", "default", "same architecture"};
    const char *detail = NULL;
    sptune_origin o = sptune_kernel_origin(k, &detail);
    printf("%s %s: %s (%s: %s)\n", pos[0], shape, sptune_kernel_config(k), origins[o], detail);
    double ms = -1, base = -1;
    sptune_kernel_expected(k, &ms, &base);
    if (ms > 0 && base > 0 && base < ms)
        printf("  the dense baseline is faster here: %.4f ms against %.4f ms (%.2fx): run it instead\n", base, ms, base / ms);
    /* twell-ffn's hot/cold split (but for hot=8, the dense layer) pays only on weights in calibrated
       order (problems with order=1): say so where it is served */
    long long h = 0;
    sp_template *t = NULL;
    sp_config c;
    if (strcmp(pos[0], "twell-ffn") == 0 && sp_template_load(pos[0], &t) == SPTUNE_OK &&
        sp_config_parse(t, sptune_kernel_config(k), &c) == SPTUNE_OK)
        h = sp_config_int(t, &c, "hot");
    sp_template_free(t);
    sp_clear_error();
    if (h > 0 && h < 8)
        printf("  hot=%lld: the first %lld/8 of the neurons run as a dense slice; it assumes them ordered most frequent"
               " first (order=1: sptune_twell_hot_order), in another order exact but slower\n", h, h);
    if (*sptune_kernel_signature(k)) printf("  arguments: %s\n", sptune_kernel_signature(k));
    size_t typical = 0, bound = 0;
    if (sptune_kernel_workspace(k, 0, &typical) == SPTUNE_OK && sptune_kernel_workspace(k, 1, &bound) == SPTUNE_OK &&
        bound > 0) {
        printf("  workspace: %.1f MiB for activations like real models', %.1f MiB that no data exceeds;",
               typical / 1048576.0, bound / 1048576.0);
        for (int i = 0; i < sptune_kernel_arg_count(k); i++) {
            sptune_arg a = {.size = sizeof(sptune_arg)};
            if (sptune_kernel_arg(k, i, &a) == SPTUNE_OK && a.typical >= 0)
                printf(" %s=%lld (bound %lld)", a.name, a.typical, a.bound);
        }
        printf("\n");
    }
    for (int i = 0; i < sptune_kernel_launches(k); i++) {
        unsigned grid[3], block[3], smem;
        if (sptune_kernel_geometry(k, i, grid, block, &smem) == SPTUNE_OK)
            printf("  kernel %d: grid (%u, %u, %u), block (%u, %u, %u), %u bytes of dynamic shared memory\n", i + 1,
                   grid[0], grid[1], grid[2], block[0], block[1], block[2], smem);
    }
    sptune_kernel_free(k);
    return CLI_OK;
}

/* sptune info: what this machine offers (GPUs, driver, NVRTC, where data lives). */
#include "cli.h"
#include "sp_nvrtc.h"

int cmd_info(cli_cmd *cmd, int npos, char **pos)
{
    char buf[4096];
    int nv_major = 0, nv_minor = 0;
    (void)npos; (void)pos;
    printf("sptune %s\n", sptune_version());
    if (sp_nvrtc_version(&nv_major, &nv_minor) == SPTUNE_OK)
        printf("NVRTC      %d.%d\n", nv_major, nv_minor);
    else
        printf("NVRTC      unavailable: %s\n", sptune_last_error());
    const char *db = cli_get(cmd, "db");
    if (!db && sptune_default_db_path(buf, sizeof buf) == SPTUNE_OK) db = buf;
    printf("database   %s\n", db ? db : "?");
    const char *cache = cli_get(cmd, "cache-dir");
    char cbuf[4096];
    if (!cache && sptune_default_cache_dir(cbuf, sizeof cbuf) == SPTUNE_OK) cache = cbuf;
    printf("cache      %s\n", cache ? cache : "?");
    int count = 0;
    sptune_status st = sptune_gpu_count(&count);
    if (st != SPTUNE_OK) {
        fprintf(stderr, "GPUs       none: %s\n", sptune_last_error()); /* the message says what is missing */
        return CLI_NO_GPU;
    }
    char drv[32] = "?";
    sptune_driver_version(drv, sizeof drv);
    printf("driver     CUDA %s\n", drv);
    for (int i = 0; i < count; i++) {
        sptune_gpu_info g = {.size = sizeof(sptune_gpu_info)};
        if ((st = sptune_gpu_get(i, &g)) != SPTUNE_OK) {
            printf("GPU %d      %s\n", i, sptune_last_error());
            continue;
        }
        printf("GPU %d      %s (profile %s, %s, cc %d.%d, %d SMs, %.1f GiB, L2 %d MiB, smem/block %d KiB)\n", i,
               g.name, g.profile, g.arch, g.cc_major, g.cc_minor, g.sm_count,
               (double)g.total_mem_bytes / (1024.0 * 1024 * 1024), g.l2_bytes >> 20, g.smem_per_block_optin >> 10);
    }
    return CLI_OK;
}

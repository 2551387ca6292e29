/* Public API: GPUs, versions and default locations. */
#include "sp_cuda.h"
#include "sp_gpu.h"
#include "sp_nvrtc.h"
#include "sp_status.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

sptune_status sptune_gpu_count(int *count)
{
    if (!count) return sp_fail(SPTUNE_ERR_INVALID, "sptune_gpu_count: no output");
    *count = 0;
    const sp_cuda_api *api;
    sptune_status st = sp_cuda_load(&api);
    if (st != SPTUNE_OK) return st;
    int n = 0;
    st = SP_CU(api->DeviceGetCount(&n));
    if (st != SPTUNE_OK) return st;
    if (n <= 0) return sp_fail(SPTUNE_ERR_NO_GPU, "no CUDA device (the NVIDIA driver reports none)");
    *count = n;
    return SPTUNE_OK;
}

sptune_status sptune_gpu_get(int ordinal, sptune_gpu_info *info)
{
    if (!info) return sp_fail(SPTUNE_ERR_INVALID, "sptune_gpu_get: no output");
    sp_gpu_profile p;
    sptune_status st = sp_gpu_profile_device(ordinal, &p);
    if (st != SPTUNE_OK) return st;
    *info = p.info;
    return SPTUNE_OK;
}

sptune_status sptune_gpu_profile(const char *name, sptune_gpu_info *info)
{
    if (!info) return sp_fail(SPTUNE_ERR_INVALID, "sptune_gpu_profile: no output");
    if (!name || !*name) return sp_fail(SPTUNE_ERR_INVALID, "GPU profile: no name given");
    sp_gpu_profile p;
    sptune_status st;
    if (strcasecmp(name, "auto") == 0) {
        int n = 0;
        st = sptune_gpu_count(&n);
        if (st != SPTUNE_OK) return sp_wrap(st, "cannot detect a GPU for 'auto'");
        st = sp_gpu_profile_device(0, &p);
    } else {
        st = sp_gpu_profile_named(name, &p);
    }
    if (st != SPTUNE_OK) return st;
    *info = p.info;
    return SPTUNE_OK;
}

static sptune_status sp_copy_out(char *buf, size_t len, const char *text, const char *what)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no buffer", what);
    size_t n = strlen(text);
    if (n + 1 > len)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: buffer of %zu bytes is too small (%zu needed)", what, len, n + 1);
    memcpy(buf, text, n + 1);
    return SPTUNE_OK;
}

sptune_status sptune_driver_version(char *buf, size_t len)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "sptune_driver_version: no buffer");
    buf[0] = 0;
    /* Kept once known: a process forked after the driver was initialised (the CLI's per-GPU
     * coordinators) must not call into it again, and the answer cannot change. Concurrent first
     * calls write the same bytes. */
    static char known[32];
    if (known[0]) return sp_copy_out(buf, len, known, "sptune_driver_version");
    const sp_cuda_api *api;
    sptune_status st = sp_cuda_driver(&api);
    if (st != SPTUNE_OK) return st;
    int v = 0;
    st = SP_CU(api->DriverGetVersion(&v));
    if (st != SPTUNE_OK) return st;
    char text[32];
    snprintf(text, sizeof text, "%d.%d", v / 1000, (v % 1000) / 10);
    memcpy(known, text, sizeof known);
    return sp_copy_out(buf, len, text, "sptune_driver_version");
}

sptune_status sptune_nvrtc_version(char *buf, size_t len)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "sptune_nvrtc_version: no buffer");
    buf[0] = 0;
    int ma, mi;
    sptune_status st = sp_nvrtc_version(&ma, &mi);
    if (st != SPTUNE_OK) return st;
    char text[32];
    snprintf(text, sizeof text, "%d.%d", ma, mi);
    return sp_copy_out(buf, len, text, "sptune_nvrtc_version");
}

/* $direct, else $xdg/<leaf> (an absolute $xdg only, as the XDG spec asks), else ~/<home_rel>/<leaf>. */
static sptune_status sp_default_path(char *buf, size_t len, const char *direct, const char *xdg,
                                     const char *home_rel, const char *leaf, const char *what)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no buffer", what);
    buf[0] = 0;
    const char *d = getenv(direct);
    if (d && *d) return sp_copy_out(buf, len, d, what);
    sptune_status st;
    char *path = NULL;
    const char *x = getenv(xdg);
    struct passwd pw, *pwres = NULL;
    char pwbuf[4096];
    if (x && x[0] == '/') {
        path = sp_asprintf("%s/%s", x, leaf);
    } else {
        const char *home = getenv("HOME");
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &pwres) == 0 && pwres)
            home = pwres->pw_dir;
        if (!home || !*home)
            return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s: no home folder (HOME is not set); set %s", what, direct);
        path = sp_asprintf("%s/%s/%s", home, home_rel, leaf);
    }
    if (!path) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    st = sp_copy_out(buf, len, path, what);
    free(path);
    return st;
}

sptune_status sptune_default_db_path(char *buf, size_t len)
{
    return sp_default_path(buf, len, "SPTUNE_DB", "XDG_DATA_HOME", ".local/share", "sptune/tuning.db",
                           "default database path");
}

sptune_status sptune_default_cache_dir(char *buf, size_t len)
{
    return sp_default_path(buf, len, "SPTUNE_CACHE_DIR", "XDG_CACHE_HOME", ".cache", "sptune/kernels",
                           "default kernel cache folder");
}

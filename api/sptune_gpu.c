/* Public API: GPUs, versions and default locations. */
#include "sp_cuda.h"
#include "sp_gpu.h"
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sp_file.h"

#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* sptune_gpu_info as 0.5 had it, the first with a size field */
#define GPU_INFO_05 (offsetof(sptune_gpu_info, total_mem_bytes) + sizeof(size_t))

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
    return sp_out_struct(info, &p.info, sizeof p.info, GPU_INFO_05, "sptune_gpu_get");
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
        st = sp_gpu_profile_current(&p);
    } else {
        st = sp_gpu_profile_named(name, &p);
    }
    if (st != SPTUNE_OK) return st;
    return sp_out_struct(info, &p.info, sizeof p.info, GPU_INFO_05, "sptune_gpu_profile");
}

sptune_status sptune_driver_version(char *buf, size_t len) { return sp_cuda_driver_version_text(buf, len); }
sptune_status sptune_nvrtc_version(char *buf, size_t len) { return sp_nvrtc_version_text(buf, len); }
sptune_status sptune_default_db_path(char *buf, size_t len) { return sp_default_db_path(buf, len); }
sptune_status sptune_default_cache_dir(char *buf, size_t len) { return sp_default_cache_dir(buf, len); }

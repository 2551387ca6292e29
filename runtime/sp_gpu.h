/* GPU profiles: what templates and the tuner know about a target. A profile comes from a name
 * (h100, h200, rtx-pro-6000, sm_XX) with no GPU present, or from a device's properties. */
#ifndef SP_GPU_H
#define SP_GPU_H

#include "sptune.h"

typedef struct sp_gpu_profile {
    sptune_gpu_info info;
    /* Features templates branch on (derived from the architecture). */
    int has_wgmma;   /* sm_90a */
    int has_tma;     /* sm_90+ */
    int has_cluster; /* sm_90+ */
    int has_mma_sp;  /* sm_80+ sparse mma.sync */
    int has_cp_async;/* sm_80+ */
} sp_gpu_profile;

/* From a name: "h100", "h200", "rtx-pro-6000", "sm_80", "sm_90a", "sm_120", ... ("auto" and
 * "all" are resolved by the caller through the driver). Unknown names: SPTUNE_ERR_NOT_FOUND
 * with the list of accepted names in the message. */
sptune_status sp_gpu_profile_named(const char *name, sp_gpu_profile *out);
/* From device `ordinal` through the driver; a known board gets its named profile's extras,
 * anything else sm_80+ gets a generic profile from its properties; older GPUs: UNSUPPORTED. */
sptune_status sp_gpu_profile_device(int ordinal, sp_gpu_profile *out);
/* "auto": the device of the calling thread's current CUDA context, else device 0. */
sptune_status sp_gpu_profile_current(sp_gpu_profile *out);
/* Fill derived fields (features, arch string) from cc_major/cc_minor. */
void sp_gpu_profile_derive(sp_gpu_profile *p);

#endif

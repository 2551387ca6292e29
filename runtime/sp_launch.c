#include "sp_launch.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <stdio.h>
#include <string.h>

sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    memset(out, 0, sizeof *out);
    if ((st = SP_CU(cu->ModuleLoadData(&out->module, cubin->image))) != SPTUNE_OK) return st;
    if ((st = sp_cuda_check(cu->ModuleGetFunction(&out->fn, out->module, src->kernel), src->kernel)) != SPTUNE_OK)
        goto fail;
    if (src->smem > 48 * 1024 &&
        (st = SP_CU(cu->FuncSetAttribute(out->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)src->smem))) != SPTUNE_OK)
        goto fail;
    snprintf(out->name, sizeof out->name, "%s", src->kernel);
    memcpy(out->grid, src->grid, sizeof out->grid);
    memcpy(out->block, src->block, sizeof out->block);
    memcpy(out->cluster, src->cluster, sizeof out->cluster);
    out->smem = src->smem;
    return SPTUNE_OK;
fail:
    cu->ModuleUnload(out->module);
    out->module = NULL;
    return st;
}

sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    if (k->grid[0] == 0 || k->grid[1] == 0 || k->grid[2] == 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: empty grid (was a problem given when rendering?)", k->name);
    int clustered = k->cluster[0] * k->cluster[1] * k->cluster[2] > 1;
    if (!clustered)
        return sp_cuda_check(cu->LaunchKernel(k->fn, k->grid[0], k->grid[1], k->grid[2], k->block[0],
                                              k->block[1], k->block[2], k->smem, stream, args, NULL),
                             k->name);
    if (!cu->LaunchKernelEx)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s needs thread-block clusters; the driver lacks cuLaunchKernelEx", k->name);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = k->cluster[0];
    attr.value.clusterDim.y = k->cluster[1];
    attr.value.clusterDim.z = k->cluster[2];
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = k->grid[0]; cfg.gridDimY = k->grid[1]; cfg.gridDimZ = k->grid[2];
    cfg.blockDimX = k->block[0]; cfg.blockDimY = k->block[1]; cfg.blockDimZ = k->block[2];
    cfg.sharedMemBytes = k->smem;
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    return sp_cuda_check(cu->LaunchKernelEx(&cfg, k->fn, args, NULL), k->name);
}

void sp_kernel_unload(sp_kernel *k)
{
    const sp_cuda_api *cu;
    if (k->module && sp_cuda_load(&cu) == SPTUNE_OK) cu->ModuleUnload(k->module);
    memset(k, 0, sizeof *k);
}

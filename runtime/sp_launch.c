#include "sp_launch.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

sptune_status sp_variant_build(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *p,
                               sp_cache *cache, sp_kernel_src *src, sp_cubin *cub)
{
    memset(cub, 0, sizeof *cub);
    sptune_status st = sp_template_emit(t, c, gpu, p, src);
    if (st != SPTUNE_OK) return st;
    st = sp_kernel_build(cache, src->source, src->kernel, gpu->info.arch, (const char *const *)src->options,
                         src->noptions, cub);
    if (st != SPTUNE_OK) sp_kernel_src_free(src);
    return st;
}

/* One function of the module with its geometry, its shared-memory limit raised as needed. */
static sptune_status load_fn(const sp_cuda_api *cu, CUmodule m, const sp_kernel_stage *k, sp_kernel_fn *out)
{
    const char *name = k->kernel;
    unsigned smem = k->smem;
    sptune_status st = sp_cuda_check(cu->ModuleGetFunction(&out->fn, m, name), name);
    if (st != SPTUNE_OK) return st;
    if (smem > 48 * 1024 &&
        (st = SP_CU(cu->FuncSetAttribute(out->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem))) != SPTUNE_OK)
        return st;
    snprintf(out->name, sizeof out->name, "%s", name);
    memcpy(out->grid, k->grid, sizeof out->grid);
    memcpy(out->block, k->block, sizeof out->block);
    memcpy(out->cluster, k->cluster, sizeof out->cluster);
    out->smem = smem;
    out->tmaps = k->tmaps;
    return SPTUNE_OK;
}

sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    memset(out, 0, sizeof *out);
    if (src->nthen < 0 || src->nthen > SP_MAX_THEN) return sp_fail(SPTUNE_ERR_INVALID, "%s: bad pipeline", src->kernel);
    if ((st = SP_CU(cu->ModuleLoadData(&out->module, cubin->image))) != SPTUNE_OK) return st;
    sp_kernel_stage head;
    memcpy(head.kernel, src->kernel, sizeof head.kernel);
    memcpy(head.grid, src->grid, sizeof head.grid);
    memcpy(head.block, src->block, sizeof head.block);
    memcpy(head.cluster, src->cluster, sizeof head.cluster);
    head.smem = src->smem;
    head.tmaps = src->tmaps;
    if ((st = load_fn(cu, out->module, &head, &out->head)) != SPTUNE_OK) goto fail;
    for (int i = 0; i < src->nthen; i++)
        if ((st = load_fn(cu, out->module, &src->then[i], &out->then[i])) != SPTUNE_OK) goto fail;
    out->nthen = src->nthen;
    return SPTUNE_OK;
fail:
    cu->ModuleUnload(out->module);
    out->module = NULL;
    return st;
}

/* The tensor map of spec s over the device pointer held by ordinary argument s->arg. */
static sptune_status encode_tmap(const sp_cuda_api *cu, const sp_kernel_fn *k, const sp_tmap_spec *s, void **args,
                                 CUtensorMap *out)
{
    if (!cu->TensorMapEncodeTiled)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s needs tensor maps; the driver lacks cuTensorMapEncodeTiled", k->name);
    CUdeviceptr ptr;
    memcpy(&ptr, args[s->arg], sizeof ptr);
    /* the copy engine's rules, said plainly instead of as CUDA_ERROR_INVALID_VALUE */
    if (ptr % 16 != 0 || (s->cols * 2) % 16 != 0)
        return sp_fail(SPTUNE_ERR_INVALID,
                       "%s: argument %d (%llu x %llu bf16) must start on 16 bytes and have rows of a multiple of 16 "
                       "bytes for the copy engine", k->name, s->arg, s->rows, s->cols);
    cuuint64_t dims[2] = {s->cols, s->rows}, strides[1] = {s->cols * 2};
    cuuint32_t box[2] = {s->box_cols, s->box_rows}, estr[2] = {1, 1};
    CUtensorMapSwizzle sw = s->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                            : s->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                            : s->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
    return sp_cuda_check(cu->TensorMapEncodeTiled(out, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)(uintptr_t)ptr, dims,
                                                  strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                         k->name);
}

static sptune_status launch_fn(const sp_cuda_api *cu, const sp_kernel_fn *k, CUstream stream, void **args)
{
    void *with_maps[64 + SP_MAX_TMAPS]; /* nargs <= 64: the template parser's limit */
    CUtensorMap maps[SP_MAX_TMAPS];
    /* encoded at every launch: a host-side call of ~1 us, and the caller's pointers may change
       from one launch to the next (the runtime API's do) */
    if (k->tmaps.n > 0) {
        for (int i = 0; i < k->tmaps.nargs; i++) with_maps[i] = args[i];
        for (int i = 0; i < k->tmaps.n; i++) {
            sptune_status st = encode_tmap(cu, k, &k->tmaps.v[i], args, &maps[i]);
            if (st != SPTUNE_OK) return st;
            with_maps[k->tmaps.nargs + i] = &maps[i];
        }
        args = with_maps;
    }
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

sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    if ((st = launch_fn(cu, &k->head, stream, args)) != SPTUNE_OK) return st;
    for (int i = 0; i < k->nthen && i < SP_MAX_THEN; i++)
        if ((st = launch_fn(cu, &k->then[i], stream, args)) != SPTUNE_OK) return st;
    return SPTUNE_OK;
}

void sp_kernel_unload(sp_kernel *k)
{
    const sp_cuda_api *cu;
    if (k->module && sp_cuda_load(&cu) == SPTUNE_OK) cu->ModuleUnload(k->module);
    memset(k, 0, sizeof *k);
}

#include "sp_launch.h"
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_str.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Raises f's dynamic shared-memory limit (*limit) to smem when above it. */
static sptune_status raise_smem(const sp_cuda_api *cu, CUfunction f, unsigned smem, unsigned *limit)
{
    if (smem <= *limit) return SPTUNE_OK;
    sptune_status st = SP_CU(cu->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
    if (st == SPTUNE_OK) *limit = smem;
    return st;
}

/* One function of the module with its geometry, its shared-memory limit raised as needed. */
static sptune_status load_fn(const sp_cuda_api *cu, CUmodule m, const sp_kernel_stage *k, sp_kernel_fn *out)
{
    sptune_status st = sp_cuda_check(cu->ModuleGetFunction(&out->fn, m, k->kernel), k->kernel);
    if (st != SPTUNE_OK) return st;
    out->smem_limit = 48 * 1024;
    if ((st = raise_smem(cu, out->fn, k->smem, &out->smem_limit)) != SPTUNE_OK) return st;
    out->at = *k;
    return SPTUNE_OK;
}

sptune_status sp_kernel_load(const sp_cubin *cubin, const sp_kernel_src *src, sp_kernel *out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    memset(out, 0, sizeof *out);
    if (src->nkernels < 1 || src->nkernels > SP_MAX_KERNELS)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: bad pipeline of %d kernels", src->stage[0].kernel, src->nkernels);
    if ((st = SP_CU(cu->ModuleLoadData(&out->module, cubin->image))) != SPTUNE_OK) return st;
    for (int i = 0; i < src->nkernels; i++)
        if ((st = load_fn(cu, out->module, &src->stage[i], &out->fn[i])) != SPTUNE_OK) goto fail;
    out->n = src->nkernels;
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
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s needs tensor maps; the driver lacks cuTensorMapEncodeTiled", k->at.kernel);
    CUdeviceptr ptr;
    memcpy(&ptr, args[s->arg], sizeof ptr);
    /* the copy engine's rules, said plainly instead of as CUDA_ERROR_INVALID_VALUE */
    if (ptr % 16 != 0 || (s->cols * 2) % 16 != 0)
        return sp_fail(SPTUNE_ERR_INVALID,
                       "%s: argument %d (%llu x %llu bf16) must start on 16 bytes and have rows of a multiple of 16 "
                       "bytes for the copy engine", k->at.kernel, s->arg, s->rows, s->cols);
    unsigned long long rows = s->rows;
    if (s->rows_arg >= 0) {   /* a capacity the caller chose caps the rows: the map never reaches past its buffer */
        long long cap;
        if (s->rows_arg_u64) {
            unsigned long long u;
            memcpy(&u, args[s->rows_arg], sizeof u);
            cap = u > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)u;
        } else {
            int32_t v;
            memcpy(&v, args[s->rows_arg], sizeof v);
            cap = v;
        }
        rows = cap < 1 ? 1 : ((unsigned long long)cap < rows ? (unsigned long long)cap : rows);
    }
    cuuint64_t dims[2] = {s->cols, rows}, strides[1] = {s->cols * 2};
    cuuint32_t box[2] = {s->box_cols, s->box_rows}, estr[2] = {1, 1};
    CUtensorMapSwizzle sw = s->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                            : s->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                            : s->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
    return sp_cuda_check(cu->TensorMapEncodeTiled(out, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)(uintptr_t)ptr, dims,
                                                  strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                         k->at.kernel);
}

static sptune_status launch_fn(const sp_cuda_api *cu, const sp_kernel_fn *k, CUstream stream, void **args)
{
    void *with_maps[64 + SP_MAX_TMAPS]; /* nargs <= 64: the template parser's limit */
    CUtensorMap maps[SP_MAX_TMAPS];
    /* encoded at every launch: a host-side call of ~1 us, and the caller's pointers may change
       from one launch to the next (the runtime API's do) */
    if (k->at.tmaps.n > 0) {
        for (int i = 0; i < k->at.tmaps.nargs; i++) with_maps[i] = args[i];
        for (int i = 0; i < k->at.tmaps.n; i++) {
            sptune_status st = encode_tmap(cu, k, &k->at.tmaps.v[i], args, &maps[i]);
            if (st != SPTUNE_OK) return st;
            with_maps[k->at.tmaps.nargs + i] = &maps[i];
        }
        args = with_maps;
    }
    if (k->at.grid[0] == 0 || k->at.grid[1] == 0 || k->at.grid[2] == 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: empty grid (was a problem given when rendering?)", k->at.kernel);
    int clustered = k->at.cluster[0] * k->at.cluster[1] * k->at.cluster[2] > 1;
    if (!clustered && (!k->at.pdl || !cu->LaunchKernelEx))   /* pdl: a plain launch is still correct, only later */
        return sp_cuda_check(cu->LaunchKernel(k->fn, k->at.grid[0], k->at.grid[1], k->at.grid[2], k->at.block[0],
                                              k->at.block[1], k->at.block[2], k->at.smem, stream, args, NULL),
                             k->at.kernel);
    if (!cu->LaunchKernelEx)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s needs thread-block clusters; the driver lacks cuLaunchKernelEx", k->at.kernel);
    CUlaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    unsigned n = 0;
    if (clustered) {
        attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[n].value.clusterDim.x = k->at.cluster[0];
        attr[n].value.clusterDim.y = k->at.cluster[1];
        attr[n].value.clusterDim.z = k->at.cluster[2];
        n++;
    }
    if (k->at.pdl) {
        attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr[n].value.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = k->at.grid[0]; cfg.gridDimY = k->at.grid[1]; cfg.gridDimZ = k->at.grid[2];
    cfg.blockDimX = k->at.block[0]; cfg.blockDimY = k->at.block[1]; cfg.blockDimZ = k->at.block[2];
    cfg.sharedMemBytes = k->at.smem;
    cfg.hStream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = n;
    CUresult r = cu->LaunchKernelEx(&cfg, k->fn, args, NULL);
    /* a driver or stream (a graph being captured on an old driver) that refuses the early launch: the kernel
       waits for nothing then, and stream order alone keeps the pipeline correct */
    if (k->at.pdl && (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE)) {
        cfg.numAttrs = n - 1;
        r = cu->LaunchKernelEx(&cfg, k->fn, args, NULL);
    }
    return sp_cuda_check(r, k->at.kernel);
}

sptune_status sp_kernel_launch(const sp_kernel *k, CUstream stream, void **args)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    for (int i = 0; i < k->n; i++)
        if ((st = launch_fn(cu, &k->fn[i], stream, args)) != SPTUNE_OK) return st;
    return SPTUNE_OK;
}

sptune_status sp_kernel_launch_stages(sp_kernel *k, const sp_kernel_stage *stages, CUstream stream, void **args)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    for (int i = 0; i < k->n; i++) {
        sp_kernel_fn f = {k->fn[i].fn, stages[i], k->fn[i].smem_limit};
        if (strcmp(stages[i].kernel, k->fn[i].at.kernel) != 0)
            return sp_fail(SPTUNE_ERR_INVALID, "kernel %d is %s, the geometry given is %s's", i, k->fn[i].at.kernel,
                           stages[i].kernel);
        if ((st = raise_smem(cu, f.fn, stages[i].smem, &k->fn[i].smem_limit)) != SPTUNE_OK ||
            (st = launch_fn(cu, &f, stream, args)) != SPTUNE_OK)
            return st;
    }
    return SPTUNE_OK;
}

void sp_kernel_unload(sp_kernel *k)
{
    const sp_cuda_api *cu;
    if (k->module && sp_cuda_load(&cu) == SPTUNE_OK) cu->ModuleUnload(k->module);
    memset(k, 0, sizeof *k);
}

void sp_kernel_src_free(sp_kernel_src *k)
{
    if (!k) return;
    free(k->source);
    sp_strv_free(k->options);
    memset(k, 0, sizeof *k);
}

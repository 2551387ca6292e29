/* Slot-Filling weights on the device with what they are (M, K, data type, encoding), so that the launch
 * helper can refuse a kernel they were not encoded for instead of letting it read them: the raw pointer
 * route has only the kernel's device-side header check, which turns a foreign image into NaN outputs. */
#include "sp_cuda.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sptune_kernel_object.h"

#include <stdlib.h>
#include <string.h>

struct sptune_slotfill_gpu {
    unsigned long long image;   /* device address of the image */
    long long M, K;
    char fixed[160];            /* sptune_slotfill_fixed: the configuration parameters the encoding takes */
    CUcontext ctx;              /* the context current when the image was placed (NULL: none was) */
    int owned;                  /* uploaded here: freed with the handle */
};

/* A handle for m (no image yet) in *g; the caller's *out cleared first. */
static sptune_status make(const sptune_slotfill *m, const char *fn, sptune_slotfill_gpu **out, sptune_slotfill_gpu **g)
{
    *g = NULL;
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "%s: no output", fn);
    *out = NULL;
    if (!m) return sp_fail(SPTUNE_ERR_INVALID, "%s: no matrix", fn);
    sptune_slotfill_info info = {.size = sizeof info};
    sptune_status st = sptune_slotfill_info_get(m, &info);
    if (st != SPTUNE_OK) return st;
    if (!(*g = calloc(1, sizeof **g))) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    (*g)->M = info.M;
    (*g)->K = info.K;
    strncpy((*g)->fixed, sptune_slotfill_fixed(m), sizeof (*g)->fixed - 1);
    return SPTUNE_OK;
}

sptune_status sptune_slotfill_upload(const sptune_slotfill *m, sptune_slotfill_gpu **out)
{
    sptune_slotfill_gpu *g;
    sptune_status st = make(m, "sptune_slotfill_upload", out, &g);
    if (st != SPTUNE_OK) return st;
    const sp_cuda_api *cu;
    CUdeviceptr d = 0;
    size_t bytes = 0;
    const void *img = sptune_slotfill_image(m, &bytes);
    if ((st = sp_cuda_load(&cu)) != SPTUNE_OK) goto fail;
    if (!cu->CtxGetCurrent) {
        st = sp_fail(SPTUNE_ERR_UNSUPPORTED, "sptune_slotfill_upload: the driver lacks cuCtxGetCurrent");
        goto fail;
    }
    if ((st = SP_CU(cu->CtxGetCurrent(&g->ctx))) != SPTUNE_OK) goto fail;
    if (!g->ctx) {
        st = sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_upload: no CUDA context is current on this thread (make the "
                     "device's context current first: the kernels launch in it too)");
        goto fail;
    }
    if ((st = SP_CU(cu->MemAlloc(&d, bytes))) != SPTUNE_OK) goto fail;
    if ((st = SP_CU(cu->MemcpyHtoD(d, img, bytes))) != SPTUNE_OK) {
        cu->MemFree(d);
        goto fail;
    }
    g->image = d;
    g->owned = 1;
    *out = g;
    return SPTUNE_OK;
fail:
    free(g);
    return st;
}

sptune_status sptune_slotfill_adopt(const sptune_slotfill *m, unsigned long long image, size_t bytes,
                                    sptune_slotfill_gpu **out)
{
    sptune_slotfill_gpu *g;
    sptune_status st = make(m, "sptune_slotfill_adopt", out, &g);
    if (st != SPTUNE_OK) return st;
    size_t need = 0;
    sptune_slotfill_image(m, &need);
    /* the kernels read the image 16 bytes at a time (bulk copies, vector loads) */
    if (!image || bytes < need || image % 16 != 0) {
        st = sp_fail(SPTUNE_ERR_INVALID, "sptune_slotfill_adopt: %s (the image takes %zu bytes)",
                     !image ? "no device memory" : image % 16 ? "the device address is not 16-byte aligned"
                                                             : "the device memory is smaller than the image", need);
        free(g);
        return st;
    }
    g->image = image;
    /* the context it lives in, where one is current (without a driver the launch will say so) */
    const sp_cuda_api *cu;
    if (sp_cuda_load(&cu) == SPTUNE_OK && cu->CtxGetCurrent && cu->CtxGetCurrent(&g->ctx) != CUDA_SUCCESS) g->ctx = NULL;
    sp_clear_error();
    *out = g;
    return SPTUNE_OK;
}

unsigned long long sptune_slotfill_gpu_image(const sptune_slotfill_gpu *g) { return g ? g->image : 0; }

void sptune_slotfill_gpu_free(sptune_slotfill_gpu *g)
{
    if (!g) return;
    const sp_cuda_api *cu;
    if (g->owned && sp_cuda_load(&cu) == SPTUNE_OK) cu->MemFree((CUdeviceptr)g->image);
    free(g);
}

sptune_status sp_api_slotfill_weights(const sptune_kernel *k, const sptune_slotfill_gpu *w, const char *fn,
                                      unsigned long long *image)
{
    if (!k || !w) return sp_fail(SPTUNE_ERR_INVALID, "%s: no kernel or no weights", fn);
    if (strcmp(k->op, "slotfill-spmm") != 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the kernel is %s's, not slotfill-spmm's", fn, k->op);
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        const long long want = !strcmp(x->decl.name, "M") ? w->M : !strcmp(x->decl.name, "K") ? w->K : -1;
        if (x->decl.role == SP_ROLE_DIM && want >= 0 && x->dim != want)
            return sp_fail(SPTUNE_ERR_INVALID, "%s: the weights are %lld x %lld (M x K), the kernel was got for %s=%lld",
                           fn, w->M, w->K, x->decl.name, x->dim);
    }
    /* every parameter the encoding fixes must be the kernel's */
    for (const char *p = w->fixed; *p;) {
        const size_t klen = strcspn(p, "=");
        size_t nw = 0, nk = 0;
        const char *vw = sp_kv_find(w->fixed, p, klen, &nw), *vk = sp_kv_find(k->config, p, klen, &nk);
        if (vw && (!vk || nw != nk || strncmp(vw, vk, nw) != 0))
            return sp_fail(SPTUNE_ERR_INVALID, "%s: the weights were encoded with %.*s=%.*s, the kernel reads %.*s=%.*s "
                           "(get the kernel with sptune_slotfill_fixed(m) as the request's fixed)", fn, (int)klen, p,
                           (int)nw, vw ? vw : "", (int)klen, p, (int)nk, vk ? vk : "?");
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    if (w->ctx) {   /* (known only where the driver has cuCtxGetCurrent) */
        const sp_cuda_api *cu;
        CUcontext cur = NULL;
        sptune_status st = sp_cuda_load(&cu);
        if (st == SPTUNE_OK) st = SP_CU(cu->CtxGetCurrent(&cur));
        if (st != SPTUNE_OK) return st;
        if (cur != w->ctx)
            return sp_fail(SPTUNE_ERR_INVALID, "%s: the weights live in another CUDA context than the current one", fn);
    }
    *image = w->image;
    return SPTUNE_OK;
}

/* Slot-Filling weights kept with their parameters (sptune_slotfill_adopt/upload, sptune_slotfill_apply): a kernel
 * got for another shape, data type, encoding or op is refused before anything is launched, with a message naming
 * the difference; the matching kernel goes on to the launch (an empty batch: no launch at all). Kernels are got
 * for the H200 profile and compiled with NVRTC; no GPU is needed (where one is, nothing here launches a fake
 * address: the GPU test launches real uploaded weights). */
#include "sp_rng.h"
#include "sp_slotfill_dist.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"

#include <stdlib.h>
#include <string.h>


static sptune_kernel *get(const char *cache, const char *op, const char *problem, const char *fixed)
{
    sptune_kernel_request req = {.op = op, .problem = problem, .gpu = "h200", .db_path = "", .cache_dir = cache,
                                 .ignore_shipped = 1, .fixed = fixed};
    sptune_kernel *k = NULL;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    return k;
}

int main(void)
{
    const char *cache = sp_test_cache_dir("test_slotfill_weights");
    enum { M = 256, K = 384 };
    uint64_t rng = 0x5eed;
    unsigned short *w = malloc((size_t)M * K * 2);
    CHECK(w != NULL);
    if (!w) return sp_test_done("test_slotfill_weights");
    CHECK_ST(sp_slotfill_draw(&rng, M, K, 0.5, 2, 0, w), SPTUNE_OK);
    sptune_slotfill *m = NULL, *m16 = NULL, *list = NULL;
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, NULL, &m), SPTUNE_OK);
    CHECK_ST(sptune_slotfill_encode(w, M, K, 1, NULL, &m16), SPTUNE_OK);
    CHECK_ST(sptune_slotfill_encode(w, M, K, 0, "decode=list,window=128,dbits=6,fill=1", &list), SPTUNE_OK);
    if (!m || !m16 || !list) return sp_test_done("test_slotfill_weights");
    size_t bytes = 0;
    sptune_slotfill_image(m, &bytes);

    /* adopting device memory: it must exist and hold the image */
    sptune_slotfill_gpu *dw = (sptune_slotfill_gpu *)&dw;
    CHECK_ST(sptune_slotfill_adopt(m, 0, bytes, &dw), SPTUNE_ERR_INVALID);
    CHECK_MSG(dw == NULL && sp_test_error_has("no device memory"), "%s", sptune_last_error());
    CHECK_ST(sptune_slotfill_adopt(m, 0x100000, bytes - 1, &dw), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("smaller than the image"), "%s", sptune_last_error());
    CHECK_ST(sptune_slotfill_adopt(m, 0x100008, bytes, &dw), SPTUNE_ERR_INVALID); /* the kernels read 16 bytes at a time */
    CHECK_MSG(sp_test_error_has("not 16-byte aligned"), "%s", sptune_last_error());
    CHECK_ST(sptune_slotfill_adopt(NULL, 0x100000, bytes, &dw), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_slotfill_adopt(m, 0x100000, bytes, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_slotfill_upload(NULL, &dw), SPTUNE_ERR_INVALID);
    CHECK_EQ(sptune_slotfill_gpu_image(NULL), 0);
    sptune_slotfill_gpu_free(NULL);

    sptune_slotfill_gpu *a = NULL, *a16 = NULL, *alist = NULL;
    CHECK_ST(sptune_slotfill_adopt(m, 0x100000, bytes, &a), SPTUNE_OK);
    CHECK(a && sptune_slotfill_gpu_image(a) == 0x100000);
    size_t b16 = 0, blist = 0;
    sptune_slotfill_image(m16, &b16);
    sptune_slotfill_image(list, &blist);
    CHECK_ST(sptune_slotfill_adopt(m16, 0x200000, b16, &a16), SPTUNE_OK);
    CHECK_ST(sptune_slotfill_adopt(list, 0x300000, blist, &alist), SPTUNE_OK);
    sptune_slotfill_free(m16);   /* the handle keeps what it needs */
    sptune_slotfill_free(list);

    char problem[128];
    CHECK_ST(sptune_slotfill_problem(m, 16, problem, sizeof problem), SPTUNE_OK);
    sptune_kernel *k = get(cache, "slotfill-spmm", problem, sptune_slotfill_fixed(m));
    sptune_kernel *kt = get(cache, "slotfill-spmm", "M=384,K=256,N=16,sparsity=50,fp16=0,dist=2", NULL);
    sptune_kernel *kk = get(cache, "slotfill-spmm", "M=256,K=512,N=16,sparsity=50,fp16=0,dist=2", NULL);
    sptune_kernel *kg = get(cache, "gemm", "M=16,N=256,K=384", NULL);
    if (k && kt && kk && kg && a && a16 && alist) {
        /* another shape: M (the transposed matrix), then K */
        CHECK_ST(sptune_slotfill_apply(kt, NULL, 16, a, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_error_has("the weights are 256 x 384 (M x K), the kernel was got for M=384"), "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_apply(kk, NULL, 16, a, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_error_has("the kernel was got for K=512"), "%s", sptune_last_error());
        /* another data type, another encoding, another op */
        CHECK_ST(sptune_slotfill_apply(k, NULL, 16, a16, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_error_has("encoded with dtype=f16, the kernel reads dtype=bf16"), "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_apply(k, NULL, 16, alist, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_error_has("encoded with dbits=6, the kernel reads dbits=5"), "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_apply(kg, NULL, 16, a, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_error_has("the kernel is gemm's, not slotfill-spmm's"), "%s", sptune_last_error());
        CHECK_ST(sptune_slotfill_apply(k, NULL, 16, NULL, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_slotfill_apply(NULL, NULL, 16, a, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        /* the matching kernel: the token range still holds, an empty batch launches nothing */
        CHECK_ST(sptune_slotfill_apply(k, NULL, 17, a, 0x1000, 0x2000, 0, 0), SPTUNE_ERR_INVALID);
        CHECK_ST(sptune_slotfill_apply(k, NULL, 0, a, 0x1000, 0x2000, 0, 0), SPTUNE_OK);
        /* and a real batch reaches the launch: without a GPU that is where it stops */
        int gpus = 0;
        if (sptune_gpu_count(&gpus) != SPTUNE_OK) {
            const sptune_status st = sptune_slotfill_apply(k, NULL, 16, a, 0x1000, 0x2000, 0, 0);
            CHECK_MSG(st == SPTUNE_ERR_NO_GPU, "%s: %s", sptune_status_name(st), sptune_last_error());
            CHECK_ST(sptune_slotfill_upload(m, &dw), SPTUNE_ERR_NO_GPU);
        }
    }
    sptune_kernel_free(k);
    sptune_kernel_free(kt);
    sptune_kernel_free(kk);
    sptune_kernel_free(kg);
    sptune_slotfill_gpu_free(a);
    sptune_slotfill_gpu_free(a16);
    sptune_slotfill_gpu_free(alist);
    sptune_slotfill_free(m);
    free(w);
    return sp_test_done("test_slotfill_weights");
}

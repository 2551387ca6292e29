/* Autotuning on the caller's data (sptune_kernel_autotune), what runs without a GPU: the candidates it times are
 * the recorded configurations nearest the problem, distinct, valid for it, taking the fixed parameters, best first
 * with the served one first; nothing recorded, no candidates; bad arguments refused before any GPU question; and
 * without a GPU it says so. (Its timing runs in test_gpu_api on a GPU.) */
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"
#include "sptune_kernel_object.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    const char *cache = sp_test_cache_dir("test_autotune");
    sptune_kernel_request req = {.op = "twell-ffn", .problem = "M=16384,D=2048,F=5632,nnz=40", .gpu = "h200",
                                 .db_path = "", .cache_dir = cache};
    char *configs[8];
    int n = -1;
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK_MSG(n >= 2 && n <= 4, "%d candidates from the shipped results", n);
    sptune_kernel *k = NULL;
    CHECK_ST(sptune_kernel_get(&req, &k), SPTUNE_OK);
    if (k && n > 0) CHECK_MSG(!strcmp(configs[0], sptune_kernel_config(k)), "first %s, served %s", configs[0],
                              sptune_kernel_config(k));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) CHECK_MSG(strcmp(configs[i], configs[j]) != 0, "candidate %d twice: %s", i, configs[i]);
    for (int i = 0; i < n; i++) free(configs[i]);
    sptune_kernel_free(k);

    /* fixed parameters: only candidates taking them */
    req.fixed = "hot=8";
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK(n >= 1);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(strstr(configs[i], ",hot=8") != NULL, "%s", configs[i]);
        free(configs[i]);
    }
    /* nothing recorded: nothing to time but the default */
    req.fixed = NULL;
    req.ignore_shipped = 1;
    CHECK_ST(sp_api_ranked_configs(&req, 4, configs, &n), SPTUNE_OK);
    CHECK(n == 0);
    req.ignore_shipped = 0;

    /* refusals before any GPU question, then the GPU's absence said */
    const unsigned long long tensors[5] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    sptune_kernel *out = (sptune_kernel *)&out;
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, tensors, 0, 0, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_kernel_autotune(NULL, NULL, 16, tensors, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK(out == NULL);
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, NULL, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK_ST(sptune_kernel_autotune(&req, NULL, 0, tensors, 0, 0, &out), SPTUNE_ERR_INVALID);
    CHECK_MSG(strstr(sptune_last_error(), "tokens=0"), "%s", sptune_last_error());
    sptune_kernel_request bad = req;
    bad.op = "no-such-op";
    CHECK_ST(sptune_kernel_autotune(&bad, NULL, 16, tensors, 0, 0, &out), SPTUNE_ERR_NOT_FOUND);
    int gpus = 0;
    if (sptune_gpu_count(&gpus) != SPTUNE_OK) {
        CHECK_ST(sptune_kernel_autotune(&req, NULL, 16, tensors, 0x100000, 1 << 30, &out), SPTUNE_ERR_NO_GPU);
        CHECK(out == NULL);
    }
    return sp_test_done("test_autotune");
}

/* GPU profiles (named and generic), default paths, and the driver: present or not, both pass. */
#include "sp_cuda.h"
#include "sp_gpu.h"
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_named(const char *name, const char *arch, int major, int minor, int wgmma, int tma,
                        int sm_count, int optin)
{
    sp_gpu_profile p;
    CHECK_ST(sp_gpu_profile_named(name, &p), SPTUNE_OK);
    CHECK_MSG(strcmp(p.info.arch, arch) == 0, "%s: arch %s, want %s", name, p.info.arch, arch);
    CHECK_MSG(p.info.cc_major == major && p.info.cc_minor == minor, "%s: cc %d.%d", name, p.info.cc_major,
              p.info.cc_minor);
    CHECK_MSG(p.has_wgmma == wgmma, "%s: has_wgmma %d", name, p.has_wgmma);
    CHECK_MSG(p.has_tma == tma && p.has_cluster == tma, "%s: has_tma %d has_cluster %d", name, p.has_tma,
              p.has_cluster);
    CHECK_MSG(p.has_mma_sp == 1 && p.has_cp_async == 1, "%s: mma_sp/cp_async", name);
    CHECK_MSG(p.info.sm_count == sm_count, "%s: %d SMs", name, p.info.sm_count);
    CHECK_MSG(p.info.smem_per_block_optin == optin, "%s: optin smem %d", name, p.info.smem_per_block_optin);
    CHECK_MSG(p.info.regs_per_sm == 65536, "%s: regs %d", name, p.info.regs_per_sm);
    CHECK_MSG(p.info.ordinal == -1, "%s: ordinal %d", name, p.info.ordinal);
    CHECK_MSG(p.info.name[0] && p.info.profile[0], "%s: empty name or profile", name);

    sptune_gpu_info info = {.size = sizeof(sptune_gpu_info)};
    CHECK_ST(sptune_gpu_profile(name, &info), SPTUNE_OK);
    CHECK_EQ(memcmp(&info, &p.info, sizeof info), 0);
}

static void test_named(void)
{
    check_named("h100", "sm_90a", 9, 0, 1, 1, 132, 232448);
    check_named("h200", "sm_90a", 9, 0, 1, 1, 132, 232448);
    check_named("rtx-pro-6000", "sm_120", 12, 0, 0, 1, 188, 101376);
    check_named("sm_80", "sm_80", 8, 0, 0, 0, 0, 166912);
    check_named("sm_86", "sm_86", 8, 6, 0, 0, 0, 101376);
    check_named("sm_89", "sm_89", 8, 9, 0, 0, 0, 101376);
    check_named("sm_90", "sm_90", 9, 0, 0, 1, 0, 232448); /* plain sm_90: the portable path */
    check_named("sm_90a", "sm_90a", 9, 0, 1, 1, 0, 232448);
    check_named("sm_100a", "sm_100a", 10, 0, 0, 1, 0, 232448);
    check_named("sm_120", "sm_120", 12, 0, 0, 1, 0, 101376);
    check_named("H100", "sm_90a", 9, 0, 1, 1, 132, 232448);

    sp_gpu_profile p;
    CHECK_ST(sp_gpu_profile_named("h100", &p), SPTUNE_OK);
    CHECK(strcmp(p.info.profile, "h100") == 0 && strstr(p.info.name, "H100"));
    CHECK(p.info.l2_bytes == 50 * 1024 * 1024 && p.info.mem_bandwidth_gbs == 3350.0);
    CHECK(p.info.smem_per_sm == 233472 && p.info.max_threads_per_sm == 2048);
    CHECK_ST(sp_gpu_profile_named("h200", &p), SPTUNE_OK);
    CHECK(p.info.l2_bytes == 60 * 1024 * 1024 && p.info.mem_bandwidth_gbs == 4800.0);
    CHECK(p.info.total_mem_bytes > (size_t)100 << 30);
    CHECK_ST(sp_gpu_profile_named("rtx-pro-6000", &p), SPTUNE_OK);
    CHECK(p.info.l2_bytes == 128 * 1024 * 1024 && p.info.max_threads_per_sm == 1536);
    CHECK_EQ(p.info.smem_per_sm, 102400);
    CHECK_ST(sp_gpu_profile_named("sm_80", &p), SPTUNE_OK);
    CHECK(p.info.smem_per_sm == 167936 && p.info.max_threads_per_sm == 2048);
    CHECK(strcmp(p.info.profile, "sm_80") == 0);
    CHECK(p.info.sm_count == 0 && p.info.l2_bytes == 0); /* unknown for a generic target */
    CHECK_ST(sp_gpu_profile_named("sm_86", &p), SPTUNE_OK);
    CHECK(p.info.max_threads_per_sm == 1536 && p.info.smem_per_sm == 102400);

    /* Derivation from the compute capability alone. */
    memset(&p, 0, sizeof p);
    p.info.cc_major = 9;
    sp_gpu_profile_derive(&p);
    CHECK(strcmp(p.info.arch, "sm_90a") == 0 && p.has_wgmma && p.has_tma);
    memset(&p, 0, sizeof p);
    p.info.cc_major = 10;
    sp_gpu_profile_derive(&p);
    CHECK(strcmp(p.info.arch, "sm_100a") == 0 && !p.has_wgmma && p.has_cluster);
    memset(&p, 0, sizeof p);
    p.info.cc_major = 8;
    p.info.cc_minor = 9;
    sp_gpu_profile_derive(&p);
    CHECK(strcmp(p.info.arch, "sm_89") == 0 && !p.has_tma && p.has_mma_sp && p.has_cp_async);
    CHECK(strcmp(p.info.profile, "sm_89") == 0);
    /* An arch that does not match the capability is replaced. */
    snprintf(p.info.arch, sizeof p.info.arch, "sm_90a");
    p.info.cc_major = 12;
    p.info.cc_minor = 0;
    sp_gpu_profile_derive(&p);
    CHECK(strcmp(p.info.arch, "sm_120") == 0 && !p.has_wgmma);

    /* Errors. */
    CHECK_ST(sp_gpu_profile_named("sm_75", &p), SPTUNE_ERR_UNSUPPORTED);
    printf("sm_75: %s\n", sptune_last_error());
    CHECK(strstr(sptune_last_error(), "sm_75 is not supported (sptune needs sm_80 or newer)") != NULL);
    CHECK_ST(sp_gpu_profile_named("sm_10", &p), SPTUNE_ERR_UNSUPPORTED);
    CHECK_ST(sp_gpu_profile_named("a100-typo", &p), SPTUNE_ERR_NOT_FOUND);
    const char *msg = sptune_last_error();
    printf("unknown: %s\n", msg);
    CHECK(strstr(msg, "a100-typo") && strstr(msg, "h100") && strstr(msg, "h200") && strstr(msg, "rtx-pro-6000"));
    CHECK(strstr(msg, "sm_80") && strstr(msg, "sm_90a") && strstr(msg, "sm_120"));
    CHECK_ST(sp_gpu_profile_named("sm_85", &p), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_gpu_profile_named("sm_86a", &p), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_gpu_profile_named("sm_9999", &p), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_gpu_profile_named("sm_", &p), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_gpu_profile_named("", &p), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_gpu_profile_named(NULL, &p), SPTUNE_ERR_INVALID);
    sptune_gpu_info info = {.size = sizeof(sptune_gpu_info)};
    CHECK_ST(sptune_gpu_profile("nope", &info), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sptune_gpu_profile("h100", NULL), SPTUNE_ERR_INVALID);
    /* the size field: 0 takes this version's struct, a size below the first version's is refused (nothing written) */
    sptune_gpu_info zero = {0}, small = {.size = 8, .ordinal = 77};
    CHECK_ST(sptune_gpu_profile("h100", &zero), SPTUNE_OK);
    CHECK_EQ(zero.size, sizeof zero);
    CHECK(!strcmp(zero.profile, "h100") && zero.cc_major == 9);
    CHECK_ST(sptune_gpu_profile("h100", &small), SPTUNE_ERR_INVALID);
    CHECK(sp_test_error_has("less than") && small.ordinal == 77);
}

static void check_path(sptune_status (*fn)(char *, size_t), const char *want)
{
    char buf[4096];
    CHECK_ST(fn(buf, sizeof buf), SPTUNE_OK);
    CHECK_MSG(strcmp(buf, want) == 0, "got '%s', want '%s'", buf, want);
    CHECK_ST(fn(buf, strlen(want)), SPTUNE_ERR_INVALID); /* no room for the NUL */
    CHECK_ST(fn(buf, strlen(want) + 1), SPTUNE_OK);
    CHECK_ST(fn(NULL, 10), SPTUNE_ERR_INVALID);
}

static void test_paths(void)
{
    setenv("HOME", "/home/tester", 1);
    unsetenv("SPTUNE_DB");
    unsetenv("SPTUNE_CACHE_DIR");
    unsetenv("XDG_DATA_HOME");
    unsetenv("XDG_CACHE_HOME");
    check_path(sptune_default_db_path, "/home/tester/.local/share/sptune/tuning.db");
    check_path(sptune_default_cache_dir, "/home/tester/.cache/sptune/kernels");
    setenv("XDG_DATA_HOME", "/xdg/data", 1);
    setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
    check_path(sptune_default_db_path, "/xdg/data/sptune/tuning.db");
    check_path(sptune_default_cache_dir, "/xdg/cache/sptune/kernels");
    setenv("XDG_DATA_HOME", "relative/ignored", 1);
    check_path(sptune_default_db_path, "/home/tester/.local/share/sptune/tuning.db");
    setenv("SPTUNE_DB", "/data/team.db", 1);
    setenv("SPTUNE_CACHE_DIR", "/scratch/kernels", 1);
    check_path(sptune_default_db_path, "/data/team.db");
    check_path(sptune_default_cache_dir, "/scratch/kernels");
    setenv("SPTUNE_DB", "", 1); /* empty counts as unset */
    check_path(sptune_default_db_path, "/home/tester/.local/share/sptune/tuning.db");
    unsetenv("SPTUNE_DB");
    unsetenv("SPTUNE_CACHE_DIR");
    unsetenv("XDG_DATA_HOME");
    unsetenv("XDG_CACHE_HOME");
}

/* On a GPU: every driver entry point is there, and a kernel compiled for the device runs. */
static void smoke_launch(int ordinal, const sptune_gpu_info *info)
{
    const sp_cuda_api *api = NULL;
    CHECK_ST(sp_cuda_load(&api), SPTUNE_OK);
    if (!api) return;
    const void *const *fp = (const void *const *)api;
    for (size_t i = 0; i < sizeof *api / sizeof(void *); i++)
        CHECK_MSG(fp[i] != NULL || (const void *)&fp[i] == (const void *)&api->LaunchKernelEx,
                  "driver entry %zu missing", i);
    static const char *src = "extern \"C\" __global__ void axpb(float *x, int n, float a, float b) {\n"
                             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "    if (i < n) x[i] = a * x[i] + b;\n"
                             "}\n";
    sp_cubin cb;
    CHECK_ST(sp_nvrtc_compile(src, "axpb.cu", info->arch, NULL, 0, &cb), SPTUNE_OK);
    CUcontext ctx;
    CHECK_ST(sp_cuda_use_device(ordinal, &ctx), SPTUNE_OK);
    CUmodule mod = NULL;
    CUfunction fn = NULL;
    CUdeviceptr d = 0;
    enum { N = 1000 };
    float h[N];
    for (int i = 0; i < N; i++) h[i] = (float)i;
    if (cb.image && SP_CU(api->ModuleLoadData(&mod, cb.image)) == SPTUNE_OK &&
        SP_CU(api->ModuleGetFunction(&fn, mod, "axpb")) == SPTUNE_OK &&
        SP_CU(api->MemAlloc(&d, sizeof h)) == SPTUNE_OK && SP_CU(api->MemcpyHtoD(d, h, sizeof h)) == SPTUNE_OK) {
        int n = N;
        float a = 2.f, b = 1.f;
        void *args[] = {&d, &n, &a, &b};
        CHECK_ST(SP_CU(api->LaunchKernel(fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL)), SPTUNE_OK);
        CHECK_ST(SP_CU(api->CtxSynchronize()), SPTUNE_OK);
        CHECK_ST(SP_CU(api->MemcpyDtoH(h, d, sizeof h)), SPTUNE_OK);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += h[i] != 2.f * (float)i + 1.f;
        CHECK_MSG(bad == 0, "GPU %d: %d wrong results", ordinal, bad);
        printf("GPU %d: kernel for %s ran, %d wrong results\n", ordinal, info->arch, bad);
    } else {
        CHECK_MSG(0, "GPU %d: cannot load or prepare the kernel: %s", ordinal, sptune_last_error());
    }
    if (d) api->MemFree(d);
    if (mod) api->ModuleUnload(mod);
    sp_cubin_free(&cb);
}

static void test_driver(void)
{
    int count = -1;
    sptune_status st = sptune_gpu_count(&count);
    if (st != SPTUNE_OK) {
        const char *why = sptune_last_error();
        printf("no GPU here: %s\n", why);
        CHECK_MSG(st == SPTUNE_ERR_NO_GPU, "sptune_gpu_count: %s", sptune_status_name(st));
        CHECK_EQ(count, 0);
        CHECK(why[0] != 0);
        sptune_gpu_info info = {.size = sizeof(sptune_gpu_info)};
        CHECK_ST(sptune_gpu_profile("auto", &info), SPTUNE_ERR_NO_GPU);
        printf("auto: %s\n", sptune_last_error());
        CHECK(strstr(sptune_last_error(), "auto") != NULL);
        CHECK_ST(sptune_gpu_get(0, &info), SPTUNE_ERR_NO_GPU);
        static const sp_cuda_api dummy;
        const sp_cuda_api *api = &dummy;
        CHECK(sp_cuda_load(&api) == SPTUNE_ERR_NO_GPU && api == NULL);
        CHECK_ST(sp_cuda_use_device(0, NULL), SPTUNE_ERR_NO_GPU);
        char v[32];
        st = sptune_driver_version(v, sizeof v);
        if (st == SPTUNE_OK)
            printf("driver %s present, but no usable device\n", v);
        else
            CHECK_MSG(st == SPTUNE_ERR_NO_GPU, "driver version: %s", sptune_status_name(st));
        /* The outcome is cached and the message repeats. */
        CHECK(sptune_gpu_count(&count) == SPTUNE_ERR_NO_GPU && strcmp(sptune_last_error(), why) == 0);
        return;
    }
    printf("GPU machine: %d device(s)\n", count);
    CHECK(count > 0);
    char v[32];
    CHECK_ST(sptune_driver_version(v, sizeof v), SPTUNE_OK);
    printf("driver %s\n", v);
    for (int i = 0; i < count; i++) {
        sptune_gpu_info info = {.size = sizeof(sptune_gpu_info)};
        st = sptune_gpu_get(i, &info);
        if (st == SPTUNE_ERR_UNSUPPORTED) {
            printf("GPU %d: %s\n", i, sptune_last_error());
            continue;
        }
        CHECK_ST(st, SPTUNE_OK);
        if (st != SPTUNE_OK) continue;
        printf("GPU %d: %s, profile %s, arch %s, cc %d.%d, %d SMs, smem %d/%d, %d regs/SM, %d threads/SM, "
               "L2 %d MiB, %.0f GB/s, %.1f GiB\n",
               i, info.name, info.profile, info.arch, info.cc_major, info.cc_minor, info.sm_count,
               info.smem_per_block_optin, info.smem_per_sm, info.regs_per_sm, info.max_threads_per_sm,
               info.l2_bytes >> 20, info.mem_bandwidth_gbs, (double)info.total_mem_bytes / (1 << 30));
        CHECK_EQ(info.ordinal, i);
        CHECK(info.cc_major >= 8);
        CHECK(info.sm_count > 0 && info.smem_per_block_optin > 0 && info.regs_per_sm > 0);
        CHECK(info.arch[0] && info.profile[0] && info.name[0]);
        CUcontext ctx = NULL, ctx2 = NULL;
        CHECK_ST(sp_cuda_use_device(i, &ctx), SPTUNE_OK);
        CHECK_ST(sp_cuda_use_device(i, &ctx2), SPTUNE_OK);
        CHECK(ctx != NULL && ctx == ctx2);
        smoke_launch(i, &info);
    }
    sptune_gpu_info a = {.size = sizeof(sptune_gpu_info)}, d0 = {.size = sizeof(sptune_gpu_info)};
    CHECK_ST(sptune_gpu_profile("auto", &a), SPTUNE_OK);
    if (sptune_gpu_get(0, &d0) == SPTUNE_OK) CHECK(memcmp(&a, &d0, sizeof a) == 0);
    sptune_gpu_info none = {.size = sizeof(sptune_gpu_info)};
    CHECK_ST(sptune_gpu_get(count, &none), SPTUNE_ERR_NOT_FOUND);
    CHECK_ST(sp_cuda_use_device(-1, NULL), SPTUNE_ERR_NOT_FOUND);
    /* sp_cuda_check formats a driver error. */
    CHECK_ST(sp_cuda_check(CUDA_ERROR_INVALID_VALUE, "cuSomething"), SPTUNE_ERR_CUDA);
    printf("check: %s\n", sptune_last_error());
    CHECK(strstr(sptune_last_error(), "cuSomething: CUDA_ERROR_INVALID_VALUE") != NULL);
}

int main(void)
{
    test_named();
    test_paths();
    test_driver();
    CHECK_ST(sp_cuda_check(CUDA_SUCCESS, "nothing"), SPTUNE_OK);
    CHECK_ST(sp_cuda_check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), SPTUNE_ERR_CUDA);
    CHECK(strstr(sptune_last_error(), "cuMemAlloc") != NULL);
    return sp_test_done("test_gpu");
}

/* NVRTC: compiles for the three target families, resources from ptxas, errors with their logs. */
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sptune.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 256 floats of static shared memory (1024 bytes) and a loop that keeps a few values live. */
static const char *good_src =
    "extern \"C\" __global__ void scale_rev(float *out, const float *in, int n, float a) {\n"
    "    __shared__ float tile[256];\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    tile[threadIdx.x] = i < n ? in[i] : 0.f;\n"
    "    __syncthreads();\n"
    "    float acc = 0.f;\n"
    "    for (int k = 0; k < 8; k++) acc += tile[(threadIdx.x + 32 * k) & 255] * (a + k);\n"
    "    if (i < n) out[i] = acc;\n"
    "}\n";

static const char *two_kernels_src =
    "extern \"C\" __global__ void small_k(float *o) {\n"
    "    __shared__ float s[64];\n"
    "    s[threadIdx.x & 63] = threadIdx.x; __syncthreads(); o[threadIdx.x] = s[(threadIdx.x + 1) & 63];\n"
    "}\n"
    "extern \"C\" __global__ void big_k(float *o) {\n"
    "    __shared__ float s[512];\n"
    "    s[threadIdx.x & 511] = threadIdx.x; __syncthreads(); o[threadIdx.x] = s[(threadIdx.x + 1) & 511];\n"
    "}\n";

static const char *bad_src =
    "extern \"C\" __global__ void broken(float *o) {\n"
    "    o[threadIdx.x] = undeclared_name + ;\n"
    "}\n";

static void test_compile(const char *arch)
{
    sp_cubin c;
    const char *opts[] = {"-DSCALE=2", "--use_fast_math"};
    CHECK_ST(sp_nvrtc_compile(good_src, "scale_rev.cu", arch, opts, 2, &c), SPTUNE_OK);
    CHECK_MSG(c.image && c.size > 64, "%s: image of %zu bytes", arch, c.size);
    if (c.image && c.size >= 4) CHECK_MSG(memcmp(c.image, "\177ELF", 4) == 0, "%s: not ELF", arch);
    CHECK_MSG(c.log != NULL, "%s: log is NULL", arch);
    CHECK_MSG(c.res.registers > 0, "%s: registers %d", arch, c.res.registers);
    CHECK_MSG(c.res.smem_static == 1024, "%s: smem %d", arch, c.res.smem_static);
    CHECK_MSG(c.res.spill_stores == 0 && c.res.spill_loads == 0, "%s: spills %d/%d", arch, c.res.spill_stores,
              c.res.spill_loads);
    CHECK_EQ(c.from_cache, 0);
    printf("%s: %zu bytes, %d registers, %d smem, %d cmem, %d stack\n", arch, c.size, c.res.registers,
           c.res.smem_static, c.res.cmem, c.res.local_bytes);
    sp_cubin_free(&c);
    CHECK(c.image == NULL && c.log == NULL && c.size == 0);
}

int main(void)
{
    int ma = 0, mi = 0;
    CHECK_ST(sp_nvrtc_version(&ma, &mi), SPTUNE_OK);
    CHECK_MSG(ma >= 12 && ma < 100 && mi >= 0 && mi < 100, "NVRTC version %d.%d", ma, mi);
    char vbuf[16];
    CHECK_ST(sptune_nvrtc_version(vbuf, sizeof vbuf), SPTUNE_OK);
    char want[16];
    snprintf(want, sizeof want, "%d.%d", ma, mi);
    CHECK_MSG(strcmp(vbuf, want) == 0, "sptune_nvrtc_version gave '%s', want '%s'", vbuf, want);
    CHECK_ST(sptune_nvrtc_version(vbuf, 3), SPTUNE_ERR_INVALID);
    printf("NVRTC %s\n", want);

    const int *archs;
    int narchs = sp_nvrtc_archs(&archs);
    CHECK(narchs > 0);
    CHECK(sp_nvrtc_supports("sm_80"));
    CHECK(sp_nvrtc_supports("sm_90a"));
    CHECK(sp_nvrtc_supports("sm_120"));
    CHECK(!sp_nvrtc_supports("sm_10"));
    CHECK(!sp_nvrtc_supports("sm_86a"));
    CHECK(!sp_nvrtc_supports("compute_90"));
    CHECK(!sp_nvrtc_supports(""));
    CHECK(!sp_nvrtc_supports(NULL));

    test_compile("sm_80");
    test_compile("sm_90a");
    test_compile("sm_120");

    /* Resources with two kernels: the maximum of each. */
    sp_cubin c;
    CHECK_ST(sp_nvrtc_compile(two_kernels_src, "two.cu", "sm_90a", NULL, 0, &c), SPTUNE_OK);
    CHECK_MSG(c.res.smem_static == 2048, "two kernels: smem %d (want the larger, 2048)", c.res.smem_static);
    sp_cubin_free(&c);

    /* Resource parsing on a fixed log (several kernels, older and newer ptxas layouts). */
    sp_resources r;
    sp_nvrtc_parse_resources("ptxas info    : 0 bytes gmem\n"
                             "ptxas info    : Compiling entry function 'a' for 'sm_80'\n"
                             "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                             "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]\n"
                             "ptxas info    : Compiling entry function 'b' for 'sm_80'\n"
                             "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                             "ptxas info    : Used 128 registers, 4096 bytes smem, 360 bytes cmem[0], 8 bytes cmem[2]",
                             &r);
    CHECK(r.registers == 128 && r.smem_static == 4096 && r.cmem == 372);
    CHECK(r.local_bytes == 8 && r.spill_stores == 4 && r.spill_loads == 12);
    sp_nvrtc_parse_resources("", &r);
    CHECK(r.registers == 0 && r.smem_static == 0);

    /* A syntax error: COMPILE, the message names the file and target, the log says "error". */
    CHECK_ST(sp_nvrtc_compile(bad_src, "broken.cu", "sm_90a", NULL, 0, &c), SPTUNE_ERR_COMPILE);
    const char *msg = sptune_last_error();
    printf("syntax error message:\n%s\n", msg);
    CHECK(strstr(msg, "broken.cu") != NULL);
    CHECK(strstr(msg, "sm_90a") != NULL);
    CHECK(strstr(msg, "error") != NULL);
    CHECK(c.log != NULL && strstr(c.log, "error") != NULL);
    CHECK(c.image == NULL && c.size == 0);
    sp_cubin_free(&c);
    /* The same without an output. */
    CHECK_ST(sp_nvrtc_compile(bad_src, "broken.cu", "sm_80", NULL, 0, NULL), SPTUNE_ERR_COMPILE);

    /* A long log: the message keeps the first lines, the log keeps them all. */
    {
        sp_buf b = {0};
        for (int i = 0; i < 100; i++) sp_buf_printf(&b, "__global__ void k%d() { int x = y%d; }\n", i, i);
        CHECK_ST(sp_nvrtc_compile(b.data, "many.cu", "sm_80", NULL, 0, &c), SPTUNE_ERR_COMPILE);
        msg = sptune_last_error();
        CHECK(strstr(msg, "more lines of log") != NULL);
        CHECK(c.log && strstr(c.log, "y99") != NULL);
        sp_cubin_free(&c);
        sp_buf_free(&b);
    }

    /* A bad caller option: COMPILE with NVRTC's complaint. */
    const char *badopt[] = {"--no-such-option"};
    CHECK_ST(sp_nvrtc_compile(good_src, "scale_rev.cu", "sm_80", badopt, 1, &c), SPTUNE_ERR_COMPILE);
    printf("bad option message: %s\n", sptune_last_error());
    sp_cubin_free(&c);

    /* Targets: an unsupported real one, a virtual one, garbage. */
    CHECK_ST(sp_nvrtc_compile(good_src, "scale_rev.cu", "sm_10", NULL, 0, &c), SPTUNE_ERR_UNSUPPORTED);
    msg = sptune_last_error();
    printf("sm_10 message: %s\n", msg);
    CHECK(strstr(msg, "sm_10") != NULL && strstr(msg, "sm_80") != NULL);
    CHECK(c.image == NULL && c.log == NULL);
    CHECK_ST(sp_nvrtc_compile(good_src, "scale_rev.cu", "compute_90", NULL, 0, &c), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "compute_90") != NULL);
    CHECK_ST(sp_nvrtc_compile(good_src, "scale_rev.cu", NULL, NULL, 0, &c), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_nvrtc_compile(NULL, "x.cu", "sm_80", NULL, 0, &c), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_nvrtc_compile(good_src, "x.cu", "sm_80", NULL, 1, &c), SPTUNE_ERR_INVALID);
    sp_cubin_free(&c);
    sp_cubin_free(NULL);

    return sp_test_done("test_nvrtc");
}

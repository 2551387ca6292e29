#include "sp_case.h"
#include "sp_cuda.h"
#include "sp_status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const sp_case_ops *const all_ops[] = {&sp_case_gemm, &sp_case_twell_d2t, &sp_case_twell_t2d,
                                             &sp_case_twell_gated, &sp_case_twell_ffn, &sp_case_slotfill_spmm};

const sp_case_ops *sp_case_find(const char *op)
{
    for (size_t i = 0; i < sizeof all_ops / sizeof all_ops[0]; i++)
        if (strcmp(all_ops[i]->op, op) == 0) return all_ops[i];
    return NULL;
}

sptune_status sp_case_create(sp_bench *b, const char *op, const sp_problem *p, sp_case *c)
{
    memset(c, 0, sizeof *c);
    c->ops = sp_case_find(op);
    if (!c->ops) return sp_fail(SPTUNE_ERR_UNSUPPORTED, "op '%s' has no GPU test harness yet", op);
    c->bench = b;
    c->problem = *p;
    sptune_status st = c->ops->create(b, p, &c->state);
    if (st != SPTUNE_OK) { c->ops = NULL; return st; }
    return SPTUNE_OK;
}

void sp_case_destroy(sp_case *c)
{
    if (c->ops && c->state) c->ops->destroy(c->state);
    memset(c, 0, sizeof *c);
}

sptune_status sp_case_check(sp_case *c, const sp_kernel *k, double *rel_err)
{
    const sp_cuda_api *cu;
    char detail[512] = "";
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    *rel_err = -1;
    if ((st = c->ops->poison(c->state, c->bench->stream)) != SPTUNE_OK) return st;
    if (c->ops->prepare && (st = c->ops->prepare(c->state, c->bench->stream)) != SPTUNE_OK) return st;
    if (c->nargv == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no arguments bound (sp_case_bind first)", c->ops->op);
    if ((st = sp_kernel_launch(k, c->bench->stream, c->argv)) != SPTUNE_OK) return st;
    if ((st = sp_cuda_check(cu->StreamSynchronize(c->bench->stream), k->fn[0].at.kernel)) != SPTUNE_OK) return st;
    if ((st = c->ops->verify(c->state, rel_err, detail, sizeof detail)) != SPTUNE_OK) return st;
    if (!(*rel_err <= c->ops->tolerance))
        return sp_fail(SPTUNE_ERR_WRONG_RESULT, "%s: relative error %.3g exceeds %.3g%s%s", k->fn[0].at.kernel,
                       *rel_err, c->ops->tolerance, detail[0] ? "; " : "", detail);
    return SPTUNE_OK;
}

typedef struct { const sp_kernel *k; sp_case *c; void **args; } kernel_run;

static sptune_status run_kernel(void *ud, CUstream s)
{
    kernel_run *r = ud;
    sptune_status st;
    if (r->c->ops->prepare && (st = r->c->ops->prepare(r->c->state, s)) != SPTUNE_OK) return st;
    return sp_kernel_launch(r->k, s, r->args);
}

sptune_status sp_case_bind(sp_case *c, const sp_template *t, const sp_config *cfg)
{
    int n = sp_template_nargs(t);
    if (n == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s declares no kernel arguments", sp_template_path(t));
    for (int i = 0; i < n; i++) {
        const sp_arg *a = sp_template_arg(t, i);
        if (!(c->argv[i] = c->ops->arg(c->state, a->name)))
            return sp_fail(SPTUNE_ERR_INVALID, "the %s harness has no value for argument %d (%s) that %s declares",
                           c->ops->op, i, a->name, sp_template_path(t));
    }
    c->nargv = n;
    return c->ops->bind ? c->ops->bind(c->state, t, cfg) : SPTUNE_OK;
}

void *sp_case_arg_find(const char *name, const sp_case_named *table, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].value;
    return NULL;
}

sptune_status sp_case_time(sp_case *c, const sp_kernel *k, sp_timing *t)
{
    if (c->nargv == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no arguments bound (sp_case_bind first)", c->ops->op);
    kernel_run r = {k, c, c->argv};
    return sp_bench_time(c->bench, run_kernel, &r, t);
}

static sptune_status run_baseline(void *ud, CUstream s)
{
    sp_case *c = ud;
    return c->ops->baseline(c->state, s);
}

sptune_status sp_case_time_baseline(sp_case *c, sp_timing *t)
{
    return sp_bench_time(c->bench, run_baseline, c, t);
}

double sp_case_flops(const sp_case *c) { return c->ops->flops(&c->problem); }
double sp_case_bytes(const sp_case *c) { return c->ops->bytes ? c->ops->bytes(c->state) : 0; }

int sp_problem_int(const sp_problem *p, const char *name, int *out)
{
    double v;
    if (!sp_problem_get(p, name, &v) || !(v >= 1 && v <= 2147483647.0) || v != floor(v)) return 0;
    *out = (int)v;
    return 1;
}

/* The shared check: 2^-7 relative plus 1e-3 of the reference's rms, plus allow[i] when given. */
static void compare(const uint16_t *out, int f16, const float *ref, const float *allow, size_t n, size_t ncols,
                    int relu_ref, double *rel_err, char *detail, size_t len)
{
    double num = 0, den = 0;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        double r = relu_ref && ref[i] < 0 ? 0 : ref[i];
        den += r * r;
    }
    const double slack = 1e-3 * sqrt(den / (double)(n ? n : 1)) + 1e-6;
    for (size_t i = 0; i < n; i++) {
        double r = relu_ref && ref[i] < 0 ? 0 : ref[i];
        double o = sp_half_to_float(out[i], f16), d = o - r;
        if (!isfinite(o) || fabs(d) > 0x1p-7 * fabs(r) + slack + (allow ? allow[i] : 0.0f)) {
            if (!bad++) first = i;
            continue;
        }
        num += d * d;
    }
    *rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
    if (bad) {
        *rel_err = fmax(*rel_err, 1.0);
        snprintf(detail, len, "%zu of %zu outputs wrong, unwritten or not finite (first at row %zu, col %zu: %g vs %g)",
                 bad, n, first / ncols, first % ncols, sp_half_to_float(out[first], f16), (double)ref[first]);
    }
}

void sp_compare_bf16(const uint16_t *out, const float *ref, size_t n, size_t ncols, int relu_ref,
                     double *rel_err, char *detail, size_t len)
{
    sp_compare_half(out, 0, ref, n, ncols, relu_ref, rel_err, detail, len);
}

void sp_compare_half(const uint16_t *out, int f16, const float *ref, size_t n, size_t ncols, int relu_ref,
                     double *rel_err, char *detail, size_t len)
{
    compare(out, f16, ref, NULL, n, ncols, relu_ref, rel_err, detail, len);
}

sptune_status sp_poison_bf16(CUdeviceptr out, size_t n, CUstream s)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    return st != SPTUNE_OK ? st : SP_CU(cu->MemsetD16Async(out, 0xffff, n, s));
}

sptune_status sp_verify_bf16(CUdeviceptr out, uint16_t *host, const float *ref, size_t rows, size_t cols,
                             double *rel_err, char *detail, size_t len)
{
    return sp_verify_bf16_allow(out, host, ref, NULL, rows, cols, rel_err, detail, len);
}

sptune_status sp_verify_bf16_allow(CUdeviceptr out, uint16_t *host, const float *ref, const float *allow, size_t rows,
                                   size_t cols, double *rel_err, char *detail, size_t len)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK || (st = SP_CU(cu->MemcpyDtoH(host, out, rows * cols * 2))) != SPTUNE_OK) return st;
    compare(host, 0, ref, allow, rows * cols, cols, 0, rel_err, detail, len);
    return SPTUNE_OK;
}

sptune_status sp_fetch_f32(CUstream s, CUdeviceptr dev, float *host, size_t n)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK || (st = SP_CU(cu->StreamSynchronize(s))) != SPTUNE_OK) return st;
    return SP_CU(cu->MemcpyDtoH(host, dev, n * 4));
}

double sp_problem_flops(const sp_problem *p, double factor, const char *a, const char *b, const char *c)
{
    int x = 0, y = 0, z = 0;
    if (!sp_problem_int(p, a, &x) || !sp_problem_int(p, b, &y) || !sp_problem_int(p, c, &z)) return 0;
    return factor * x * y * z;
}

sptune_status sp_check_reference(const float *ref, size_t rows, size_t cols, size_t k, const uint16_t *A,
                                 const uint16_t *B, int b_kmajor, int samples)
{
    return sp_check_reference_half(ref, rows, cols, k, A, B, b_kmajor, samples, 0);
}

sptune_status sp_check_reference_half(const float *ref, size_t rows, size_t cols, size_t k, const uint16_t *A,
                                      const uint16_t *B, int b_kmajor, int samples, int f16)
{
    const size_t n = rows * cols;
    for (int s = 0; s < samples && n > 0; s++) {
        size_t idx = ((size_t)s * 2654435761u) % n, i = idx / cols, j = idx % cols;
        double dot = 0, mag = 0;
        for (size_t t = 0; t < k; t++) {
            double b = sp_half_to_float(b_kmajor ? B[j * k + t] : B[t * cols + j], f16);
            double v = (double)sp_half_to_float(A[i * k + t], f16) * b;
            dot += v;
            mag += fabs(v);
        }
        if (fabs(ref[idx] - dot) > 1e-3 * mag + 1e-6)
            return sp_fail(SPTUNE_ERR_WRONG_RESULT, "cuBLAS reference disagrees with fp64 at (%zu,%zu): %g vs %g",
                           i, j, (double)ref[idx], dot);
    }
    return SPTUNE_OK;
}

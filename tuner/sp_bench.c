#include "sp_bench.h"
#include "sp_case.h"
#include "sp_clock.h"
#include "sp_cuda.h"
#include "sp_nvml.h"
#include "sp_status.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void sp_bench_opts_default(sp_bench_opts *o)
{
    o->warmup_runs = 3;
    o->warmup_ms = 20.0;
    o->min_runs = 20;
    o->max_runs = 200;
    o->target_ms = 200.0;
    o->flush_l2 = 1;
    o->energy_ms = 400.0;   /* >= 3 steps of a 100 ms counter: 1-2 whole ones inside, with margin */
    o->energy_below_ms = 0;
    const char *e = getenv("SPTUNE_ENERGY_MS");   /* 0: no energy (faster tuning) */
    if (e && *e) o->energy_ms = atof(e);
}

/* The NVML device of the bench's GPU, when NVML reports its energy. */
static void open_energy(const sp_cuda_api *cu, sp_bench *b)
{
    CUdevice dev;
    int dom = 0, bus = 0, slot = 0;
    if (b->opts.energy_ms <= 0) {
        snprintf(b->energy_why, sizeof b->energy_why, "energy not measured (switched off)");
        return;
    }
    if (cu->DeviceGet(&dev, b->ordinal) != CUDA_SUCCESS ||
        cu->DeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != CUDA_SUCCESS ||
        cu->DeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != CUDA_SUCCESS ||
        cu->DeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != CUDA_SUCCESS) {
        snprintf(b->energy_why, sizeof b->energy_why, "the driver gave no PCI address for device %d", b->ordinal);
        return;
    }
    if (sp_nvml_open(dom, bus, slot, &b->nvml) != SPTUNE_OK)
        snprintf(b->energy_why, sizeof b->energy_why, "%s", sptune_last_error());
    sp_clear_error();
}

sptune_status sp_bench_open(int ordinal, const sp_bench_opts *opts, sp_bench *b)
{
    const sp_cuda_api *cu;
    sptune_status st;
    memset(b, 0, sizeof *b);
    if (opts) b->opts = *opts; else sp_bench_opts_default(&b->opts);
    if ((st = sp_cuda_load(&cu)) != SPTUNE_OK) return st;
    if ((st = sp_gpu_profile_device(ordinal, &b->gpu)) != SPTUNE_OK) return st;
    if ((st = sp_cuda_use_device(ordinal, &b->ctx)) != SPTUNE_OK) return st;
    b->ordinal = ordinal;
    if ((st = SP_CU(cu->StreamCreate(&b->stream, CU_STREAM_NON_BLOCKING))) != SPTUNE_OK) return st;
    b->flush_bytes = (size_t)(b->gpu.info.l2_bytes > 0 ? b->gpu.info.l2_bytes : 64 << 20) * 2;
    if ((st = SP_CU(cu->MemAlloc(&b->flush, b->flush_bytes))) != SPTUNE_OK) {
        cu->StreamDestroy(b->stream);
        b->stream = NULL;
        return st;
    }
    b->rng = 0x9e3779b97f4a7c15ull ^ (unsigned long long)ordinal;
    b->twell_pool = b->twell_dense = -1;
    open_energy(cu, b);
    char energy[64] = "";
    if (b->nvml) snprintf(energy, sizeof energy, ";energy=nvml-power-between-steps/back-to-back~%.0fms", b->opts.energy_ms);
    snprintf(b->method, sizeof b->method, "cuda-events;warmup>=%d runs/%.0fms;runs=%d..%d/%.0fms;l2-flush=%s;median%s",
             b->opts.warmup_runs, b->opts.warmup_ms, b->opts.min_runs, b->opts.max_runs,
             b->opts.target_ms, b->opts.flush_l2 ? "yes" : "no", energy);
    return SPTUNE_OK;
}

void sp_bench_close(sp_bench *b)
{
    const sp_cuda_api *cu;
    if (!b->stream || sp_cuda_load(&cu) != SPTUNE_OK) return;
    /* Free in the bench's own context: with several GPUs another one may be current. */
    cu->CtxSetCurrent(b->ctx);
    if (b->flush) cu->MemFree(b->flush);
    if (b->stream) cu->StreamDestroy(b->stream);
    sp_nvml_close(b->nvml);
    memset(b, 0, sizeof *b);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* A thread that watches NVML's energy counter while the GPU runs: the time and value of each step. */
#define SP_STEPS 64
typedef struct watch {
    sp_nvml_dev *dev;
    _Atomic int stop;
    _Atomic int n;
    int failed;
    double t[SP_STEPS];
    unsigned long long mj[SP_STEPS];
} watch;

static void *watch_counter(void *arg)
{
    watch *w = arg;
    unsigned long long last = 0, mj = 0;
    if (sp_nvml_energy_mj(w->dev, &last) != SPTUNE_OK) { w->failed = 1; return NULL; }
    while (!w->stop && w->n < SP_STEPS) {   /* (only this thread writes n) */
        if (sp_nvml_energy_mj(w->dev, &mj) != SPTUNE_OK) { w->failed = 1; break; }
        if (mj != last) {
            w->t[w->n] = 1e3 * sp_now_s();
            w->mj[w->n++] = mj;
            last = mj;
        }
        struct timespec nap = {0, 200000};   /* 0.2 ms: the step times to well under 1 % */
        nanosleep(&nap, NULL);
    }
    return NULL;
}

/* Joules per call from NVML's energy counter, which moves in steps (every 100 ms on an H200,
 * bench/experiments/nvml-probe.py): back-to-back runs (no L2 flush between them: its own energy would count)
 * for about energy_ms while a thread records the counter's steps; the power is the energy between
 * the second step and the last one before the runs ended (whole steps the busy GPU spent: the first
 * may hold idle time from before) over the time between them, and the energy per call that power
 * times the GPU time per call. Fewer than two whole steps inside leaves the energy unmeasured (0). */
static sptune_status time_energy(sp_bench *b, const sp_cuda_api *cu, sp_bench_fn fn, void *ud, CUevent e0,
                                 CUevent e1, sp_timing *t)
{
    double per = t->median_ms > 1e-3 ? t->median_ms : 1e-3;
    long long n = (long long)ceil(b->opts.energy_ms / per);
    if (n < 3) n = 3;
    if (n > 1000000) n = 1000000;
    sptune_status st = SP_CU(cu->StreamSynchronize(b->stream));
    if (st != SPTUNE_OK) return st;
    watch w;
    memset(&w, 0, sizeof w);
    w.dev = b->nvml;
    pthread_t th;
    if (pthread_create(&th, NULL, watch_counter, &w) != 0) return SPTUNE_OK;   /* no energy, nothing else lost */
    /* runs in batches until the counter has stepped 4 times (2 whole steps inside the busy time) and the
     * planned count is done: back to back the runs may be faster than their median with the L2 flushed,
     * so the count alone could leave too few steps; at most 3 windows of wall time */
    const long long batch = n / 8 > 0 ? n / 8 : 1;
    const double start = 1e3 * sp_now_s();
    long long runs = 0;
    st = SP_CU(cu->EventRecord(e0, b->stream));
    while (st == SPTUNE_OK) {
        for (long long i = 0; i < batch && st == SPTUNE_OK; i++) st = fn(ud, b->stream);
        runs += batch;
        if ((runs >= n && w.n >= 4) || 1e3 * sp_now_s() - start > 3 * b->opts.energy_ms || runs >= 64 * n) break;
    }
    n = runs;
    if (st == SPTUNE_OK) st = SP_CU(cu->EventRecord(e1, b->stream));
    if (st == SPTUNE_OK) st = SP_CU(cu->EventSynchronize(e1));
    const double done = 1e3 * sp_now_s();
    w.stop = 1;
    pthread_join(th, NULL);
    float gpu_ms = 0;
    if (st == SPTUNE_OK) st = SP_CU(cu->EventElapsedTime(&gpu_ms, e0, e1));
    if (st != SPTUNE_OK) return st;
    int last = w.n - 1;
    while (last > 1 && w.t[last] > done) last--;   /* steps after the runs ended hold idle time */
    if (!w.failed && last >= 2 && w.t[last] - w.t[1] >= 50 && w.mj[last] > w.mj[1])
        t->energy_j = (double)(w.mj[last] - w.mj[1]) / (w.t[last] - w.t[1])   /* mJ per ms: watts */
                      * ((double)gpu_ms / (double)n) / 1000.0;             /* x ms per call / 1000: joules */
    return SPTUNE_OK;
}

sptune_status sp_bench_time(sp_bench *b, sp_bench_fn fn, void *ud, sp_timing *t)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    int cap = b->opts.max_runs > 0 ? b->opts.max_runs : 1;
    CUevent e0 = NULL, e1 = NULL;
    float *ms = calloc((size_t)cap, sizeof *ms);
    if (!ms) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if ((st = SP_CU(cu->EventCreate(&e0, CU_EVENT_DEFAULT))) != SPTUNE_OK) goto out;
    if ((st = SP_CU(cu->EventCreate(&e1, CU_EVENT_DEFAULT))) != SPTUNE_OK) goto out;

    /* Warm-up: module load, caches, clocks. */
    float spent = 0;
    for (int i = 0; i < b->opts.warmup_runs || spent < b->opts.warmup_ms; i++) {
        if ((st = SP_CU(cu->EventRecord(e0, b->stream))) != SPTUNE_OK) goto out;
        if ((st = fn(ud, b->stream)) != SPTUNE_OK) goto out;
        if ((st = SP_CU(cu->EventRecord(e1, b->stream))) != SPTUNE_OK) goto out;
        if ((st = SP_CU(cu->EventSynchronize(e1))) != SPTUNE_OK) goto out;
        float one = 0;
        if ((st = SP_CU(cu->EventElapsedTime(&one, e0, e1))) != SPTUNE_OK) goto out;
        spent += one;
        if (i > 1000) break;
    }

    int n = 0;
    double total = 0;
    while (n < cap && (n < b->opts.min_runs || total < b->opts.target_ms)) {
        if (b->opts.flush_l2 &&
            (st = SP_CU(cu->MemsetD32Async(b->flush, (unsigned)n, b->flush_bytes / 4, b->stream))) != SPTUNE_OK)
            goto out;
        if ((st = SP_CU(cu->EventRecord(e0, b->stream))) != SPTUNE_OK) goto out;
        if ((st = fn(ud, b->stream)) != SPTUNE_OK) goto out;
        if ((st = SP_CU(cu->EventRecord(e1, b->stream))) != SPTUNE_OK) goto out;
        if ((st = SP_CU(cu->EventSynchronize(e1))) != SPTUNE_OK) goto out;
        if ((st = SP_CU(cu->EventElapsedTime(&ms[n], e0, e1))) != SPTUNE_OK) goto out;
        total += ms[n];
        n++;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_float);
    t->runs = n;
    t->median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    t->min_ms = ms[0];
    t->max_ms = ms[n - 1];
    t->p10_ms = ms[(n - 1) / 10];
    t->p90_ms = ms[(n - 1) * 9 / 10];
    t->method = b->method;
    t->energy_j = 0;
    if (b->nvml && (b->opts.energy_below_ms <= 0 || t->median_ms <= b->opts.energy_below_ms))
        st = time_energy(b, cu, fn, ud, e0, e1, t);
out:
    if (e0) cu->EventDestroy(e0);
    if (e1) cu->EventDestroy(e1);
    free(ms);
    return st;
}

sptune_status sp_bench_alloc(sp_bench *b, size_t bytes, CUdeviceptr *p)
{
    const sp_cuda_api *cu;
    (void)b;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    *p = 0;
    st = SP_CU(cu->MemAlloc(p, bytes ? bytes : 16));
    if (st != SPTUNE_OK) return sp_wrap(st, "allocating %zu bytes on the GPU", bytes);
    return SPTUNE_OK;
}

sptune_status sp_bench_fit(sp_bench *b, size_t bytes, CUdeviceptr *p, size_t *cap)
{
    if (bytes <= *cap) return SPTUNE_OK;
    sp_bench_free(*p);
    *p = 0;
    *cap = 0;
    sptune_status st = sp_bench_alloc(b, bytes, p);
    if (st == SPTUNE_OK) *cap = bytes;
    return st;
}

void sp_bench_free(CUdeviceptr p)
{
    const sp_cuda_api *cu;
    if (p && sp_cuda_load(&cu) == SPTUNE_OK) cu->MemFree(p);
}

float sp_bf16_to_float(unsigned short h)
{
    unsigned u = (unsigned)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

unsigned short sp_float_to_bf16(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    if (isnan(f)) return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1);
    return (unsigned short)(u >> 16);
}

float sp_f16_to_float(unsigned short h)
{
    unsigned s = (unsigned)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 0x3ffu, u;
    if (e == 31) {
        u = s | 0x7f800000u | (m << 13);            /* Inf, NaN */
    } else if (e == 0) {
        if (m == 0) {
            u = s;                                   /* +-0 */
        } else {                                     /* subnormal: normalise */
            int k = -1;
            do { m <<= 1; k++; } while (!(m & 0x400u));
            u = s | (unsigned)(112 - k) << 23 | (m & 0x3ffu) << 13;
        }
    } else {
        u = s | (e + 112) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

unsigned short sp_float_to_f16(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    unsigned s = (u >> 16) & 0x8000u;
    if (isnan(f)) return (unsigned short)(s | 0x7e00u);
    float a = fabsf(f);
    if (a >= 65520.0f) return (unsigned short)(s | 0x7c00u);          /* rounds to Inf */
    if (a < 0x1p-14f) {                                               /* subnormal: a multiple of 2^-24 */
        float q = rintf(a * 0x1p24f);
        return (unsigned short)(s | (unsigned)q);
    }
    unsigned e = ((u >> 23) & 0xffu) - 112, m = u & 0x7fffffu;
    unsigned r = (e << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;           /* nearest even */
    return (unsigned short)(s | r);
}

float sp_half_to_float(unsigned short h, int f16) { return f16 ? sp_f16_to_float(h) : sp_bf16_to_float(h); }
unsigned short sp_float_to_half(float f, int f16) { return f16 ? sp_float_to_f16(f) : sp_float_to_bf16(f); }

sptune_status sp_bench_upload(CUdeviceptr dst, const void *host, size_t bytes)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st == SPTUNE_OK) st = SP_CU(cu->MemcpyHtoD(dst, host, bytes));
    return st == SPTUNE_OK ? SP_CU(cu->CtxSynchronize()) : st;
}

sptune_status sp_bench_random_bf16(sp_bench *b, CUdeviceptr dst, unsigned short *host, size_t n, float scale)
{
    for (size_t i = 0; i < n; i += 4) {
        unsigned long long r = sp_rng_next(&b->rng);
        for (size_t j = 0; j < 4 && i + j < n; j++) {
            float u = (float)((r >> (16 * j)) & 0xffff) / 65536.0f; /* [0,1) */
            host[i + j] = sp_float_to_bf16((2.0f * u - 1.0f) * scale);
        }
    }
    return sp_bench_upload(dst, host, n * sizeof *host);
}

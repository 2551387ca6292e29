/* Measurement on one GPU: a stream, an L2-flush buffer, events, and the timing rule every
 * candidate and every baseline goes through, so that both are measured the same way. */
#ifndef SP_BENCH_H
#define SP_BENCH_H

#include "sp_db.h"
#include "sp_gpu.h"
#include <cuda.h>
#include <stdint.h>

typedef struct sp_bench_opts {
    int warmup_runs;      /* at least this many untimed runs (default 3) */
    double warmup_ms;     /* and at least this long (default 20 ms) */
    int min_runs;         /* timed runs (default 20) */
    int max_runs;         /* (default 200) */
    double target_ms;     /* timed runs continue until this much kernel time (default 200 ms) */
    int flush_l2;         /* overwrite a buffer twice the L2 before each timed run (default 1) */
    double energy_ms;     /* energy per call from NVML over back-to-back runs of about this long (default
                             400 ms, $SPTUNE_ENERGY_MS; 0: not measured) */
    double energy_below_ms; /* and only for a median at most this (0: every median) */
} sp_bench_opts;

void sp_bench_opts_default(sp_bench_opts *o);

typedef struct sp_bench {
    int ordinal;
    sp_gpu_profile gpu;
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr flush;
    size_t flush_bytes;
    sp_bench_opts opts;
    char method[160];     /* how timings were taken, stored with each result */
    uint64_t rng;
    /* Workspace sizes of the TwELL harnesses (tests set them; the tuner keeps the defaults): the
     * overflow pool in words (-1: the template's typical size, -2: exactly what the data needs,
     * counted on the host; n >= 0: n) and twell-ffn's dense_capacity (-1: typical; n >= 0: n). */
    long long twell_pool, twell_dense;
    /* twell-ffn's data: NULL, drawn from the problem's distribution; else a safetensors file with the layer's own
     * X, gate, up and down weights (sp_twell_layer.h; data_names their names) */
    const char *data, *data_names;
    struct sp_nvml_dev *nvml; /* NULL: no energy (why in energy_why) */
    char energy_why[256];
} sp_bench;

/* Binds to device `ordinal` (primary context), creates a stream and the flush buffer. */
sptune_status sp_bench_open(int ordinal, const sp_bench_opts *opts, sp_bench *b);
void sp_bench_close(sp_bench *b);

/* One run of the thing measured, enqueued on the stream. */
typedef sptune_status (*sp_bench_fn)(void *ud, CUstream stream);

/* Warm-up, then timed runs with CUDA events around each (L2 flushed before each when enabled);
 * median, min, max, p10, p90 into t (baseline_ms and rel_error untouched); then, where NVML reports
 * the GPU's energy, joules per call over back-to-back runs (t->energy_j; 0 when not measured). */
sptune_status sp_bench_time(sp_bench *b, sp_bench_fn fn, void *ud, sp_timing *t);

/* Device memory helpers with checked calls. */
sptune_status sp_bench_alloc(sp_bench *b, size_t bytes, CUdeviceptr *p);
void sp_bench_free(CUdeviceptr p);
/* *p holds at least `bytes` afterwards: reallocated when its capacity *cap is smaller (contents lost; on failure
 * *p and *cap are 0), kept otherwise. */
sptune_status sp_bench_fit(sp_bench *b, size_t bytes, CUdeviceptr *p, size_t *cap);
/* Copies host to dst and waits until the copy is done: from pageable memory it may still be in
 * flight when cuMemcpyHtoD returns, and the bench stream (non-blocking) does not wait for it. */
sptune_status sp_bench_upload(CUdeviceptr dst, const void *host, size_t bytes);
/* Fills host and device buffers with bf16 values uniform in [-scale, scale) from the bench RNG. */
sptune_status sp_bench_random_bf16(sp_bench *b, CUdeviceptr dst, unsigned short *host, size_t n, float scale);

/* bf16 and fp16 <-> float on the host (round to nearest even); the _half forms take f16 != 0 for
 * fp16, else bf16. */
float sp_bf16_to_float(unsigned short h);
unsigned short sp_float_to_bf16(float f);
float sp_f16_to_float(unsigned short h);
unsigned short sp_float_to_f16(float f);
float sp_half_to_float(unsigned short h, int f16);
unsigned short sp_float_to_half(float f, int f16);

#endif

/* Problems measured from a user's own tensors (best --data, tune --data), what they look up and record.
 * TwELL: the layer's input X (a calibration batch, tokens x D) and gate weights Wg (F x D) read from a safetensors
 * file, the gate relu(X Wg^T) computed here on the CPU (every core: a batch of a few hundred tokens of a
 * 4096 x 14336 layer takes seconds), and its data dimensions measured by sptune_twell_describe_gate.
 * Slot-Filling: the pruned weight matrix, encoded, its sparsity and kind of pruning measured from the encoding
 * (sptune_slotfill_problem) for batches of --tokens (16). */
#include "cli.h"
#include "sp_bench.h"
#include "sp_slotfill_dist.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_tensor_file.h"
#include "sp_twell_layer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct gate_job {
    const float *x, *w;        /* tokens x D, F x D */
    unsigned short *gate;      /* tokens x F bf16: positive entries kept, the rest 0 */
    long long tokens;
    int D, F, lo, hi;          /* this thread's neurons: lo .. hi - 1 (a contiguous run: no shared cache lines) */
} gate_job;

static float *to_float(const unsigned short *v, size_t n)
{
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; f && i < n; i++) f[i] = sp_bf16_to_float(v[i]);
    return f;
}

/* Blocks of 64 tokens stay in cache while each neuron's weights pass once per block. */
static void *gate_rows(void *arg)
{
    const gate_job *j = arg;
    for (long long r0 = 0; r0 < j->tokens; r0 += 64)
        for (int n = j->lo; n < j->hi; n++) {
            const float *w = j->w + (size_t)n * j->D;
            for (long long r = r0; r < j->tokens && r < r0 + 64; r++) {
                const float *x = j->x + (size_t)r * j->D;
                float a[4] = {0, 0, 0, 0};   /* four chains: the adds need not wait on each other */
                int k = 0;
                for (; k + 4 <= j->D; k += 4)
                    for (int q = 0; q < 4; q++) a[q] += x[k + q] * w[k + q];
                for (; k < j->D; k++) a[0] += x[k] * w[k];
                const float s = (a[0] + a[1]) + (a[2] + a[3]);
                j->gate[(size_t)r * j->F + n] = s > 0 ? sp_float_to_bf16(s) : 0;
            }
        }
    return NULL;
}

static int slotfill_problem(const cli_cmd *cmd, long long tokens, char *problem, size_t len)
{
    sp_tensor w;
    sptune_status st = sp_slotfill_read_weights(cli_get(cmd, "data"), cli_get(cmd, "tensors"), 0, 0, SP_TENSOR_UNKNOWN,
                                                &w);
    if (st != SPTUNE_OK) return cli_input_error(cmd->name, st);
    sptune_slotfill *m = NULL;
    st = sptune_slotfill_encode(w.data, w.rows, w.cols, w.format == SP_TENSOR_F16, cli_get(cmd, "fixed"), &m);
    if (st == SPTUNE_OK) st = sptune_slotfill_problem(m, tokens ? tokens : 16, problem, len);
    sptune_slotfill_free(m);
    sp_tensor_free(&w);
    return st == SPTUNE_OK ? CLI_OK : cli_input_error(cmd->name, st);
}

/* problem marked as measured on the caller's own tensors where op's data has such a kind (ranges' own: twell's gen=2),
 * so that its results are told apart from the generators' and served for it (sp_template_dim_own). */
static sptune_status mark_own(const char *op, char *problem, size_t len)
{
    sp_template *t = NULL;
    sptune_status st = sp_template_load(op, &t);
    double v;
    const int d = st == SPTUNE_OK ? sp_template_own_dim(t, &v) : -1;
    const size_t n = strlen(problem);
    if (d >= 0 && snprintf(problem + n, len - n, ",%s=%g", sp_template_dim(t, d), v) >= (int)(len - n))
        st = sp_fail(SPTUNE_ERR_INVALID, "the measured problem does not fit in %zu bytes", len);
    sp_template_free(t);
    return st;
}

/* op's problem measured from the user's tensors into problem (cli_data_shape). */
static int data_problem(const cli_cmd *cmd, const char *op, int full, char *problem, size_t len)
{
    const char *path = cli_get(cmd, "data"), *tok = cli_get(cmd, "tokens"), *ord = cli_get(cmd, "order");
    long long M = 0;
    char *end = NULL;
    if (tok && ((M = strtoll(tok, &end, 10)) < 1 || *end || M > 2147483647LL))
        return cli_usage_error(cmd->name, "--tokens wants the largest batch to serve, 1 to 2147483647, not '%s'", tok);
    if (!strcmp(op, "slotfill-spmm")) {
        if (ord) return cli_usage_error(cmd->name, "--order is a TwELL layer's (the order of its neurons)");
        return slotfill_problem(cmd, M, problem, len);
    }
    if (strncmp(op, "twell-", 6) != 0)
        return cli_usage_error(cmd->name, "--data measures a TwELL layer's activations or Slot-Filling weights, not %s's",
                               op);
    if (ord && strcmp(ord, "0") && strcmp(ord, "1"))
        return cli_usage_error(cmd->name, "--order wants 0 (the neurons as the checkpoint has them) or 1 (laid out by "
                               "sptune_twell_hot_order), not '%s'", ord);
    sp_twell_layer l;
    sptune_status st = sp_twell_layer_read(path, cli_get(cmd, "tensors"), !full, &l);
    if (st != SPTUNE_OK) return cli_input_error(cmd->name, st);
    int rc = CLI_OK;
    const long long T = l.M;
    const int D = l.D, F = l.F;
    float *xf = to_float(l.x, (size_t)T * D), *wf = to_float(l.gate, (size_t)F * D);
    unsigned short *gate = malloc((size_t)T * F * 2);
    if (!xf || !wf || !gate) {
        rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory for the gate of %lld tokens x %d neurons",
                                          T, F));
    } else {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = n < 1 ? 1 : n > 64 ? 64 : (int)n;
        pthread_t th[64];
        gate_job jobs[64];
        int running[64];
        for (int i = 0; i < threads; i++) {
            jobs[i] = (gate_job){xf, wf, gate, T, D, F, (int)((long long)F * i / threads),
                                 (int)((long long)F * (i + 1) / threads)};
            running[i] = pthread_create(&th[i], NULL, gate_rows, &jobs[i]) == 0;
            if (!running[i]) gate_rows(&jobs[i]);   /* no thread: this one does its share */
        }
        for (int i = 0; i < threads; i++)
            if (running[i]) pthread_join(th[i], NULL);
        st = sptune_twell_describe_gate(gate, T, F, M ? M : T, D, ord && !strcmp(ord, "1"), problem, len);
        if (st == SPTUNE_OK) st = mark_own(op, problem, len);
        if (st != SPTUNE_OK) rc = cli_error(cmd->name, st);
    }
    free(xf);
    free(wf);
    free(gate);
    sp_twell_layer_free(&l);
    return rc;
}

int cli_data_shape(const cli_cmd *cmd, const char *op, int full, int quiet, const char **shape, char *buf, size_t len)
{
    if (!cli_get(cmd, "data")) {
        if (cli_get(cmd, "tensors") || cli_get(cmd, "tokens") || cli_get(cmd, "order"))
            return cli_usage_error(cmd->name, "--tensors, --tokens and --order go with --data");
        return CLI_OK;
    }
    if (*shape) return cli_usage_error(cmd->name, "--data measures the problem: give it or --shape, not both");
    int rc = data_problem(cmd, op, full, buf, len);
    if (rc != CLI_OK) return rc;
    *shape = buf;
    if (!quiet) printf("measured from %s: %s\n", cli_get(cmd, "data"), buf);
    return CLI_OK;
}

/* libFuzzer target over every parser of input that reaches sptune from outside: tensor files (safetensors, npy,
 * raw), Slot-Filling images (.sf), results tables (TSV), Kernel Tuner's T4 JSON, workload files, and the text of
 * --shape, --config and --budget. The input's first byte picks the parser, the rest is what it reads, so that one
 * corpus (tests/fuzz/seeds) and one run cover them all. Whatever a parser is given it must
 * answer with a status (never crash, read out of bounds or leak), and libFuzzer's -malloc_limit_mb makes any
 * allocation larger than the input could justify a failure too. */
#include "sp_db.h"
#include "sp_db_t4.h"
#include "sp_db_text.h"
#include "sp_file.h"
#include "sp_hash.h"
#include "sp_slotfill.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_tensor_file.h"
#include "sp_tune.h"
#include "sp_workload.h"
#include "sptune.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TENSOR, SLOTFILL, TSV, T4, WORKLOAD, PROBLEM, CONFIG, BUDGET, SLOTFILL_SUMMED, NPARSERS };

/* The parsers that read a path get the input through this file (one per process: libFuzzer runs inputs in turn),
 * removed when the run ends. */
static char path[64];
static void remove_input(void) { unlink(path); }
static const char *input_file(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/sp_fuzz_%ld.in", (long)getpid());
        atexit(remove_input);
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}

/* The input as a C string (the text parsers). */
static char *text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

static int count_row(const sp_result *r, void *ud) { (void)r; ++*(long long *)ud; return 0; }
static int count_t4(const sp_t4_result *r, void *ud) { (void)r; ++*(long long *)ud; return 0; }

static void tensor(const uint8_t *data, size_t size)
{
    if (size < 1) return;
    /* the request: a safetensors name, or a raw shape from the first byte (raw needs one) */
    sp_tensor_request req = {.name = "w", .rows = data[0] & 15, .cols = data[0] >> 4,
                             .format = (data[0] & 1) ? SP_TENSOR_BF16 : SP_TENSOR_F16};
    sp_tensor t;
    if (sp_tensor_parse(data + 1, size - 1, "fuzz", &req, &t) == SPTUNE_OK) sp_tensor_free(&t);
}

static void slotfill(const uint8_t *data, size_t size)
{
    sptune_slotfill *m = NULL;
    if (sptune_slotfill_read(input_file(data, size), &m) != SPTUNE_OK) return;
    sptune_slotfill_info info = {.size = sizeof(sptune_slotfill_info)};
    char problem[128];
    /* what a reader does next: its size, its problem, and (small ones) W decoded */
    if (sptune_slotfill_info_get(m, &info) == SPTUNE_OK && info.M * info.K <= (1 << 20)) {
        void *w = malloc((size_t)(info.M * info.K * 2 + 2));
        if (w) sptune_slotfill_decode(m, w);
        free(w);
    }
    sptune_slotfill_problem(m, 16, problem, sizeof problem);
    sptune_slotfill_free(m);
}

/* The same with the image's checksum made right (offset 112 of the header, over what follows it), so that the
 * mutations reach the checks of the body, past the checksum that would refuse almost all of them. */
static void slotfill_summed(const uint8_t *data, size_t size)
{
    if (size < SP_SF_HEADER) return;
    uint8_t *copy = malloc(size);
    if (!copy) return;
    memcpy(copy, data, size);
    const uint64_t sum = sp_checksum64(copy + SP_SF_HEADER, size - SP_SF_HEADER);
    for (int i = 0; i < 8; i++) copy[112 + i] = (uint8_t)(sum >> (8 * i));
    slotfill(copy, size);
    free(copy);
}

static void tsv(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
    if (!f) return;
    long long rows = 0;
    if (size) sp_db_text_foreach(f, "fuzz.tsv", count_row, &rows);
    fclose(f);
}

static void t4(const uint8_t *data, size_t size)
{
    long long n = 0;
    sp_t4_read(input_file(data, size), count_t4, &n);
}

static void workload(const uint8_t *data, size_t size)
{
    sp_workload w;
    if (sp_workload_load(input_file(data, size), &w) == SPTUNE_OK) sp_workload_free(&w);
}

/* --shape and --config against each family's template (loaded once) */
static sp_template *templates[3];
static void shape_or_config(const uint8_t *data, size_t size, int config)
{
    static const char *const ops[3] = {"gemm", "twell-ffn", "slotfill-spmm"};
    if (size < 1) return;
    const int k = data[0] % 3;
    if (!templates[k] && sp_template_load(ops[k], &templates[k]) != SPTUNE_OK) abort();
    char *s = text(data + 1, size - 1);
    if (!s) return;
    if (config) {
        sp_config c;
        sp_config_parse(templates[k], s, &c);
    } else {
        sp_problem p;
        sp_problem_parse(templates[k], s, &p);
    }
    free(s);
}

static void budget(const uint8_t *data, size_t size)
{
    char *s = text(data, size);
    sp_tune_budget b;
    if (s) sp_budget_parse(s, &b);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *rest = data + 1;
    const size_t n = size - 1;
    switch (data[0] % NPARSERS) {
    case TENSOR: tensor(rest, n); break;
    case SLOTFILL: slotfill(rest, n); break;
    case TSV: tsv(rest, n); break;
    case T4: t4(rest, n); break;
    case WORKLOAD: workload(rest, n); break;
    case PROBLEM: shape_or_config(rest, n, 0); break;
    case CONFIG: shape_or_config(rest, n, 1); break;
    case BUDGET: budget(rest, n); break;
    case SLOTFILL_SUMMED: slotfill_summed(rest, n); break;
    }
    sp_clear_error();
    return 0;
}

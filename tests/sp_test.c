#include "sp_test.h"
#include "sp_db.h"
#include "sp_gpu.h"
#include "sptune.h"
#include "sp_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sp_test_failures = 0;
int sp_test_checks = 0;

const char *sp_test_tmpdir(const char *test_name)
{
    static char path[1024];
    const char *base = getenv("SPTUNE_TEST_TMP");
    char cmd[2 * sizeof path + 64];
    snprintf(path, sizeof path, "%s/%s.%ld", base && *base ? base : "/tmp", test_name, (long)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make %s\n", path);
        exit(1);
    }
    return path;
}

const char *sp_test_cache_dir(const char *test_name)
{
    static char path[1024];
    const char *shared = getenv("SPTUNE_TEST_CACHE");
    if (shared && *shared) return shared;
    char name[256];
    snprintf(name, sizeof name, "%s-cache", test_name);
    snprintf(path, sizeof path, "%s", sp_test_tmpdir(name));
    return path;
}

int sp_test_has(const char *msg, const char *part) { return msg && strstr(msg, part) != NULL; }

int sp_test_error_has(const char *part) { return sp_test_has(sptune_last_error(), part); }

int sp_test_done(const char *test_name)
{
    printf("%s: %d checks, %d failed\n", test_name, sp_test_checks, sp_test_failures);
    return sp_test_failures ? 1 : 0;
}

/* Writes a safetensors file of n 2-D tensors (names, rows x cols 16-bit elements of dtype, data); 1 when written. */
int sp_test_write_safetensors(const char *path, int n, const char *const *names, const int *rows, const int *cols,
                             const char *dtype, const unsigned short *const *data)
{
    char hdr[2048];
    int len = snprintf(hdr, sizeof hdr, "{");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const size_t bytes = (size_t)rows[i] * cols[i] * 2;
        len += snprintf(hdr + len, sizeof hdr - (size_t)len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%d,%d],"
                        "\"data_offsets\":[%zu,%zu]}", i ? "," : "", names[i], dtype, rows[i], cols[i], off, off + bytes);
        off += bytes;
    }
    len += snprintf(hdr + len, sizeof hdr - (size_t)len, "}");
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((unsigned long long)len >> (8 * i));
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(len8, 1, 8, f) == 8 && fwrite(hdr, 1, (size_t)len, f) == (size_t)len;
    for (int i = 0; ok && i < n; i++) {
        const size_t bytes = (size_t)rows[i] * cols[i] * 2;
        ok = fwrite(data[i], 1, bytes, f) == bytes;
    }
    if (f && fclose(f) != 0) ok = 0;
    return ok;
}

void sp_test_problem_parses(const char *op, const char *problem)
{
    sp_template *t = NULL;
    sp_problem p;
    CHECK_ST(sp_template_load(op, &t), SPTUNE_OK);
    if (t) CHECK_MSG(sp_problem_parse(t, problem, &p) == SPTUNE_OK, "%s %s: %s", op, problem, sptune_last_error());
    sp_template_free(t);
}

int sp_test_skip(const char *test_name, const char *why)
{
    printf("%s: SKIPPED: %s\n", test_name, why);
    return 77;
}

sp_gpu_profile sp_test_profile(const char *name)
{
    sp_gpu_profile g;
    memset(&g, 0, sizeof g);
    if (sp_gpu_profile_named(name, &g) != SPTUNE_OK) {
        fprintf(stderr, "profile %s: %s\n", name, sptune_last_error());
        exit(1);
    }
    return g;
}

void sp_test_record(sp_db *db, const sp_env *env, const sp_template *t, const char *key, const char *config, double ms,
                    double baseline_ms, int outcome)
{
    sp_result r;
    memset(&r, 0, sizeof r);
    r.env = env;
    r.template_name = sp_template_name(t);
    r.template_hash = sp_template_hash(t);
    r.problem_key = key;
    r.config = config;
    r.outcome = (sp_outcome)outcome;
    r.detail = outcome == SP_OUTCOME_OK ? NULL : "simulated";
    r.timing.runs = 10;
    r.timing.median_ms = r.timing.min_ms = r.timing.max_ms = r.timing.p10_ms = r.timing.p90_ms = ms;
    r.timing.baseline_ms = baseline_ms;
    r.timing.rel_error = 1e-3;
    r.timing.method = "simulated";
    r.registers = r.smem_bytes = r.spill_bytes = -1;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
}

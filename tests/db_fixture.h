/* What the database tests share (test_db.c, test_db_safety.c): a scratch folder, environments, results,
 * and raw SQLite access to look under the API. Included once by each test program. */
#ifndef DB_FIXTURE_H
#define DB_FIXTURE_H

#include "sp_db.h"
#include "sp_db_text.h"
#include "sp_db_internal.h"
#include "sp_db_migrate.h"
#include "sp_status.h"
#include "sp_test.h"
#include "sp_str.h"
#include "sp_file.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tmp; /* the test's folder (sp_test_tmpdir) */

__attribute__((unused)) static const sp_env ENV_H200 = {"NVIDIA H200", "h200", 9, 0, 132, "13.0", "13.0", "0.1.0"};
/* The same GPU profile with another driver: a second environment row. */
__attribute__((unused)) static const sp_env ENV_H200_NEW_DRIVER = {"NVIDIA H200", "h200", 9, 0, 132, "13.1", "13.0", "0.1.0"};
__attribute__((unused)) static const sp_env ENV_H100 = {"NVIDIA H100 80GB HBM3", "h100", 9, 0, 132, "13.0", "13.0", "0.1.0"};

__attribute__((unused)) static const char HASH_A[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
__attribute__((unused)) static const char HASH_B[] = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
__attribute__((unused)) static const char PROBLEM[] = "M=4096,N=4096,K=4096";

__attribute__((unused)) static char *path_in(const char *name)
{
    char *p = sp_asprintf("%s/%s", tmp, name);
    if (!p) abort();
    return p;
}

__attribute__((unused)) static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

__attribute__((unused)) static int side_file_exists(const char *path, const char *suffix)
{
    char *p = sp_asprintf("%s%s", path, suffix);
    int e = exists(p);
    free(p);
    return e;
}

__attribute__((unused)) static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Runs SQL on path with a raw connection; returns the first column of the first row as text
 * (malloc'd, "" when no row) or NULL on error. */
__attribute__((unused)) static char *raw_query(const char *path, const char *sql)
{
    sqlite3 *h = NULL;
    char *out = NULL;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_stmt *s = NULL;
        if (sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK) {
            int rc = sqlite3_step(s);
            if (rc == SQLITE_ROW) {
                const char *t = (const char *)sqlite3_column_text(s, 0);
                out = sp_strdup(t ? t : "");
            } else if (rc == SQLITE_DONE) {
                out = sp_strdup("");
            }
        }
        if (!out) fprintf(stderr, "raw query '%s' on %s: %s\n", sql, path, sqlite3_errmsg(h));
        sqlite3_finalize(s);
    }
    sqlite3_close(h);
    return out;
}

__attribute__((unused)) static long long raw_int(const char *path, const char *sql)
{
    char *t = raw_query(path, sql);
    long long v = t ? atoll(t) : -12345;
    free(t);
    return v;
}

__attribute__((unused)) static int raw_exec_q(const char *path, const char *sql, int quiet)
{
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK && !quiet) fprintf(stderr, "raw exec '%s' on %s: %s\n", sql, path, sqlite3_errmsg(h));
    sqlite3_close(h);
    return rc;
}

__attribute__((unused)) static int raw_exec(const char *path, const char *sql) { return raw_exec_q(path, sql, 0); }

__attribute__((unused)) static sp_result ok_result(const sp_env *env, const char *hash, const char *problem, const char *config,
                           double median)
{
    sp_result r;
    memset(&r, 0, sizeof r);
    r.env = env;
    r.template_name = "gemm";
    r.template_hash = hash;
    r.problem_key = problem;
    r.config = config;
    r.outcome = SP_OUTCOME_OK;
    r.timing.runs = 50;
    r.timing.median_ms = median;
    r.timing.min_ms = median * 0.95;
    r.timing.max_ms = median * 1.2;
    r.timing.p10_ms = median * 0.97;
    r.timing.p90_ms = median * 1.1;
    r.timing.baseline_ms = 1.5;
    r.timing.rel_error = 1e-4;
    r.timing.method = "events;warmup=10;flush=l2;runs=50";
    r.registers = 128;
    r.smem_bytes = 65536;
    r.spill_bytes = 0;
    return r;
}

__attribute__((unused)) static sp_result failed_result(const sp_env *env, const char *config, sp_outcome o, const char *detail)
{
    sp_result r = ok_result(env, HASH_A, PROBLEM, config, 0);
    r.outcome = o;
    r.detail = detail;
    r.timing.runs = 0;
    r.timing.rel_error = o == SP_OUTCOME_WRONG_RESULT ? 0.5 : -1;
    r.registers = -1;
    r.smem_bytes = -1;
    r.spill_bytes = -1;
    return r;
}

#endif

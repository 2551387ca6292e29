/* The tuning database: creation, reopen, record/lookup/best/foreach/count, replacement, failure
 * outcomes, input validation, refusal of foreign and newer files (left byte-identical),
 * migrations (and their rollback), a failing record rolled back, a locked database, and two
 * processes recording into one file at once. */
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

static const char *tmp;

static const sp_env ENV_H200 = {"NVIDIA H200", "h200", 9, 0, 132, "13.0", "13.0", "0.1.0"};
/* The same GPU profile with another driver: a second environment row. */
static const sp_env ENV_H200_NEW_DRIVER = {"NVIDIA H200", "h200", 9, 0, 132, "13.1", "13.0", "0.1.0"};
static const sp_env ENV_H100 = {"NVIDIA H100 80GB HBM3", "h100", 9, 0, 132, "13.0", "13.0", "0.1.0"};

static const char HASH_A[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
static const char HASH_B[] = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
static const char PROBLEM[] = "M=4096,N=4096,K=4096";

static char *path_in(const char *name)
{
    char *p = sp_asprintf("%s/%s", tmp, name);
    if (!p) abort();
    return p;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static int side_file_exists(const char *path, const char *suffix)
{
    char *p = sp_asprintf("%s%s", path, suffix);
    int e = exists(p);
    free(p);
    return e;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* Runs SQL on path with a raw connection; returns the first column of the first row as text
 * (malloc'd, "" when no row) or NULL on error. */
static char *raw_query(const char *path, const char *sql)
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

static long long raw_int(const char *path, const char *sql)
{
    char *t = raw_query(path, sql);
    long long v = t ? atoll(t) : -12345;
    free(t);
    return v;
}

static int raw_exec_q(const char *path, const char *sql, int quiet)
{
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK && !quiet) fprintf(stderr, "raw exec '%s' on %s: %s\n", sql, path, sqlite3_errmsg(h));
    sqlite3_close(h);
    return rc;
}

static int raw_exec(const char *path, const char *sql) { return raw_exec_q(path, sql, 0); }

static sp_result ok_result(const sp_env *env, const char *hash, const char *problem, const char *config,
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

static sp_result failed_result(const sp_env *env, const char *config, sp_outcome o, const char *detail)
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

/* ---- creation -------------------------------------------------------------------------------- */

static void test_create(void)
{
    char *path = path_in("new/nested/folder/tuning.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_ERR_NOT_FOUND);
    CHECK(db == NULL);
    CHECK(!exists(path));

    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    CHECK(db != NULL);
    CHECK(sp_db_schema_version(db) == SP_DB_SCHEMA_VERSION);
    /* Raw checks while it is open. */
    CHECK(raw_int(path, "PRAGMA application_id") == SP_DB_APPLICATION_ID);
    CHECK(raw_int(path, "PRAGMA user_version") == SP_DB_SCHEMA_VERSION);
    char *mode = raw_query(path, "PRAGMA journal_mode");
    CHECK_MSG(mode && strcmp(mode, "wal") == 0, "journal_mode %s", mode ? mode : "(error)");
    free(mode);
    CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
                        "('environments', 'templates', 'problems', 'configurations', 'results')") == 5);
    CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                        "AND name = 'results_by_template_problem'") == 1);
    sqlite3 *h = sp_db_handle(db);
    CHECK(h != NULL);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(h, "PRAGMA foreign_keys", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        CHECK(sqlite3_column_int(s, 0) == 1);
    else
        CHECK(!"PRAGMA foreign_keys");
    sqlite3_finalize(s);
    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 0);
    sp_db_close(db);
    /* Closed cleanly: WAL checkpointed and removed. */
    CHECK(!side_file_exists(path, "-wal"));
    CHECK(!side_file_exists(path, "-shm"));

    /* Reopen without create: fine, nothing migrated. */
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_OK);
    CHECK(sp_db_schema_version(db) == SP_DB_SCHEMA_VERSION);
    sp_db_close(db);

    /* A zero-length file is initialised only with create. */
    char *empty = path_in("empty.db");
    write_bytes(empty, "", 0);
    CHECK_ST(sp_db_open(empty, 0, &db), SPTUNE_ERR_DB);
    CHECK(strstr(sptune_last_error(), "is not an sptune database") != NULL);
    struct stat sb;
    CHECK(stat(empty, &sb) == 0 && sb.st_size == 0);
    CHECK_ST(sp_db_open_readonly(empty, &db), SPTUNE_ERR_DB);
    CHECK_ST(sp_db_open(empty, 1, &db), SPTUNE_OK);
    sp_db_close(db);
    CHECK(raw_int(empty, "PRAGMA application_id") == SP_DB_APPLICATION_ID);

    /* An SQLite database with nothing in it (a table created and dropped) is initialised too. */
    char *blank = path_in("blank.db");
    CHECK(raw_exec(blank, "CREATE TABLE t(x); DROP TABLE t;") == SQLITE_OK);
    CHECK(raw_int(blank, "PRAGMA application_id") == 0);
    CHECK_ST(sp_db_open(blank, 0, &db), SPTUNE_ERR_DB);
    CHECK_ST(sp_db_open(blank, 1, &db), SPTUNE_OK);
    sp_db_close(db);
    CHECK(raw_int(blank, "PRAGMA user_version") == SP_DB_SCHEMA_VERSION);

    /* Characters that mean something in a URI are just characters of the name. */
    char *odd = path_in("odd ?name#100%.db");
    CHECK_ST(sp_db_open(odd, 1, &db), SPTUNE_OK);
    sp_db_close(db);
    CHECK_ST(sp_db_open(odd, 0, &db), SPTUNE_OK);
    CHECK(sp_db_schema_version(db) == SP_DB_SCHEMA_VERSION);
    sp_db_close(db);
    CHECK_ST(sp_db_open_readonly(odd, &db), SPTUNE_OK);
    sp_db_close(db);
    CHECK(raw_int(odd, "PRAGMA application_id") == SP_DB_APPLICATION_ID);
    free(odd);

    CHECK_ST(sp_db_open(NULL, 1, &db), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_open("", 1, &db), SPTUNE_ERR_INVALID);
    free(blank);
    free(empty);
    free(path);
}

/* ---- record / lookup / best / foreach / count ------------------------------------------------ */

typedef struct rows {
    int n;
    int ok, failed;
    int saw_compile_failed_detail;
    int saw_unknown_numbers;
    int saw_timing;
    int stop_after;
} rows;

static int collect(const sp_result *r, void *ud)
{
    rows *w = ud;
    w->n++;
    if (r->outcome == SP_OUTCOME_OK) w->ok++;
    else w->failed++;
    if (r->outcome == SP_OUTCOME_COMPILE_FAILED && r->detail && strcmp(r->detail, "ptxas: too many registers") == 0 &&
        r->timing.median_ms < 0 && r->timing.runs == 0)
        w->saw_compile_failed_detail = 1;
    if (r->outcome == SP_OUTCOME_COMPILE_FAILED && r->registers == -1 && r->smem_bytes == -1 &&
        r->spill_bytes == -1 && r->timing.baseline_ms < 0)
        w->saw_unknown_numbers = 1;
    if (r->outcome == SP_OUTCOME_OK && strcmp(r->config, "bm=128,bn=128") == 0 &&
        strcmp(r->env->gpu_name, "NVIDIA H200") == 0 && strcmp(r->env->driver_version, "13.0") == 0 &&
        r->env->sm_count == 132 && r->env->cc_major == 9 && strcmp(r->template_hash, HASH_A) == 0 &&
        strcmp(r->problem_key, PROBLEM) == 0 && r->timing.runs == 50 && r->registers == 128 &&
        r->smem_bytes == 65536 && r->spill_bytes == 0 && r->timing.method &&
        strcmp(r->timing.method, "events;warmup=10;flush=l2;runs=50") == 0 &&
        fabs(r->timing.median_ms - 0.8) < 1e-12 && fabs(r->timing.p90_ms - 0.88) < 1e-12 &&
        fabs(r->timing.baseline_ms - 1.5) < 1e-12 && r->recorded_at > 1600000000)
        w->saw_timing = 1;
    return w->stop_after && w->n >= w->stop_after;
}

static void test_record_and_read(void)
{
    char *path = path_in("results.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    if (!db) { free(path); return; }

    sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=64,bn=128", 1.3);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    r = ok_result(&ENV_H200, HASH_A, "M=1,N=4096,K=4096", "bm=64,bn=128", 0.05);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    long long n = 0;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 3);

    /* lookup */
    int found = -1;
    sp_outcome o = SP_OUTCOME__COUNT;
    double med = 0;
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=64,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_OK && fabs(med - 1.3) < 1e-12);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_B, PROBLEM, "bm=64,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 0 && med == -1);
    CHECK_ST(sp_db_lookup(db, &ENV_H200_NEW_DRIVER, "gemm", HASH_A, PROBLEM, "bm=64,bn=128", &found, NULL, NULL),
             SPTUNE_OK);
    CHECK(found == 0);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=32,bn=32", &found, NULL, NULL), SPTUNE_OK);
    CHECK(found == 0);

    /* Replacement of the same key: still one row, the new numbers. */
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 0.8);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 3);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=128,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_OK && fabs(med - 0.8) < 1e-12);

    /* A result can also be replaced by a failure (and back). */
    sp_result f = failed_result(&ENV_H200, "bm=64,bn=128", SP_OUTCOME_LAUNCH_FAILED, "illegal address");
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=64,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_LAUNCH_FAILED && med == -1);
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=64,bn=128", 1.3);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 3);
    CHECK(raw_int(path, "SELECT count(*) FROM results WHERE detail IS NULL AND median_ms = 1.3") == 1);

    /* best: the lowest median of this profile */
    char *config = NULL;
    double base = 0;
    CHECK_ST(sp_db_best(db, "h200", "gemm", PROBLEM, &found, &config, &med, &base), SPTUNE_OK);
    CHECK(found == 1 && config && strcmp(config, "bm=128,bn=128") == 0);
    CHECK(fabs(med - 0.8) < 1e-12 && fabs(base - 1.5) < 1e-12);
    free(config);
    config = NULL;

    /* Failure outcomes are recorded (and looked up), even with much "better" numbers. */
    f = failed_result(&ENV_H200, "bm=256,bn=256", SP_OUTCOME_COMPILE_FAILED, "ptxas: too many registers");
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    f = failed_result(&ENV_H200, "bm=16,bn=16", SP_OUTCOME_WRONG_RESULT, "max rel error 0.5");
    f.timing.median_ms = 0.001; /* ignored for a failure */
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    f = failed_result(&ENV_H200, "bm=16,bn=32", SP_OUTCOME_LAUNCH_FAILED, "illegal address");
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    f = failed_result(&ENV_H200, "bm=16,bn=64", SP_OUTCOME_TIMED_OUT, NULL);
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    f = failed_result(&ENV_H200, "bm=16,bn=128", SP_OUTCOME_INVALID, "smem exceeds the limit");
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=256,bn=256", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_COMPILE_FAILED && med == -1);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=16,bn=16", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_WRONG_RESULT && med == -1);
    CHECK(raw_int(path, "SELECT count(*) FROM results WHERE outcome = 'wrong_result' AND rel_error = 0.5 "
                        "AND median_ms IS NULL") == 1);

    /* Other GPU profiles, and other environments of the same profile. */
    r = ok_result(&ENV_H100, HASH_A, PROBLEM, "bm=64,bn=64", 0.1);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_best(db, "h200", "gemm", PROBLEM, &found, &config, &med, &base), SPTUNE_OK);
    CHECK(found == 1 && config && strcmp(config, "bm=128,bn=128") == 0);
    free(config);
    config = NULL;
    CHECK_ST(sp_db_best(db, "h100", "gemm", PROBLEM, &found, &config, &med, NULL), SPTUNE_OK);
    CHECK(found == 1 && config && strcmp(config, "bm=64,bn=64") == 0 && fabs(med - 0.1) < 1e-12);
    free(config);
    config = NULL;
    r = ok_result(&ENV_H200_NEW_DRIVER, HASH_B, PROBLEM, "bm=128,bn=64", 0.7);
    r.timing.baseline_ms = -1; /* no baseline */
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_best(db, "h200", "gemm", PROBLEM, &found, &config, &med, &base), SPTUNE_OK);
    CHECK(found == 1 && config && strcmp(config, "bm=128,bn=64") == 0 && fabs(med - 0.7) < 1e-12 && base == -1);
    free(config);
    config = NULL;
    /* Nothing for an unknown problem, profile or template. */
    CHECK_ST(sp_db_best(db, "h200", "gemm", "M=7,N=7,K=7", &found, &config, &med, &base), SPTUNE_OK);
    CHECK(found == 0 && config == NULL);
    CHECK_ST(sp_db_best(db, "rtx-pro-6000", "gemm", PROBLEM, &found, &config, NULL, NULL), SPTUNE_OK);
    CHECK(found == 0 && config == NULL);
    CHECK_ST(sp_db_best(db, "h200", "twell_ffn", PROBLEM, &found, &config, NULL, NULL), SPTUNE_OK);
    CHECK(found == 0 && config == NULL);
    /* A problem with only failures has no best. */
    f = failed_result(&ENV_H200, "bm=8,bn=8", SP_OUTCOME_TIMED_OUT, "watchdog");
    f.problem_key = "M=3,N=3,K=3";
    CHECK_ST(sp_db_record(db, &f), SPTUNE_OK);
    CHECK_ST(sp_db_best(db, "h200", "gemm", "M=3,N=3,K=3", &found, &config, NULL, NULL), SPTUNE_OK);
    CHECK(found == 0 && config == NULL);

    /* foreach */
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 11);
    rows w;
    memset(&w, 0, sizeof w);
    CHECK_ST(sp_db_foreach(db, collect, &w), SPTUNE_OK);
    CHECK(w.n == 11 && w.ok == 5 && w.failed == 6);
    CHECK(w.saw_compile_failed_detail && w.saw_unknown_numbers && w.saw_timing);
    memset(&w, 0, sizeof w);
    w.stop_after = 4;
    CHECK_ST(sp_db_foreach(db, collect, &w), SPTUNE_OK);
    CHECK(w.n == 4);

    /* Shared rows are reused, not duplicated. */
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 3);
    CHECK(raw_int(path, "SELECT count(*) FROM templates") == 2);
    CHECK(raw_int(path, "SELECT count(*) FROM problems") == 3);
    sp_db_close(db);

    /* Reopen keeps everything. */
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 11);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=128,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_OK && fabs(med - 0.8) < 1e-12);
    sp_db_close(db);

    /* Read-only: reads work, writes are refused, nothing is left behind. */
    CHECK_ST(sp_db_open_readonly(path, &db), SPTUNE_OK);
    if (db) {
        CHECK(sp_db_schema_version(db) == SP_DB_SCHEMA_VERSION);
        CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
        CHECK(n == 11);
        CHECK_ST(sp_db_best(db, "h100", "gemm", PROBLEM, &found, &config, NULL, NULL), SPTUNE_OK);
        CHECK(found == 1 && config && strcmp(config, "bm=64,bn=64") == 0);
        free(config);
        config = NULL;
        r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=32,bn=32", 1.0);
        CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
        CHECK(strstr(sptune_last_error(), "read-only") != NULL);
        CHECK(sqlite3_exec(sp_db_handle(db), "DELETE FROM results", NULL, NULL, NULL) != SQLITE_OK);
        sp_db_close(db);
    }
    CHECK(raw_int(path, "SELECT count(*) FROM results") == 11);
    CHECK(!side_file_exists(path, "-wal"));
    char *missing = path_in("missing.db");
    CHECK_ST(sp_db_open_readonly(missing, &db), SPTUNE_ERR_NOT_FOUND);
    CHECK(!exists(missing));
    free(missing);
    free(path);
}

/* ---- invalid inputs -------------------------------------------------------------------------- */

static void test_invalid(void)
{
    char *path = path_in("invalid.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    if (!db) { free(path); return; }
    sp_result good = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    sp_result r;
    sp_env env;

    CHECK_ST(sp_db_record(db, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_record(NULL, &good), SPTUNE_ERR_INVALID);
    r = good; r.env = NULL;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    env = ENV_H200; env.gpu_name = NULL; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "gpu_name") != NULL);
    env = ENV_H200; env.gpu_profile = NULL; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    env = ENV_H200; env.driver_version = NULL; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    env = ENV_H200; env.nvrtc_version = NULL; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    env = ENV_H200; env.sptune_version = NULL; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    env = ENV_H200; env.sm_count = -1; r = good; r.env = &env;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.template_name = NULL;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.template_name = "";
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.template_hash = NULL;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.problem_key = NULL;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.config = NULL;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.outcome = SP_OUTCOME__COUNT;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.outcome = (sp_outcome)-1;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.median_ms = NAN;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    CHECK(strstr(sptune_last_error(), "median_ms") != NULL);
    r = good; r.timing.median_ms = -1; r.timing.min_ms = -2;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.max_ms = INFINITY;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.p10_ms = NAN;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.min_ms = 2.0; /* min above the median */
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.runs = 0;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.baseline_ms = NAN;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);
    r = good; r.timing.rel_error = NAN;
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_INVALID);

    int found;
    char *config = NULL;
    CHECK_ST(sp_db_lookup(db, NULL, "gemm", HASH_A, PROBLEM, "", &found, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, NULL, HASH_A, PROBLEM, "", &found, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, NULL, &found, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "", NULL, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_best(db, NULL, "gemm", PROBLEM, &found, &config, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_best(db, "h200", "gemm", NULL, &found, &config, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_best(db, "h200", "gemm", PROBLEM, &found, NULL, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_foreach(db, NULL, NULL), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_db_count(db, NULL), SPTUNE_ERR_INVALID);

    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 0);
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 0);

    /* A failure needs no timings; a template without parameters has an empty configuration. */
    r = good; r.outcome = SP_OUTCOME_COMPILE_FAILED; r.timing.median_ms = NAN; r.timing.runs = 0; r.config = "";
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK(raw_int(path, "SELECT count(*) FROM results WHERE median_ms IS NULL AND runs IS NULL") == 1);

    /* outcome names */
    for (int i = 0; i < SP_OUTCOME__COUNT; i++) {
        sp_outcome o = SP_OUTCOME__COUNT;
        CHECK(sp_outcome_name((sp_outcome)i) != NULL);
        CHECK(sp_outcome_parse(sp_outcome_name((sp_outcome)i), &o) && o == (sp_outcome)i);
    }
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_OK), "ok") == 0);
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_COMPILE_FAILED), "compile_failed") == 0);
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_LAUNCH_FAILED), "launch_failed") == 0);
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_WRONG_RESULT), "wrong_result") == 0);
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_TIMED_OUT), "timed_out") == 0);
    CHECK(strcmp(sp_outcome_name(SP_OUTCOME_INVALID), "invalid") == 0);
    CHECK(sp_outcome_name(SP_OUTCOME__COUNT) == NULL);
    sp_outcome o;
    CHECK(!sp_outcome_parse("OK", &o));
    CHECK(!sp_outcome_parse("", &o));
    CHECK(!sp_outcome_parse(NULL, &o));
    /* The CHECK constraint guards the column against anything else. */
    CHECK(raw_exec_q(path, "UPDATE results SET outcome = 'great'", 1) != SQLITE_OK);
    sp_db_close(db);
    free(path);
}

/* ---- refusals -------------------------------------------------------------------------------- */

/* Opening path (both ways) must fail with SPTUNE_ERR_DB and exactly `want`, leaving the file
 * byte-identical and no -wal/-shm/-journal behind. */
static void check_refused(const char *path, const char *want)
{
    char *before = NULL, *after = NULL;
    size_t nbefore = 0, nafter = 0;
    CHECK_ST(sp_read_file(path, &before, &nbefore), SPTUNE_OK);
    for (int how = 0; how < 3; how++) {
        sp_db *db = NULL;
        sptune_status st = how == 0 ? sp_db_open(path, 1, &db)
                         : how == 1 ? sp_db_open(path, 0, &db)
                                    : sp_db_open_readonly(path, &db);
        CHECK_MSG(st == SPTUNE_ERR_DB && db == NULL, "open #%d of %s: %s", how, path, sptune_status_name(st));
        CHECK_MSG(strcmp(sptune_last_error(), want) == 0, "message '%s', want '%s'", sptune_last_error(), want);
        sp_db_close(db);
    }
    CHECK_ST(sp_read_file(path, &after, &nafter), SPTUNE_OK);
    CHECK_MSG(before && after && nbefore == nafter && memcmp(before, after, nbefore) == 0,
              "%s changed (%zu -> %zu bytes)", path, nbefore, nafter);
    CHECK_MSG(!side_file_exists(path, "-wal"), "%s-wal left behind", path);
    CHECK_MSG(!side_file_exists(path, "-shm"), "%s-shm left behind", path);
    CHECK_MSG(!side_file_exists(path, "-journal"), "%s-journal left behind", path);
    free(before);
    free(after);
}

static void test_refusals(void)
{
    char want[2048];

    /* A text file (longer than an SQLite header, and a short one). */
    char *text = path_in("notes.txt");
    const char notes[] = "These are my notes. They are not a database, and must stay as they are.\n"
                         "Second line, so that the file is longer than 100 bytes in total....\n";
    write_bytes(text, notes, sizeof notes - 1);
    snprintf(want, sizeof want, "%s is not an sptune database (not an SQLite file); left untouched", text);
    check_refused(text, want);
    char *shorty = path_in("short.txt");
    write_bytes(shorty, "hi\n", 3);
    snprintf(want, sizeof want, "%s is not an sptune database (not an SQLite file); left untouched", shorty);
    check_refused(shorty, want);

    /* A foreign SQLite database, in rollback-journal mode and in WAL mode. */
    char *foreign = path_in("foreign.sqlite");
    CHECK(raw_exec(foreign, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                            "INSERT INTO customers (name) VALUES ('ada'), ('grace');") == SQLITE_OK);
    snprintf(want, sizeof want, "%s is not an sptune database (application_id 0x00000000); left untouched",
             foreign);
    check_refused(foreign, want);
    CHECK(raw_int(foreign, "SELECT count(*) FROM customers") == 2);
    char *foreign_wal = path_in("foreign-wal.sqlite");
    CHECK(raw_exec(foreign_wal, "PRAGMA journal_mode = WAL; PRAGMA application_id = 1234;"
                                "CREATE TABLE t (x); INSERT INTO t VALUES (1);") == SQLITE_OK);
    CHECK(!side_file_exists(foreign_wal, "-wal"));
    snprintf(want, sizeof want, "%s is not an sptune database (application_id 0x000004d2); left untouched",
             foreign_wal);
    check_refused(foreign_wal, want);

    /* A database of a newer sptune. */
    char *future = path_in("future.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(future, 1, &db), SPTUNE_OK);
    sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    sp_db_close(db);
    CHECK(raw_exec(future, "PRAGMA user_version = 99") == SQLITE_OK);
    CHECK(!side_file_exists(future, "-wal"));
    snprintf(want, sizeof want,
             "%s was written by a newer sptune (schema 99; this build reads up to %d); left untouched", future,
             SP_DB_SCHEMA_VERSION);
    check_refused(future, want);
    CHECK(raw_int(future, "PRAGMA user_version") == 99);

    /* A folder is not a database either. */
    char *folder = path_in("a-folder.db");
    CHECK(mkdir(folder, 0755) == 0);
    CHECK_ST(sp_db_open(folder, 1, &db), SPTUNE_ERR_DB);
    CHECK(strstr(sptune_last_error(), "not a regular file") != NULL);

    free(folder);
    free(future);
    free(foreign_wal);
    free(foreign);
    free(shorty);
    free(text);
}

/* ---- migrations ------------------------------------------------------------------------------ */

static long long count_tables(sqlite3 *h)
{
    sqlite3_stmt *s = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_schema", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
}

static void test_migrations(void)
{
    int nreal = 0;
    const sp_db_step *real = sp_db_schema_steps(&nreal);
    CHECK(nreal == SP_DB_SCHEMA_VERSION && real != NULL);

    /* A v1 database with a result in it. */
    char *path = path_in("migrate.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    sp_db_close(db);

    /* Two more steps: current -> current + 2. */
    enum { NR = SP_DB_SCHEMA_VERSION };
    sp_db_step steps[NR + 2];
    for (int i = 0; i < NR; i++) steps[i] = real[i];
    steps[NR] = (sp_db_step){"add a notes table", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"};
    steps[NR + 1] = (sp_db_step){"add a column", "ALTER TABLE results ADD COLUMN note TEXT; UPDATE results SET note = 'migrated';"};
    sqlite3 *h = NULL;
    CHECK(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    int from = -1, to = -1;
    CHECK_ST(sp_db_migrate(h, path, steps, NR + 2, &from, &to), SPTUNE_OK);
    CHECK(from == NR && to == NR + 2);
    /* Applying again does nothing. */
    CHECK_ST(sp_db_migrate(h, path, steps, NR + 2, &from, &to), SPTUNE_OK);
    CHECK(from == NR + 2 && to == NR + 2);
    sqlite3_close(h);
    CHECK(raw_int(path, "PRAGMA user_version") == NR + 2);
    CHECK(raw_int(path, "PRAGMA application_id") == SP_DB_APPLICATION_ID);
    CHECK(raw_int(path, "SELECT count(*) FROM results WHERE note = 'migrated'") == 1);
    CHECK(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'notes'") == 1);
    /* This build now reads it as newer. */
    char want[2048];
    snprintf(want, sizeof want,
             "%s was written by a newer sptune (schema %d; this build reads up to %d); left untouched", path, NR + 2,
             SP_DB_SCHEMA_VERSION);
    check_refused(path, want);
    /* And a list shorter than the file's version refuses as well, changing nothing. */
    CHECK(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK_ST(sp_db_migrate(h, path, steps, NR + 1, NULL, NULL), SPTUNE_ERR_DB);
    snprintf(want, sizeof want, "newer sptune (schema %d", NR + 2);
    CHECK(strstr(sptune_last_error(), want) != NULL);
    sqlite3_close(h);
    CHECK(raw_int(path, "PRAGMA user_version") == NR + 2);

    /* A failing step rolls back every step of the run, and the version. */
    char *path2 = path_in("migrate-fail.db");
    CHECK_ST(sp_db_open(path2, 1, &db), SPTUNE_OK);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    sp_db_close(db);
    sp_db_step bad[NR + 3];
    for (int i = 0; i < NR; i++) bad[i] = real[i];
    bad[NR] = (sp_db_step){"add a notes table", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"};
    bad[NR + 1] = (sp_db_step){"drop the results", "DELETE FROM results;"};
    bad[NR + 2] = (sp_db_step){"a broken step", "CREATE TABLE broken (x; -- syntax error"};
    CHECK(sqlite3_open_v2(path2, &h, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    long long objects_before = count_tables(h);
    CHECK_ST(sp_db_migrate(h, path2, bad, NR + 3, NULL, NULL), SPTUNE_ERR_DB);
    snprintf(want, sizeof want, "from version %d to %d (a broken step)", NR + 2, NR + 3);
    CHECK_MSG(strstr(sptune_last_error(), want) != NULL &&
              strncmp(sptune_last_error(), path2, strlen(path2)) == 0, "message: %s", sptune_last_error());
    CHECK(sqlite3_get_autocommit(h) == 1); /* no transaction left open */
    CHECK(count_tables(h) == objects_before);
    sqlite3_close(h);
    CHECK(raw_int(path2, "PRAGMA user_version") == NR);
    CHECK(raw_int(path2, "SELECT count(*) FROM sqlite_schema WHERE name = 'notes'") == 0);
    CHECK(raw_int(path2, "SELECT count(*) FROM results") == 1);
    CHECK_ST(sp_db_open(path2, 0, &db), SPTUNE_OK);
    sp_db_close(db);

    /* From nothing: an in-memory database gets the real schema. */
    CHECK(sqlite3_open(":memory:", &h) == SQLITE_OK);
    CHECK_ST(sp_db_migrate(h, ":memory:", real, nreal, &from, &to), SPTUNE_OK);
    CHECK(from == 0 && to == SP_DB_SCHEMA_VERSION);
    CHECK(count_tables(h) > 5);
    sqlite3_close(h);
    /* A foreign database is refused by the migration itself too. */
    CHECK(sqlite3_open(":memory:", &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "CREATE TABLE mine (x)", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_ST(sp_db_migrate(h, ":memory:", real, nreal, NULL, NULL), SPTUNE_ERR_DB);
    CHECK(count_tables(h) == 1);
    sqlite3_close(h);

    free(path2);
    free(path);
}

/* ---- a failing record is rolled back; a locked database -------------------------------------- */

static void test_record_rollback_and_lock(void)
{
    char *path = path_in("rollback.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    if (!db) { free(path); return; }
    /* A trigger that fails the result row: the environment/template/problem/config rows made
     * in the same transaction must go too. */
    CHECK(sqlite3_exec(sp_db_handle(db),
                       "CREATE TRIGGER refuse BEFORE INSERT ON results WHEN NEW.detail = 'boom' "
                       "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END;",
                       NULL, NULL, NULL) == SQLITE_OK);
    sp_result r = failed_result(&ENV_H100, "bm=1", SP_OUTCOME_LAUNCH_FAILED, "boom");
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_DB);
    char want[2048];
    snprintf(want, sizeof want, "%s: recording a result: storing the result row: refused by the test trigger", path);
    CHECK_MSG(strcmp(sptune_last_error(), want) == 0, "message '%s'", sptune_last_error());
    CHECK(sqlite3_get_autocommit(sp_db_handle(db)) == 1);
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 0);
    CHECK(raw_int(path, "SELECT count(*) FROM templates") == 0);
    CHECK(raw_int(path, "SELECT count(*) FROM configurations") == 0);
    r.detail = "fine";
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);

    /* Another connection holds the write lock: the record waits, then says so. */
    sqlite3 *other = NULL;
    CHECK(sqlite3_open_v2(path, &other, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_ST(sp_db_set_busy_timeout(db, 200), SPTUNE_OK);
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_DB);
    CHECK_MSG(strstr(sptune_last_error(), "locked by another process") != NULL &&
              strncmp(sptune_last_error(), path, strlen(path)) == 0, "message '%s'", sptune_last_error());
    /* Reads go on meanwhile (WAL). */
    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 1);
    CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK(n == 2);
    sp_db_close(db);
    free(path);
}

/* ---- two processes at once ------------------------------------------------------------------- */

#define PER_CHILD 200

static int child_main(const char *path, int id)
{
    sp_db *db = NULL;
    if (sp_db_open(path, 1, &db) != SPTUNE_OK) {
        fprintf(stderr, "child %d: open: %s\n", id, sptune_last_error());
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < PER_CHILD && !bad; i++) {
        char problem[64], config[64];
        snprintf(problem, sizeof problem, "M=%d,N=4096,K=4096", i);
        snprintf(config, sizeof config, "bm=%d,child=%d", 16 * (i % 8 + 1), id);
        sp_result r = ok_result(id ? &ENV_H100 : &ENV_H200, HASH_A, problem, config, 1.0 + i);
        if (sp_db_record(db, &r) != SPTUNE_OK) {
            fprintf(stderr, "child %d: record %d: %s\n", id, i, sptune_last_error());
            bad = 1;
        }
    }
    sp_db_close(db);
    return bad;
}

static void run_two_writers(const char *path, long long want)
{
    fflush(NULL);
    pid_t pid[2];
    for (int c = 0; c < 2; c++) {
        pid[c] = fork();
        if (pid[c] == 0) _exit(child_main(path, c));
        CHECK(pid[c] > 0);
    }
    for (int c = 0; c < 2; c++) {
        int status = 0;
        if (pid[c] <= 0) continue;
        CHECK(waitpid(pid[c], &status, 0) == pid[c]);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status 0x%x", c, status);
    }
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_OK);
    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_MSG(n == want, "%s: %lld results, want %lld", path, n, want);
    sp_db_close(db);
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 2);
    CHECK(raw_int(path, "SELECT count(*) FROM problems") == PER_CHILD);
    char *ic = raw_query(path, "PRAGMA integrity_check");
    CHECK(ic && strcmp(ic, "ok") == 0);
    free(ic);
}

static void test_two_processes(void)
{
    /* Into a database that exists already... */
    char *path = path_in("shared/existing.db");
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    sp_db_close(db);
    run_two_writers(path, 2 * PER_CHILD);
    /* ...and both creating it at the same time. */
    char *fresh = path_in("shared/fresh.db");
    run_two_writers(fresh, 2 * PER_CHILD);
    free(fresh);
    free(path);
}

/* ---- hostile databases: what a shared file may hold ------------------------------------------ */

/* A database of `n` results made by sptune, then changed by `sql` behind its back. */
static char *hostile_db(const char *name, int n, const char *sql)
{
    char *path = path_in(name);
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    for (int i = 0; i < n; i++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "bm=128,bn=%d", 64 + i);
        sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, cfg, 1.0 + i);
        CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    }
    sp_db_close(db);
    if (sql) CHECK_MSG(raw_exec(path, sql) == SQLITE_OK, "%s: %s", name, sql);
    return path;
}

/* Merging `path` into a fresh database fails with SPTUNE_ERR_DB naming `want`, and takes nothing. */
static void check_merge_refused(const char *path, const char *want)
{
    char *dest = path_in("hostile-dest.db");
    unlink(dest);
    sp_db *db = NULL;
    CHECK_ST(sp_db_open(dest, 1, &db), SPTUNE_OK);
    sp_db_import_stats st;
    sptune_status rc = sp_db_merge(db, path, NULL, NULL, &st);
    CHECK_MSG(rc == SPTUNE_ERR_DB, "merging %s: %s (%s)", path, sptune_status_name(rc), sptune_last_error());
    CHECK_MSG(strstr(sptune_last_error(), want) != NULL, "merging %s: '%s' lacks '%s'", path, sptune_last_error(),
              want);
    long long count = -1;
    CHECK_ST(sp_db_count(db, &count), SPTUNE_OK);
    CHECK_MSG(count == 0, "merging %s took %lld results", path, count);
    sp_db_close(db);
    free(dest);
}

static void test_hostile(void)
{
    /* NULL where the schema (edited to allow it) said NOT NULL */
    char *p = hostile_db("null.db", 3,
                         "PRAGMA writable_schema = ON;"
                         "UPDATE sqlite_schema SET sql = replace(sql, 'text TEXT NOT NULL', 'text TEXT')"
                         " WHERE name = 'configurations';"
                         "PRAGMA writable_schema = OFF;");
    CHECK(raw_exec(p, "UPDATE configurations SET text = NULL WHERE id = 2") == SQLITE_OK);
    check_merge_refused(p, "config is NULL");
    free(p);
    /* wrong types, a huge string, a NUL inside a string, a tampered schema (a column gone) */
    static const struct { const char *name, *sql, *want; } cases[] = {
        {"type.db", "UPDATE results SET median_ms = 'fast' WHERE id = 1", "median_ms is not a number"},
        {"huge.db", "UPDATE problems SET key = printf('%.*c', 100000, 'x')", "problem is 100000 bytes long"},
        {"nul.db", "UPDATE configurations SET text = CAST(x'626d3d3132380062' AS TEXT) WHERE id = 1",
         "config holds a NUL byte"},
        {"dropped.db", "ALTER TABLE results DROP COLUMN method", "no such column"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p = hostile_db(cases[i].name, 2, cases[i].sql);
        check_merge_refused(p, cases[i].want);
        free(p);
    }
    /* corrupt pages: garbage over the middle of a file of many pages */
    p = hostile_db("corrupt.db", 400, NULL);
    char *data = NULL;
    size_t n = 0;
    CHECK_ST(sp_read_file(p, &data, &n), SPTUNE_OK);
    CHECK(n > 8 * 4096);
    if (data && n > 8 * 4096) {
        for (size_t i = 3 * 4096 + 16; i < 5 * 4096; i++) data[i] = (char)(i * 131 + 7);
        write_bytes(p, data, n);
    }
    free(data);
    check_merge_refused(p, p);   /* refused, naming the file (quick_check, or reading it) */
    free(p);
    /* the connection settings a shared file meets: defensive, and its schema not trusted */
    p = hostile_db("settings.db", 1, NULL);
    sp_db *db = NULL;
    CHECK_ST(sp_db_open_readonly(p, &db), SPTUNE_OK);
    CHECK_ST(sp_db_quick_check(db), SPTUNE_OK);
    sp_db_close(db);
    free(p);
}

/* Energy per call: recorded and read back; a file of an earlier build (no energy columns) is read by a
 * read-only open, its energy unmeasured, and gains the columns at a read-write one (same schema version,
 * so that earlier builds go on reading and writing it). */
static int read_energy(const sp_result *r, void *ud)
{
    *(double *)ud = r->timing.energy_j;
    return 0;
}

static void test_energy(void)
{
    char *path = path_in("v1.db");
    sqlite3 *h = NULL;
    int n = 0;
    const sp_db_step *real = sp_db_schema_steps(&n);
    CHECK(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) == SQLITE_OK);
    CHECK_ST(sp_db_migrate(h, path, real, 1, NULL, NULL), SPTUNE_OK);
    sqlite3_close(h);
    sp_db *db = NULL;
    double j = 7;
    CHECK_ST(sp_db_open_readonly(path, &db), SPTUNE_OK);
    if (db) CHECK_ST(sp_db_foreach(db, read_energy, &j), SPTUNE_OK);
    sp_db_close(db);
    CHECK(raw_int(path, "PRAGMA user_version") == 1);
    db = NULL;
    CHECK(raw_int(path, "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'energy_j'") == 0);
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);   /* adds the columns */
    CHECK(raw_int(path, "PRAGMA user_version") == SP_DB_SCHEMA_VERSION);
    CHECK(raw_int(path, "SELECT count(*) FROM pragma_table_info('results') WHERE name LIKE '%energy_j'") == 2);
    sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    r.timing.energy_j = 0.125;
    r.timing.baseline_energy_j = 0.5;
    if (db) {
        CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
        CHECK_ST(sp_db_foreach(db, read_energy, &j), SPTUNE_OK);
        CHECK_MSG(j == 0.125, "energy read back: %g", j);
        int found = 0;
        double ms = 0, joules = 0;
        CHECK_ST(sp_db_lookup_energy(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=128,bn=128", &found, NULL, &ms,
                                     &joules), SPTUNE_OK);
        CHECK(found && ms == 1.0 && joules == 0.125);
    }
    sp_db_close(db);
    free(path);
}

int main(void)
{
    tmp = sp_test_tmpdir("test_db");
    test_create();
    test_record_and_read();
    test_invalid();
    test_refusals();
    test_hostile();
    test_migrations();
    test_energy();
    test_record_rollback_and_lock();
    test_two_processes();
    return sp_test_done("test_db");
}

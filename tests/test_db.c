/* The tuning database: creation, reopen, record/lookup/best/foreach/count, replacement, failure
 * outcomes, input validation and energy columns; refusals, migrations, locks, concurrent writers and
 * hostile files are in test_db_safety.c. */
#include "db_fixture.h"

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
    CHECK_EQ(sp_db_schema_version(db), SP_DB_SCHEMA_VERSION);
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
        CHECK_EQ(sqlite3_column_int(s, 0), 1);
    else
        CHECK(!"PRAGMA foreign_keys");
    sqlite3_finalize(s);
    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_EQ(n, 0);
    sp_db_close(db);
    /* Closed cleanly: WAL checkpointed and removed. */
    CHECK(!side_file_exists(path, "-wal"));
    CHECK(!side_file_exists(path, "-shm"));

    /* Reopen without create: fine, nothing migrated. */
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_OK);
    CHECK_EQ(sp_db_schema_version(db), SP_DB_SCHEMA_VERSION);
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
    CHECK_EQ(sp_db_schema_version(db), SP_DB_SCHEMA_VERSION);
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
    CHECK_EQ(n, 3);

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
    CHECK_EQ(found, 0);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=32,bn=32", &found, NULL, NULL), SPTUNE_OK);
    CHECK_EQ(found, 0);

    /* Replacement of the same key: still one row, the new numbers. */
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 0.8);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_EQ(n, 3);
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
    CHECK_EQ(n, 3);
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
    CHECK_EQ(n, 11);
    rows w;
    memset(&w, 0, sizeof w);
    CHECK_ST(sp_db_foreach(db, collect, &w), SPTUNE_OK);
    CHECK(w.n == 11 && w.ok == 5 && w.failed == 6);
    CHECK(w.saw_compile_failed_detail && w.saw_unknown_numbers && w.saw_timing);
    memset(&w, 0, sizeof w);
    w.stop_after = 4;
    CHECK_ST(sp_db_foreach(db, collect, &w), SPTUNE_OK);
    CHECK_EQ(w.n, 4);

    /* Shared rows are reused, not duplicated. */
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 3);
    CHECK(raw_int(path, "SELECT count(*) FROM templates") == 2);
    CHECK(raw_int(path, "SELECT count(*) FROM problems") == 3);
    sp_db_close(db);

    /* Reopen keeps everything. */
    CHECK_ST(sp_db_open(path, 0, &db), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_EQ(n, 11);
    CHECK_ST(sp_db_lookup(db, &ENV_H200, "gemm", HASH_A, PROBLEM, "bm=128,bn=128", &found, &o, &med), SPTUNE_OK);
    CHECK(found == 1 && o == SP_OUTCOME_OK && fabs(med - 0.8) < 1e-12);
    sp_db_close(db);

    /* Read-only: reads work, writes are refused, nothing is left behind. */
    CHECK_ST(sp_db_open_readonly(path, &db), SPTUNE_OK);
    if (db) {
        CHECK_EQ(sp_db_schema_version(db), SP_DB_SCHEMA_VERSION);
        CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
        CHECK_EQ(n, 11);
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
    CHECK_EQ(n, 0);
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
    CHECK_EQ(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
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
    test_energy();
    return sp_test_done("test_db");
}

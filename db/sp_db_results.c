/* Recording and reading results: record (get-or-insert of the keys, then an upsert, in one
 * BEGIN IMMEDIATE transaction), lookup, best, foreach, count. */
#include "sp_db.h"
#include "sp_db_internal.h"
#include "sp_status.h"
#include "sp_str.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- outcomes -------------------------------------------------------------------------------- */

static const char *const OUTCOME_NAMES[SP_OUTCOME__COUNT] = {
    [SP_OUTCOME_OK] = "ok",
    [SP_OUTCOME_COMPILE_FAILED] = "compile_failed",
    [SP_OUTCOME_LAUNCH_FAILED] = "launch_failed",
    [SP_OUTCOME_WRONG_RESULT] = "wrong_result",
    [SP_OUTCOME_TIMED_OUT] = "timed_out",
    [SP_OUTCOME_INVALID] = "invalid",
};

const char *sp_outcome_name(sp_outcome o)
{
    if ((int)o < 0 || o >= SP_OUTCOME__COUNT) return NULL;
    return OUTCOME_NAMES[o];
}

int sp_outcome_parse(const char *s, sp_outcome *o)
{
    if (!s) return 0;
    for (int i = 0; i < SP_OUTCOME__COUNT; i++) {
        if (strcmp(s, OUTCOME_NAMES[i]) == 0) {
            if (o) *o = (sp_outcome)i;
            return 1;
        }
    }
    return 0;
}

/* ---- statements ------------------------------------------------------------------------------ */

#define RESULT_JOINS \
    " FROM results r" \
    " JOIN environments e ON e.id = r.env_id" \
    " JOIN templates t ON t.id = r.template_id" \
    " JOIN problems p ON p.id = r.problem_id" \
    " JOIN configurations c ON c.id = r.config_id"
/* One result by environment, template version, problem and configuration (sp_db_lookup). */
#define LOOKUP_WHERE \
        " WHERE e.gpu_name = ?1 AND e.gpu_profile = ?2 AND e.cc_major = ?3 AND e.cc_minor = ?4" \
        " AND e.sm_count = ?5 AND e.driver_version = ?6 AND e.nvrtc_version = ?7" \
        " AND e.sptune_version = ?8 AND t.name = ?9 AND t.hash = ?10 AND p.op = ?9 AND p.key = ?11" \
        " AND c.template_name = ?9 AND c.text = ?12"

static const char *const STMT_SQL[SP_STMT__COUNT] = {
    [SP_STMT_ENV_SELECT] =
        "SELECT id FROM environments WHERE gpu_name = ?1 AND gpu_profile = ?2 AND cc_major = ?3"
        " AND cc_minor = ?4 AND sm_count = ?5 AND driver_version = ?6 AND nvrtc_version = ?7"
        " AND sptune_version = ?8",
    [SP_STMT_ENV_INSERT] =
        "INSERT INTO environments (gpu_name, gpu_profile, cc_major, cc_minor, sm_count,"
        " driver_version, nvrtc_version, sptune_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [SP_STMT_TEMPLATE_SELECT] = "SELECT id FROM templates WHERE name = ?1 AND hash = ?2",
    [SP_STMT_TEMPLATE_INSERT] = "INSERT INTO templates (name, hash) VALUES (?1, ?2)",
    [SP_STMT_PROBLEM_SELECT] = "SELECT id FROM problems WHERE op = ?1 AND key = ?2",
    [SP_STMT_PROBLEM_INSERT] = "INSERT INTO problems (op, key) VALUES (?1, ?2)",
    [SP_STMT_CONFIG_SELECT] = "SELECT id FROM configurations WHERE template_name = ?1 AND text = ?2",
    [SP_STMT_CONFIG_INSERT] = "INSERT INTO configurations (template_name, text) VALUES (?1, ?2)",
    [SP_STMT_RESULT_UPSERT] =
        "INSERT INTO results (env_id, template_id, problem_id, config_id, outcome, detail, runs,"
        " median_ms, min_ms, max_ms, p10_ms, p90_ms, baseline_ms, rel_error, method, registers,"
        " smem_bytes, spill_bytes, recorded_at, energy_j, baseline_energy_j)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"
        " ON CONFLICT (env_id, template_id, problem_id, config_id) DO UPDATE SET"
        " outcome = excluded.outcome, detail = excluded.detail, runs = excluded.runs,"
        " median_ms = excluded.median_ms, min_ms = excluded.min_ms, max_ms = excluded.max_ms,"
        " p10_ms = excluded.p10_ms, p90_ms = excluded.p90_ms, baseline_ms = excluded.baseline_ms,"
        " rel_error = excluded.rel_error, method = excluded.method, registers = excluded.registers,"
        " smem_bytes = excluded.smem_bytes, spill_bytes = excluded.spill_bytes,"
        " recorded_at = excluded.recorded_at, energy_j = excluded.energy_j,"
        " baseline_energy_j = excluded.baseline_energy_j"
        /* an import never replaces a newer measurement */
        " WHERE excluded.recorded_at >= results.recorded_at",
    [SP_STMT_LOOKUP] =
        "SELECT r.outcome, r.median_ms, NULL" RESULT_JOINS LOOKUP_WHERE,
    [SP_STMT_LOOKUP_ENERGY] =
        "SELECT r.outcome, r.median_ms, r.energy_j" RESULT_JOINS LOOKUP_WHERE,
    [SP_STMT_BEST] =
        "SELECT c.text, r.median_ms, r.baseline_ms" RESULT_JOINS
        " WHERE e.gpu_profile = ?1 AND t.name = ?2 AND p.op = ?2 AND p.key = ?3 AND r.outcome = 'ok'"
        " AND r.median_ms IS NOT NULL ORDER BY r.median_ms, r.id LIMIT 1",
    [SP_STMT_COUNT] = "SELECT count(*) FROM results",
};

const char *sp_db_stmt_sql(sp_db_stmt_id id) { return STMT_SQL[id]; }

static sptune_status sqlfail(sp_db *db, const char *what)
{
    return sp_db_sqlfail_busy(db->h, db->path, what, db->busy_timeout_ms);
}

static void stmt_done(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

static int bind_text(sqlite3_stmt *s, int i, const char *v)
{
    return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(s, i);
}

/* Binds v, or NULL when !known. */
static int bind_real(sqlite3_stmt *s, int i, double v, int known)
{
    return known ? sqlite3_bind_double(s, i, v) : sqlite3_bind_null(s, i);
}

static int bind_int(sqlite3_stmt *s, int i, long long v, int known)
{
    return known ? sqlite3_bind_int64(s, i, v) : sqlite3_bind_null(s, i);
}

static int bind_env(sqlite3_stmt *s, const sp_env *e)
{
    int rc = bind_text(s, 1, e->gpu_name);
    if (rc == SQLITE_OK) rc = bind_text(s, 2, e->gpu_profile);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 3, e->cc_major);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 4, e->cc_minor);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 5, e->sm_count);
    if (rc == SQLITE_OK) rc = bind_text(s, 6, e->driver_version);
    if (rc == SQLITE_OK) rc = bind_text(s, 7, e->nvrtc_version);
    if (rc == SQLITE_OK) rc = bind_text(s, 8, e->sptune_version);
    return rc;
}

/* A NULL double out-parameter reads as -1 for an SQL NULL. */
static double column_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? -1.0 : sqlite3_column_double(s, i);
}

static long long column_int(sqlite3_stmt *s, int i, long long none)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? none : sqlite3_column_int64(s, i);
}

/* ---- validation ------------------------------------------------------------------------------ */

static sptune_status check_str(const char *fn, const char *field, const char *v, int may_be_empty)
{
    if (!v) return sp_fail(SPTUNE_ERR_INVALID, "%s: %s is missing", fn, field);
    if (!may_be_empty && !*v) return sp_fail(SPTUNE_ERR_INVALID, "%s: %s is empty", fn, field);
    return SPTUNE_OK;
}

static sptune_status check_env(const char *fn, const sp_env *e)
{
    if (!e) return sp_fail(SPTUNE_ERR_INVALID, "%s: the environment is missing", fn);
    sptune_status st;
    if ((st = check_str(fn, "gpu_name", e->gpu_name, 0)) != SPTUNE_OK) return st;
    if ((st = check_str(fn, "gpu_profile", e->gpu_profile, 0)) != SPTUNE_OK) return st;
    if ((st = check_str(fn, "driver_version", e->driver_version, 0)) != SPTUNE_OK) return st;
    if ((st = check_str(fn, "nvrtc_version", e->nvrtc_version, 0)) != SPTUNE_OK) return st;
    if ((st = check_str(fn, "sptune_version", e->sptune_version, 0)) != SPTUNE_OK) return st;
    if (e->cc_major < 0 || e->cc_minor < 0 || e->sm_count < 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: bad environment numbers (compute capability %d.%d, %d SMs)",
                       fn, e->cc_major, e->cc_minor, e->sm_count);
    return SPTUNE_OK;
}

static sptune_status check_key(const char *fn, const char *template_name, const char *template_hash,
                               const char *problem_key, const char *config)
{
    sptune_status st;
    if ((st = check_str(fn, "template_name", template_name, 0)) != SPTUNE_OK) return st;
    if (template_hash && (st = check_str(fn, "template_hash", template_hash, 0)) != SPTUNE_OK) return st;
    if ((st = check_str(fn, "problem_key", problem_key, 0)) != SPTUNE_OK) return st;
    /* An empty configuration is a template without parameters. */
    if (config && (st = check_str(fn, "config", config, 1)) != SPTUNE_OK) return st;
    return SPTUNE_OK;
}

static sptune_status check_time(const char *field, double v)
{
    if (!isfinite(v) || v < 0)
        return sp_fail(SPTUNE_ERR_INVALID, "sp_db_record: an ok result needs a finite, non-negative %s "
                       "(got %g)", field, v);
    return SPTUNE_OK;
}

static sptune_status check_result(const sp_result *r)
{
    static const char fn[] = "sp_db_record";
    if (!r) return sp_fail(SPTUNE_ERR_INVALID, "%s: no result", fn);
    sptune_status st = check_env(fn, r->env);
    if (st == SPTUNE_OK) {
        if (!r->template_hash) return sp_fail(SPTUNE_ERR_INVALID, "%s: template_hash is missing", fn);
        if (!r->config) return sp_fail(SPTUNE_ERR_INVALID, "%s: config is missing", fn);
        st = check_key(fn, r->template_name, r->template_hash, r->problem_key, r->config);
    }
    if (st != SPTUNE_OK) return st;
    if ((int)r->outcome < 0 || r->outcome >= SP_OUTCOME__COUNT)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: unknown outcome %d", fn, (int)r->outcome);
    if (r->outcome != SP_OUTCOME_OK) return SPTUNE_OK;

    const sp_timing *t = &r->timing;
    if (t->runs < 1)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: an ok result needs at least one timed run (runs=%d)", fn,
                       t->runs);
    if ((st = check_time("median_ms", t->median_ms)) != SPTUNE_OK) return st;
    if ((st = check_time("min_ms", t->min_ms)) != SPTUNE_OK) return st;
    if ((st = check_time("max_ms", t->max_ms)) != SPTUNE_OK) return st;
    if ((st = check_time("p10_ms", t->p10_ms)) != SPTUNE_OK) return st;
    if ((st = check_time("p90_ms", t->p90_ms)) != SPTUNE_OK) return st;
    if (!(t->min_ms <= t->median_ms && t->median_ms <= t->max_ms))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: timings out of order (min %g, median %g, max %g ms)", fn,
                       t->min_ms, t->median_ms, t->max_ms);
    if (!isfinite(t->baseline_ms))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: baseline_ms is not a number (%g)", fn, t->baseline_ms);
    if (!isfinite(t->rel_error))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: rel_error is not a number (%g)", fn, t->rel_error);
    return SPTUNE_OK;
}

/* ---- record ---------------------------------------------------------------------------------- */

typedef struct db_arg {
    const char *text; /* bound when non-NULL, else num */
    long long num;
} db_arg;

/* The id of the row matching args, inserting it first when there is none. Inside the caller's
 * write transaction, so no other process can insert it in between. */
static sptune_status get_or_insert(sp_db *db, sp_db_stmt_id sel, sp_db_stmt_id ins, const db_arg *a,
                                   int n, const char *what, sqlite3_int64 *id)
{
    for (int pass = 0; pass < 2; pass++) {
        sqlite3_stmt *s = sp_db_stmt(db, pass ? ins : sel);
        if (!s) return SPTUNE_ERR_DB;
        int rc = SQLITE_OK;
        for (int i = 0; i < n && rc == SQLITE_OK; i++)
            rc = a[i].text ? bind_text(s, i + 1, a[i].text) : sqlite3_bind_int64(s, i + 1, a[i].num);
        if (rc == SQLITE_OK) rc = sqlite3_step(s);
        if (pass == 0 && rc == SQLITE_ROW) {
            *id = sqlite3_column_int64(s, 0);
            stmt_done(s);
            return SPTUNE_OK;
        }
        if (rc != SQLITE_DONE) {
            sptune_status st = sqlfail(db, what);
            stmt_done(s);
            return st;
        }
        if (pass == 1) *id = sqlite3_last_insert_rowid(db->h);
        stmt_done(s);
    }
    return SPTUNE_OK;
}

static sptune_status record_in_transaction(sp_db *db, const sp_result *r)
{
    const sp_env *e = r->env;
    sqlite3_int64 env_id = 0, template_id = 0, problem_id = 0, config_id = 0;
    const db_arg env_args[8] = {
        {e->gpu_name, 0}, {e->gpu_profile, 0}, {NULL, e->cc_major}, {NULL, e->cc_minor},
        {NULL, e->sm_count}, {e->driver_version, 0}, {e->nvrtc_version, 0}, {e->sptune_version, 0},
    };
    const db_arg template_args[2] = {{r->template_name, 0}, {r->template_hash, 0}};
    const db_arg problem_args[2] = {{r->template_name, 0}, {r->problem_key, 0}};
    const db_arg config_args[2] = {{r->template_name, 0}, {r->config, 0}};
    sptune_status st = get_or_insert(db, SP_STMT_ENV_SELECT, SP_STMT_ENV_INSERT, env_args, 8,
                                     "recording a result: storing the environment", &env_id);
    if (st == SPTUNE_OK)
        st = get_or_insert(db, SP_STMT_TEMPLATE_SELECT, SP_STMT_TEMPLATE_INSERT, template_args, 2,
                           "recording a result: storing the template", &template_id);
    if (st == SPTUNE_OK)
        st = get_or_insert(db, SP_STMT_PROBLEM_SELECT, SP_STMT_PROBLEM_INSERT, problem_args, 2,
                           "recording a result: storing the problem", &problem_id);
    if (st == SPTUNE_OK)
        st = get_or_insert(db, SP_STMT_CONFIG_SELECT, SP_STMT_CONFIG_INSERT, config_args, 2,
                           "recording a result: storing the configuration", &config_id);
    if (st != SPTUNE_OK) return st;

    sqlite3_stmt *s = sp_db_stmt(db, SP_STMT_RESULT_UPSERT);
    if (!s) return SPTUNE_ERR_DB;
    const sp_timing *t = &r->timing;
    int ok = r->outcome == SP_OUTCOME_OK;
    int rel_known = (ok || r->outcome == SP_OUTCOME_WRONG_RESULT) && isfinite(t->rel_error) &&
                    t->rel_error >= 0;
    long long when = r->recorded_at > 0 ? r->recorded_at : (long long)time(NULL);
    int rc = sqlite3_bind_int64(s, 1, env_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, template_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 3, problem_id);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 4, config_id);
    if (rc == SQLITE_OK) rc = bind_text(s, 5, sp_outcome_name(r->outcome));
    if (rc == SQLITE_OK) rc = bind_text(s, 6, r->detail);
    if (rc == SQLITE_OK) rc = bind_int(s, 7, t->runs, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 8, t->median_ms, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 9, t->min_ms, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 10, t->max_ms, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 11, t->p10_ms, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 12, t->p90_ms, ok);
    if (rc == SQLITE_OK) rc = bind_real(s, 13, t->baseline_ms, ok && t->baseline_ms >= 0);
    if (rc == SQLITE_OK) rc = bind_real(s, 14, t->rel_error, rel_known);
    if (rc == SQLITE_OK) rc = bind_text(s, 15, t->method);
    if (rc == SQLITE_OK) rc = bind_int(s, 16, r->registers, r->registers >= 0);
    if (rc == SQLITE_OK) rc = bind_int(s, 17, r->smem_bytes, r->smem_bytes >= 0);
    if (rc == SQLITE_OK) rc = bind_int(s, 18, r->spill_bytes, r->spill_bytes >= 0);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 19, when);
    if (rc == SQLITE_OK) rc = bind_real(s, 20, t->energy_j, ok && t->energy_j > 0);
    if (rc == SQLITE_OK) rc = bind_real(s, 21, t->baseline_energy_j, ok && t->baseline_energy_j > 0);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    st = rc == SQLITE_DONE ? SPTUNE_OK : sqlfail(db, "recording a result: storing the result row");
    stmt_done(s);
    return st;
}

sptune_status sp_db_record(sp_db *db, const sp_result *r)
{
    if (!db) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_record: no database");
    sptune_status st = check_result(r);
    if (st != SPTUNE_OK) return st;
    if (db->readonly)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: cannot record a result: the database was opened read-only",
                       db->path);
    if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        st = sqlfail(db, "recording a result: starting the transaction");
        sp_db_rollback(db->h);
        return st;
    }
    st = record_in_transaction(db, r);
    if (st == SPTUNE_OK && sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        st = sqlfail(db, "recording a result: committing");
    if (st != SPTUNE_OK) sp_db_rollback(db->h);
    return st;
}

/* ---- reading --------------------------------------------------------------------------------- */

sptune_status sp_db_lookup(sp_db *db, const sp_env *env, const char *template_name,
                           const char *template_hash, const char *problem_key, const char *config,
                           int *found, sp_outcome *outcome, double *median_ms)
{
    return sp_db_lookup_energy(db, env, template_name, template_hash, problem_key, config, found, outcome, median_ms,
                               NULL);
}

sptune_status sp_db_lookup_energy(sp_db *db, const sp_env *env, const char *template_name,
                                  const char *template_hash, const char *problem_key, const char *config,
                                  int *found, sp_outcome *outcome, double *median_ms, double *energy_j)
{
    static const char fn[] = "sp_db_lookup";
    if (found) *found = 0;
    if (median_ms) *median_ms = -1;
    if (energy_j) *energy_j = -1;
    if (!db || !found) return sp_fail(SPTUNE_ERR_INVALID, "%s: bad arguments", fn);
    sptune_status st = check_env(fn, env);
    if (st == SPTUNE_OK && !template_hash) st = sp_fail(SPTUNE_ERR_INVALID, "%s: template_hash is missing", fn);
    if (st == SPTUNE_OK && !config) st = sp_fail(SPTUNE_ERR_INVALID, "%s: config is missing", fn);
    if (st == SPTUNE_OK) st = check_key(fn, template_name, template_hash, problem_key, config);
    if (st != SPTUNE_OK) return st;

    sqlite3_stmt *s = sp_db_stmt(db, db->energy ? SP_STMT_LOOKUP_ENERGY : SP_STMT_LOOKUP);
    if (!s) return SPTUNE_ERR_DB;
    int rc = bind_env(s, env);
    if (rc == SQLITE_OK) rc = bind_text(s, 9, template_name);
    if (rc == SQLITE_OK) rc = bind_text(s, 10, template_hash);
    if (rc == SQLITE_OK) rc = bind_text(s, 11, problem_key);
    if (rc == SQLITE_OK) rc = bind_text(s, 12, config);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        sp_outcome o;
        if (!sp_outcome_parse(name, &o)) {
            st = sp_fail(SPTUNE_ERR_DB, "%s: looking up a result: unknown outcome '%s'", db->path,
                         name ? name : "(null)");
        } else {
            *found = 1;
            if (outcome) *outcome = o;
            if (median_ms) *median_ms = column_real(s, 1);
            if (energy_j) *energy_j = column_real(s, 2);
        }
    } else if (rc != SQLITE_DONE) {
        st = sqlfail(db, "looking up a result");
    }
    stmt_done(s);
    return st;
}

sptune_status sp_db_best(sp_db *db, const char *gpu_profile, const char *template_name,
                         const char *problem_key, int *found, char **config, double *median_ms,
                         double *baseline_ms)
{
    static const char fn[] = "sp_db_best";
    if (found) *found = 0;
    if (config) *config = NULL;
    if (median_ms) *median_ms = -1;
    if (baseline_ms) *baseline_ms = -1;
    if (!db || !found || !config) return sp_fail(SPTUNE_ERR_INVALID, "%s: bad arguments", fn);
    sptune_status st = check_str(fn, "gpu_profile", gpu_profile, 0);
    if (st == SPTUNE_OK) st = check_key(fn, template_name, NULL, problem_key, NULL);
    if (st != SPTUNE_OK) return st;

    sqlite3_stmt *s = sp_db_stmt(db, SP_STMT_BEST);
    if (!s) return SPTUNE_ERR_DB;
    int rc = bind_text(s, 1, gpu_profile);
    if (rc == SQLITE_OK) rc = bind_text(s, 2, template_name);
    if (rc == SQLITE_OK) rc = bind_text(s, 3, problem_key);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(s, 0);
        char *copy = sp_strdup(text ? text : "");
        if (!copy) {
            st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        } else {
            *found = 1;
            *config = copy;
            if (median_ms) *median_ms = column_real(s, 1);
            if (baseline_ms) *baseline_ms = column_real(s, 2);
        }
    } else if (rc != SQLITE_DONE) {
        st = sqlfail(db, "finding the best result");
    }
    stmt_done(s);
    return st;
}

#define COL_TEXT(s, i) ((const char *)sqlite3_column_text((s), (i)))

/* The columns sp_db_foreach lists, as the schema types them: text that must be there, text that may
 * be NULL, numbers that must be there, numbers that may be NULL. */
enum { COL_TEXT_REQ, COL_TEXT_OPT, COL_NUM_REQ, COL_NUM_OPT };
static const struct { const char *name; int kind; } foreach_cols[] = {
    {"gpu_name", COL_TEXT_REQ}, {"gpu_profile", COL_TEXT_REQ}, {"cc_major", COL_NUM_REQ}, {"cc_minor", COL_NUM_REQ},
    {"sm_count", COL_NUM_REQ}, {"driver_version", COL_TEXT_REQ}, {"nvrtc_version", COL_TEXT_REQ},
    {"sptune_version", COL_TEXT_REQ}, {"template", COL_TEXT_REQ}, {"template_hash", COL_TEXT_REQ},
    {"problem", COL_TEXT_REQ}, {"config", COL_TEXT_REQ}, {"outcome", COL_TEXT_REQ}, {"detail", COL_TEXT_OPT},
    {"runs", COL_NUM_OPT}, {"median_ms", COL_NUM_OPT}, {"min_ms", COL_NUM_OPT}, {"max_ms", COL_NUM_OPT},
    {"p10_ms", COL_NUM_OPT}, {"p90_ms", COL_NUM_OPT}, {"baseline_ms", COL_NUM_OPT}, {"rel_error", COL_NUM_OPT},
    {"method", COL_TEXT_OPT}, {"registers", COL_NUM_OPT}, {"smem_bytes", COL_NUM_OPT}, {"spill_bytes", COL_NUM_OPT},
    {"recorded_at", COL_NUM_OPT}, {"energy_j", COL_NUM_OPT}, {"baseline_energy_j", COL_NUM_OPT}};
/* Text longer than this is not something sptune wrote (detail: compiler logs, cut). */
#define SP_DB_MAX_TEXT 4096
#define SP_DB_MAX_DETAIL 65536

/* A listed row as the schema says it must be: NULLs, wrong types and oversized strings (a damaged
 * or hand-edited database) refused with the row and column named, apart from running out of memory. */
static sptune_status check_row(sp_db *db, sqlite3_stmt *s, long long row)
{
    for (int i = 0; i < (int)(sizeof foreach_cols / sizeof foreach_cols[0]); i++) {
        int type = sqlite3_column_type(s, i), kind = foreach_cols[i].kind;
        const char *name = foreach_cols[i].name;
        if (type == SQLITE_NULL) {
            if (kind == COL_TEXT_OPT || kind == COL_NUM_OPT) continue;
            return sp_fail(SPTUNE_ERR_DB, "%s: result %lld: %s is NULL (a damaged or hand-edited database)", db->path,
                           row, name);
        }
        if (kind == COL_NUM_REQ || kind == COL_NUM_OPT) {
            if (type != SQLITE_INTEGER && type != SQLITE_FLOAT)
                return sp_fail(SPTUNE_ERR_DB, "%s: result %lld: %s is not a number", db->path, row, name);
            continue;
        }
        if (type != SQLITE_TEXT)
            return sp_fail(SPTUNE_ERR_DB, "%s: result %lld: %s is not text", db->path, row, name);
        const unsigned char *text = sqlite3_column_text(s, i);
        if (!text) return sp_fail(SPTUNE_ERR_NOMEM, "%s: listing results: out of memory", db->path);
        int bytes = sqlite3_column_bytes(s, i);
        if (bytes > (strcmp(name, "detail") == 0 ? SP_DB_MAX_DETAIL : SP_DB_MAX_TEXT))
            return sp_fail(SPTUNE_ERR_DB, "%s: result %lld: %s is %d bytes long (not a result sptune wrote)", db->path,
                           row, name, bytes);
        if ((int)strlen((const char *)text) != bytes)
            return sp_fail(SPTUNE_ERR_DB, "%s: result %lld: %s holds a NUL byte", db->path, row, name);
    }
    return SPTUNE_OK;
}

sptune_status sp_db_foreach(sp_db *db, sp_db_row_cb cb, void *ud)
{
    if (!db || !cb) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_foreach: bad arguments");
    /* Not a cached statement: the callback may call back into the database, even foreach. */
    /* a file of an earlier build opened read-only has no energy columns: they read as unmeasured */
    static const char sql[] =
        "SELECT e.gpu_name, e.gpu_profile, e.cc_major, e.cc_minor, e.sm_count, e.driver_version,"
        " e.nvrtc_version, e.sptune_version, t.name, t.hash, p.key, c.text, r.outcome, r.detail,"
        " r.runs, r.median_ms, r.min_ms, r.max_ms, r.p10_ms, r.p90_ms, r.baseline_ms, r.rel_error,"
        " r.method, r.registers, r.smem_bytes, r.spill_bytes, r.recorded_at, %s" RESULT_JOINS
        " ORDER BY r.id";
    char query[sizeof sql + 64];
    snprintf(query, sizeof query, sql, db->energy ? "r.energy_j, r.baseline_energy_j" : "NULL, NULL");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h, query, -1, &s, NULL) != SQLITE_OK) {
        sptune_status st = sqlfail(db, "listing results");
        sqlite3_finalize(s);
        return st;
    }
    sptune_status st = SPTUNE_OK;
    long long row = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        /* checked before any value is read (reading converts, after which the types are not the stored ones) */
        if ((st = check_row(db, s, ++row)) != SPTUNE_OK) break;
        sp_env env;
        sp_result r;
        memset(&env, 0, sizeof env);
        memset(&r, 0, sizeof r);
        env.gpu_name = COL_TEXT(s, 0);
        env.gpu_profile = COL_TEXT(s, 1);
        env.cc_major = sqlite3_column_int(s, 2);
        env.cc_minor = sqlite3_column_int(s, 3);
        env.sm_count = sqlite3_column_int(s, 4);
        env.driver_version = COL_TEXT(s, 5);
        env.nvrtc_version = COL_TEXT(s, 6);
        env.sptune_version = COL_TEXT(s, 7);
        r.env = &env;
        r.template_name = COL_TEXT(s, 8);
        r.template_hash = COL_TEXT(s, 9);
        r.problem_key = COL_TEXT(s, 10);
        r.config = COL_TEXT(s, 11);
        const char *outcome = COL_TEXT(s, 12);
        if (!sp_outcome_parse(outcome, &r.outcome)) {
            st = sp_fail(SPTUNE_ERR_DB, "%s: listing results: unknown outcome '%s'", db->path,
                         outcome ? outcome : "(null)");
            break;
        }
        r.detail = COL_TEXT(s, 13);
        r.timing.runs = (int)column_int(s, 14, 0);
        r.timing.median_ms = column_real(s, 15);
        r.timing.min_ms = column_real(s, 16);
        r.timing.max_ms = column_real(s, 17);
        r.timing.p10_ms = column_real(s, 18);
        r.timing.p90_ms = column_real(s, 19);
        r.timing.baseline_ms = column_real(s, 20);
        r.timing.rel_error = column_real(s, 21);
        r.timing.method = COL_TEXT(s, 22);
        r.registers = (int)column_int(s, 23, -1);
        r.smem_bytes = (int)column_int(s, 24, -1);
        r.spill_bytes = (int)column_int(s, 25, -1);
        r.recorded_at = column_int(s, 26, 0);
        r.timing.energy_j = column_real(s, 27);
        r.timing.baseline_energy_j = column_real(s, 28);
        if (cb(&r, ud) != 0) break;
    }
    if (st == SPTUNE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) st = sqlfail(db, "listing results");
    sqlite3_finalize(s);
    return st;
}

sptune_status sp_db_count(sp_db *db, long long *results)
{
    if (results) *results = 0;
    if (!db || !results) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_count: bad arguments");
    sqlite3_stmt *s = sp_db_stmt(db, SP_STMT_COUNT);
    if (!s) return SPTUNE_ERR_DB;
    sptune_status st = SPTUNE_OK;
    if (sqlite3_step(s) == SQLITE_ROW) *results = sqlite3_column_int64(s, 0);
    else st = sqlfail(db, "counting results");
    stmt_done(s);
    return st;
}

/* The schema of the tuning database and the migration mechanism. */
#include "sp_db.h"
#include "sp_db_internal.h"
#include "sp_db_migrate.h"
#include "sp_status.h"

#include <stdio.h>

/* Version 1. Unknown numbers are NULL. recorded_at is unix seconds. */
static const char SCHEMA_V1[] =
    "CREATE TABLE environments (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  gpu_name TEXT NOT NULL,\n"
    "  gpu_profile TEXT NOT NULL,\n"
    "  cc_major INTEGER NOT NULL,\n"
    "  cc_minor INTEGER NOT NULL,\n"
    "  sm_count INTEGER NOT NULL,\n"
    "  driver_version TEXT NOT NULL,\n"
    "  nvrtc_version TEXT NOT NULL,\n"
    "  sptune_version TEXT NOT NULL,\n"
    "  UNIQUE (gpu_name, gpu_profile, cc_major, cc_minor, sm_count, driver_version, nvrtc_version,\n"
    "          sptune_version)\n"
    ");\n"
    "CREATE INDEX environments_by_profile ON environments (gpu_profile);\n"
    "CREATE TABLE templates (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  hash TEXT NOT NULL,\n"
    "  UNIQUE (name, hash)\n"
    ");\n"
    "CREATE TABLE problems (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  op TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  UNIQUE (op, key)\n"
    ");\n"
    "CREATE TABLE configurations (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  template_name TEXT NOT NULL,\n"
    "  text TEXT NOT NULL,\n"
    "  UNIQUE (template_name, text)\n"
    ");\n"
    "CREATE TABLE results (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  env_id INTEGER NOT NULL REFERENCES environments (id),\n"
    "  template_id INTEGER NOT NULL REFERENCES templates (id),\n"
    "  problem_id INTEGER NOT NULL REFERENCES problems (id),\n"
    "  config_id INTEGER NOT NULL REFERENCES configurations (id),\n"
    "  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'compile_failed', 'launch_failed',\n"
    "                                           'wrong_result', 'timed_out', 'invalid')),\n"
    "  detail TEXT,\n"
    "  runs INTEGER,\n"
    "  median_ms REAL,\n"
    "  min_ms REAL,\n"
    "  max_ms REAL,\n"
    "  p10_ms REAL,\n"
    "  p90_ms REAL,\n"
    "  baseline_ms REAL,\n"
    "  rel_error REAL,\n"
    "  method TEXT,\n"
    "  registers INTEGER,\n"
    "  smem_bytes INTEGER,\n"
    "  spill_bytes INTEGER,\n"
    "  recorded_at INTEGER NOT NULL,\n"
    "  UNIQUE (env_id, template_id, problem_id, config_id),\n"
    "  CHECK (outcome <> 'ok' OR (median_ms IS NOT NULL AND median_ms >= 0))\n"
    ");\n"
    /* lookup by (template, problem) and the best OK result per problem: an index walk in
     * median order; the other two serve the foreign keys. */
    "CREATE INDEX results_by_template_problem\n"
    "  ON results (template_id, problem_id, outcome, median_ms);\n"
    "CREATE INDEX results_by_problem ON results (problem_id);\n"
    "CREATE INDEX results_by_config ON results (config_id);\n";

static const sp_db_step SCHEMA_STEPS[] = {
    {"create the version 1 tables", SCHEMA_V1},
};

/* Joules per call of a result and of its baseline (NVML), NULL where not measured: nullable columns
 * added to results without a new schema version, so that builds that know nothing of them still read
 * and write the file (they name their columns), and a file without them reads as unmeasured. */
const char sp_db_energy_columns_sql[] =
    "ALTER TABLE results ADD COLUMN energy_j REAL;\n"
    "ALTER TABLE results ADD COLUMN baseline_energy_j REAL;\n";

_Static_assert(sizeof SCHEMA_STEPS / sizeof SCHEMA_STEPS[0] == SP_DB_SCHEMA_VERSION,
               "one migration step per schema version");

const sp_db_step *sp_db_schema_steps(int *count)
{
    if (count) *count = (int)(sizeof SCHEMA_STEPS / sizeof SCHEMA_STEPS[0]);
    return SCHEMA_STEPS;
}

sptune_status sp_db_refuse_foreign(const char *path, unsigned app_id)
{
    return sp_fail(SPTUNE_ERR_DB, "%s is not an sptune database (application_id 0x%08x); left untouched",
                   path, app_id);
}

sptune_status sp_db_refuse_newer(const char *path, int version)
{
    return sp_fail(SPTUNE_ERR_DB,
                   "%s was written by a newer sptune (schema %d; this build reads up to %d); left untouched",
                   path, version, SP_DB_SCHEMA_VERSION);
}

/* Returns an SQLite result code; the values are set only on SQLITE_OK. */
int sp_db_read_ids(sqlite3 *h, unsigned *app_id, int *version, long long *nobjects)
{
    static const char *const sql[3] = {
        "PRAGMA application_id",
        "PRAGMA user_version",
        "SELECT count(*) FROM sqlite_schema",
    };
    long long v[3] = {0, 0, 0};
    /* One read transaction for the three, or another process's creation committing between them
     * reads as tables without an application_id (a foreign file). */
    int own = sqlite3_get_autocommit(h);
    if (own) {
        int rc = sqlite3_exec(h, "BEGIN", NULL, NULL, NULL);
        if (rc != SQLITE_OK) return rc;
    }
    for (int i = 0; i < 3; i++) {
        sqlite3_stmt *s = NULL;
        int rc = sqlite3_prepare_v2(h, sql[i], -1, &s, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(s);
            if (rc == SQLITE_ROW) v[i] = sqlite3_column_int64(s, 0);
            else if (rc == SQLITE_DONE) rc = SQLITE_ERROR; /* a pragma always answers one row */
        }
        if (rc != SQLITE_ROW) {
            /* keeps the step's error for sqlite3_errmsg (a ROLLBACK would clear it); every caller
             * closes the connection on failure, which ends the read */
            sqlite3_finalize(s);
            return rc;
        }
        sqlite3_finalize(s);
    }
    if (own) sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    *app_id = (unsigned)(uint32_t)v[0];
    *version = (int)v[1];
    *nobjects = v[2];
    return SQLITE_OK;
}

sptune_status sp_db_migrate(sqlite3 *h, const char *path, const sp_db_step *steps, int nsteps,
                            int *from, int *to)
{
    unsigned app;
    int version;
    long long nobjects;
    char what[512];

    if (!h || !path || (nsteps > 0 && !steps) || nsteps < 0)
        return sp_fail(SPTUNE_ERR_INVALID, "sp_db_migrate: bad arguments");

    /* Fast path without a write lock: already current. */
    if (sp_db_read_ids(h, &app, &version, &nobjects) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "reading the schema version");
    if (app == SP_DB_APPLICATION_ID && version == nsteps) {
        if (from) *from = version;
        if (to) *to = version;
        return SPTUNE_OK;
    }

    /* Check again under the write lock: another process may be migrating right now. */
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "starting the schema migration");
    sptune_status st = SPTUNE_OK;
    if (sp_db_read_ids(h, &app, &version, &nobjects) != SQLITE_OK) {
        st = sp_db_sqlfail(h, path, "reading the schema version");
        goto fail;
    }
    if (app != SP_DB_APPLICATION_ID && (app != 0 || version != 0 || nobjects != 0)) {
        st = sp_db_refuse_foreign(path, app);
        goto fail;
    }
    if (version > nsteps) {
        st = sp_db_refuse_newer(path, version);
        goto fail;
    }
    if (version < 0) {
        st = sp_fail(SPTUNE_ERR_DB, "%s has an invalid schema version %d; left untouched", path, version);
        goto fail;
    }
    if (from) *from = version;
    for (int i = version; i < nsteps; i++) {
        if (!steps[i].sql || sqlite3_exec(h, steps[i].sql, NULL, NULL, NULL) != SQLITE_OK) {
            snprintf(what, sizeof what, "migrating the schema from version %d to %d (%s)", i, i + 1,
                     steps[i].what ? steps[i].what : "?");
            st = steps[i].sql ? sp_db_sqlfail(h, path, what)
                              : sp_fail(SPTUNE_ERR_INVALID, "%s: %s: no SQL", path, what);
            goto fail;
        }
    }
    /* Integers formatted by this code, not values from outside: PRAGMA takes no parameters. */
    snprintf(what, sizeof what, "PRAGMA application_id = %d; PRAGMA user_version = %d",
             (int)SP_DB_APPLICATION_ID, nsteps);
    if (sqlite3_exec(h, what, NULL, NULL, NULL) != SQLITE_OK) {
        st = sp_db_sqlfail(h, path, "setting the schema version");
        goto fail;
    }
    if (sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = sp_db_sqlfail(h, path, "committing the schema migration");
        goto fail;
    }
    if (to) *to = nsteps;
    return SPTUNE_OK;

fail:
    sp_db_rollback(h);
    return st;
}

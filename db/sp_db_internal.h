/* Internal to db/: the connection object, cached statements and the SQLite error helper. */
#ifndef SP_DB_INTERNAL_H
#define SP_DB_INTERNAL_H

#include "sp_db.h"
#include <sqlite3.h>

#define SP_DB_BUSY_TIMEOUT_MS 10000

/* Prepared statements kept for the life of the connection (prepared on first use). */
typedef enum sp_db_stmt_id {
    SP_STMT_ENV_SELECT,
    SP_STMT_ENV_INSERT,
    SP_STMT_TEMPLATE_SELECT,
    SP_STMT_TEMPLATE_INSERT,
    SP_STMT_PROBLEM_SELECT,
    SP_STMT_PROBLEM_INSERT,
    SP_STMT_CONFIG_SELECT,
    SP_STMT_CONFIG_INSERT,
    SP_STMT_RESULT_UPSERT,
    SP_STMT_LOOKUP,
    SP_STMT_LOOKUP_ENERGY,
    SP_STMT_BEST,
    SP_STMT_COUNT,
    SP_STMT__COUNT
} sp_db_stmt_id;

struct sp_db {
    sqlite3 *h;
    char *path;
    int version;       /* schema version (user_version) */
    int readonly;      /* opened with sp_db_open_readonly */
    int energy;        /* results has the energy columns (read-only opens of older files may lack them) */
    int busy_timeout_ms;
    sqlite3_stmt *stmt[SP_STMT__COUNT];
};

/* The SQL text of a cached statement (sp_db_results.c). */
const char *sp_db_stmt_sql(sp_db_stmt_id id);
/* The cached statement, prepared on first use; NULL with the message set on failure. */
sqlite3_stmt *sp_db_stmt(sp_db *db, sp_db_stmt_id id);

/* "PATH: WHAT: <sqlite3_errmsg>" as SPTUNE_ERR_DB; SQLITE_BUSY/LOCKED says that another process
 * holds the database. Takes the message from h before anything else touches it. */
sptune_status sp_db_sqlfail(sqlite3 *h, const char *path, const char *what);
sptune_status sp_db_sqlfail_busy(sqlite3 *h, const char *path, const char *what, int timeout_ms);

/* Rolls back the open transaction of h, if any (errors ignored: the message already set stays). */
void sp_db_rollback(sqlite3 *h);

/* The refusal messages (SPTUNE_ERR_DB), shared by the open-time inspection and the migration. */
sptune_status sp_db_refuse_foreign(const char *path, unsigned app_id);
sptune_status sp_db_refuse_newer(const char *path, int version);

/* Adds the energy columns to results (db/sp_db_schema.c). */
extern const char sp_db_energy_columns_sql[];

/* Reads application_id, user_version and the number of schema objects of h. */
int sp_db_read_ids(sqlite3 *h, unsigned *app_id, int *version, long long *nobjects);

/* Changes the busy timeout (tests use a short one to see the "locked" failure quickly). */
sptune_status sp_db_set_busy_timeout(sp_db *db, int ms);
/* The underlying connection (tests, export/import in db/). */
sqlite3 *sp_db_handle(sp_db *db);

#endif

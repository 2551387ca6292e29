/* Schema migrations: an ordered list of steps, step i taking user_version i to i+1. All pending
 * steps run in one BEGIN IMMEDIATE transaction together with the application_id/user_version
 * update, so a failing step leaves the file as it was. */
#ifndef SP_DB_MIGRATE_H
#define SP_DB_MIGRATE_H

#include "sptune.h"
#include <sqlite3.h>

typedef struct sp_db_step {
    const char *what; /* "create the v1 tables" */
    const char *sql;  /* one or more statements, run with sqlite3_exec */
} sp_db_step;

/* This build's steps; *count == SP_DB_SCHEMA_VERSION. */
const sp_db_step *sp_db_schema_steps(int *count);

/* Brings the database open on h up to version nsteps with steps[user_version .. nsteps-1] and sets
 * application_id. Refuses (SPTUNE_ERR_DB, nothing changed) a foreign database that is not
 * completely empty, and a database whose user_version is above nsteps. *from and *to (either may
 * be NULL) get the version before and after. path is only used in messages. */
sptune_status sp_db_migrate(sqlite3 *h, const char *path, const sp_db_step *steps, int nsteps,
                            int *from, int *to);

#endif

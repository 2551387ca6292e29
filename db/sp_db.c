/* Opening the tuning database: a read-only inspection first (a foreign or newer file is refused
 * and never written to), then the read-write connection, WAL, busy timeout and migrations. */
#include "sp_db.h"
#include "sp_db_internal.h"
#include "sp_clock.h"
#include "sp_db_migrate.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ---------------------------------------------------------------------------------- */

sptune_status sp_db_sqlfail_busy(sqlite3 *h, const char *path, const char *what, int timeout_ms)
{
    if (!h) return sp_fail(SPTUNE_ERR_DB, "%s: %s: out of memory", path, what);
    int code = sqlite3_errcode(h);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        return sp_fail(SPTUNE_ERR_DB,
                       "%s: %s: the database is locked by another process (waited %.1f s): %s",
                       path, what, timeout_ms / 1000.0, sqlite3_errmsg(h));
    return sp_fail(SPTUNE_ERR_DB, "%s: %s: %s", path, what, sqlite3_errmsg(h));
}

sptune_status sp_db_sqlfail(sqlite3 *h, const char *path, const char *what)
{
    return sp_db_sqlfail_busy(h, path, what, SP_DB_BUSY_TIMEOUT_MS);
}

void sp_db_rollback(sqlite3 *h)
{
    if (h && !sqlite3_get_autocommit(h)) sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- the read-only inspection ---------------------------------------------------------------- */

/* "file:" URI for path with the given query, percent-encoding everything but unreserved
 * characters and '/'. */
static char *file_uri(const char *path, const char *query)
{
    static const char hex[] = "0123456789ABCDEF";
    sp_buf b = {0};
    sp_buf_puts(&b, path[0] == '/' ? "file://" : "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        unsigned c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            char ch = (char)c;
            sp_buf_append(&b, &ch, 1);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            sp_buf_append(&b, esc, 3);
        }
    }
    sp_buf_puts(&b, "?");
    sp_buf_puts(&b, query);
    if (b.oom) { sp_buf_free(&b); return NULL; }
    return b.data;
}

typedef enum inspect_mode { INSPECT_CREATE, INSPECT_OPEN, INSPECT_READONLY } inspect_mode;

/* Decides, without writing anything, whether path may be opened. *fresh=1 when the database is to
 * be initialised (no file, a zero-length file, or an empty SQLite database; only with create).
 * *torn=1 when the refusal may be another process's creation seen half written (db_inspect retries). */
static sptune_status db_inspect_once(const char *path, inspect_mode mode, int *fresh, int *torn)
{
    struct stat sb;
    *fresh = 0;
    *torn = 0;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT && mode == INSPECT_CREATE) { *fresh = 1; return SPTUNE_OK; }
        if (errno == ENOENT) return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s: no such database", path);
        return sp_fail(SPTUNE_ERR_IO, "cannot access %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return sp_fail(SPTUNE_ERR_DB, "%s is not an sptune database (not a regular file); left untouched",
                       path);
    if (sb.st_size == 0) {
        if (mode == INSPECT_CREATE) { *fresh = 1; return SPTUNE_OK; }
        return sp_fail(SPTUNE_ERR_DB, "%s is not an sptune database (empty file); left untouched", path);
    }

    /* The header, read as plain bytes. */
    unsigned char head[100];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sp_fail(SPTUNE_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    ssize_t got = 0;
    while (got < (ssize_t)sizeof head) {
        ssize_t n = read(fd, head + got, sizeof head - (size_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return sp_fail(SPTUNE_ERR_IO, "cannot read %s: %s", path, strerror(e));
        }
        if (n == 0) break;
        got += n;
    }
    close(fd);
    if (got < (ssize_t)sizeof head || memcmp(head, "SQLite format 3", 16) != 0)
        return sp_fail(SPTUNE_ERR_DB, "%s is not an sptune database (not an SQLite file); left untouched",
                       path);

    /* An SQLite file: ask SQLite, strictly read-only. Without a -wal file, the immutable open
     * creates no -wal/-shm either (a plain read-only open of a WAL database would leave both);
     * with one, the database is in use (or was not closed) and the WAL must be read. */
    char *wal = sp_asprintf("%s-wal", path);
    if (!wal) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    int has_wal = access(wal, F_OK) == 0;
    free(wal);
    unsigned app = 0;
    int version = 0;
    long long nobjects = 0;
    /* The immutable read takes no locks: should it fail (another process rewriting the file
     * right now, e.g. a second sptune creating it), a locked read-only open has the last word,
     * unless the header says WAL mode (that open would leave -wal/-shm behind). */
    int wal_mode = head[18] == 2 || head[19] == 2;
    for (int attempt = has_wal ? 1 : 0; attempt < 2; attempt++) {
        char *uri = file_uri(path, attempt == 0 ? "immutable=1" : "mode=ro");
        if (!uri) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        sqlite3 *h = NULL;
        int rc = sqlite3_open_v2(uri, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        free(uri);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(h, SP_DB_BUSY_TIMEOUT_MS);
            rc = sp_db_read_ids(h, &app, &version, &nobjects);
        }
        /* the immutable read may also see another process's creation half written (tables, no
         * application_id yet): anything but an sptune database gets the locked read's verdict */
        if (rc == SQLITE_OK && (attempt == 1 || wal_mode || app == SP_DB_APPLICATION_ID)) {
            sqlite3_close(h);
            break;
        }
        if (attempt == 0 && h && !wal_mode) {
            sqlite3_close(h);
            continue;
        }
        sptune_status st;
        if (!h) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        else if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
            st = sp_db_sqlfail(h, path, "inspecting the database");
        else {
            /* a WAL-mode header gets no locked read (it would leave -wal/-shm): unreadable may be torn */
            *torn = attempt == 0 && wal_mode;
            st = sp_fail(SPTUNE_ERR_DB, "%s is not a readable SQLite database (%s); left untouched",
                         path, sqlite3_errmsg(h));
        }
        sqlite3_close(h);
        return st;
    }

    if (app != SP_DB_APPLICATION_ID) {
        if (app == 0 && version == 0 && nobjects == 0) {
            if (mode == INSPECT_CREATE) { *fresh = 1; return SPTUNE_OK; }
            return sp_fail(SPTUNE_ERR_DB,
                           "%s is not an sptune database (an empty SQLite database); left untouched", path);
        }
        return sp_db_refuse_foreign(path, app);
    }
    if (version > SP_DB_SCHEMA_VERSION) return sp_db_refuse_newer(path, version);
    if (mode == INSPECT_READONLY && version != SP_DB_SCHEMA_VERSION)
        return sp_fail(SPTUNE_ERR_DB,
                       "%s has schema %d, older than this build's %d; open it for writing once to migrate it",
                       path, version, SP_DB_SCHEMA_VERSION);
    return SPTUNE_OK;
}

/* ---- open / close ---------------------------------------------------------------------------- */

/* 0..n-1, different between processes that wake up together. */
static int jitter_ms(int n)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int)(((unsigned long)ts.tv_nsec / 1000u + (unsigned long)getpid() * 7919u) % (unsigned long)n);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* db_inspect_once, again for a while where what it saw may be a creation under way elsewhere (a file being
 * written is whole within milliseconds; a damaged one is refused as before, ~0.3 s later). */
static sptune_status db_inspect(const char *path, inspect_mode mode, int *fresh)
{
    int torn = 0;
    sptune_status st = db_inspect_once(path, mode, fresh, &torn);
    for (int tries = 0; st != SPTUNE_OK && torn && tries < 40; tries++) {
        sleep_ms(5 + jitter_ms(5));
        st = db_inspect_once(path, mode, fresh, &torn);
    }
    return st;
}

static sptune_status make_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return SPTUNE_OK;
    char *dir = sp_strndup(path, (size_t)(slash - path));
    if (!dir) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    sptune_status st = sp_mkdir_p(dir);
    free(dir);
    if (st != SPTUNE_OK) return sp_wrap(st, "cannot create the database %s", path);
    return SPTUNE_OK;
}

/* Whether results has the energy columns (a file of an earlier build has not). */
static sptune_status has_energy(sqlite3 *h, const char *path, int *yes)
{
    sqlite3_stmt *s = NULL;
    *yes = 0;
    if (sqlite3_prepare_v2(h, "SELECT count(*) FROM pragma_table_info('results') WHERE name = 'energy_j'", -1, &s,
                           NULL) != SQLITE_OK) {
        sptune_status st = sp_db_sqlfail(h, path, "reading the results table's columns");
        sqlite3_finalize(s);
        return st;
    }
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) *yes = sqlite3_column_int(s, 0) > 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? SPTUNE_OK : sp_db_sqlfail(h, path, "reading the results table's columns");
}

/* Adds the energy columns to a file written before them (or by a build without them), under the write
 * lock and checked again there: another process opening the same file may be adding them too. */
static sptune_status add_energy(sqlite3 *h, const char *path)
{
    char *err = NULL;
    int yes = 0;
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, &err) != SQLITE_OK) {
        sptune_status st = sp_fail(SPTUNE_ERR_DB, "%s: adding the energy columns: %s", path, err ? err : "?");
        sqlite3_free(err);
        return st;
    }
    sptune_status st = has_energy(h, path, &yes);
    if (st == SPTUNE_OK && !yes && sqlite3_exec(h, sp_db_energy_columns_sql, NULL, NULL, &err) != SQLITE_OK)
        st = sp_fail(SPTUNE_ERR_DB, "%s: adding the energy columns: %s", path, err ? err : "?");
    sqlite3_free(err);
    if (st != SPTUNE_OK) {
        sp_db_rollback(h);
        return st;
    }
    if (sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = sp_db_sqlfail(h, path, "adding the energy columns");
        sp_db_rollback(h);
    }
    return st;
}

static sptune_status db_new(sqlite3 *h, const char *path, int readonly, int version, sp_db **out)
{
    sp_db *db = calloc(1, sizeof *db);
    char *p = sp_strdup(path);
    if (!db || !p) {
        free(db);
        free(p);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    db->h = h;
    db->path = p;
    db->readonly = readonly;
    db->version = version;
    db->busy_timeout_ms = SP_DB_BUSY_TIMEOUT_MS;
    *out = db;
    return SPTUNE_OK;
}

/* Connection settings shared by both kinds of open. */
static sptune_status db_configure(sqlite3 *h, const char *path, int readonly)
{
    sqlite3_extended_result_codes(h, 1);
    /* A database may come from elsewhere: SQL cannot corrupt it (defensive mode), and functions in
     * its schema (views, triggers, defaults) run only if harmless (trusted_schema off). */
    int on = 0, trusted = 1;
    if (sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) != SQLITE_OK || !on ||
        sqlite3_db_config(h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &trusted) != SQLITE_OK || trusted)
        return sp_db_sqlfail(h, path, "setting SQLite's defensive options");
    if (sqlite3_busy_timeout(h, SP_DB_BUSY_TIMEOUT_MS) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "setting the busy timeout");
    if (sqlite3_exec(h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "enabling foreign keys");
    if (readonly) {
        if (sqlite3_exec(h, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK)
            return sp_db_sqlfail(h, path, "making the connection read-only");
        return SPTUNE_OK;
    }
    if (sqlite3_exec(h, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "setting synchronous mode");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(h, "PRAGMA journal_mode = WAL", -1, &s, NULL) != SQLITE_OK)
        return sp_db_sqlfail(h, path, "switching to WAL mode");
    /* Two processes switching a new file at once can each hold a shared lock and want the
     * exclusive one: SQLite then answers SQLITE_BUSY at once (no busy handler, it would
     * deadlock), so retry here until the busy timeout. */
    double start = sp_now_s();
    int rc;
    while (((rc = sqlite3_step(s)) & 0xff) == SQLITE_BUSY && sp_now_s() - start < SP_DB_BUSY_TIMEOUT_MS / 1000.0) {
        sqlite3_reset(s);
        sleep_ms(2 + jitter_ms(20));
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(s);
        return sp_db_sqlfail(h, path, "switching to WAL mode");
    }
    const char *mode = (const char *)sqlite3_column_text(s, 0);
    int wal = mode && strcmp(mode, "wal") == 0;
    sptune_status st = SPTUNE_OK;
    if (!wal)
        st = sp_fail(SPTUNE_ERR_DB, "%s: cannot switch to WAL mode (the journal mode stays '%s'; "
                     "is it on a file system without shared memory?)", path, mode ? mode : "?");
    sqlite3_finalize(s);
    return st;
}

sptune_status sp_db_open(const char *path, int create, sp_db **out)
{
    if (out) *out = NULL;
    if (!path || !*path || !out) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_open: no path");
    int fresh = 0;
    sptune_status st = db_inspect(path, create ? INSPECT_CREATE : INSPECT_OPEN, &fresh);
    if (st != SPTUNE_OK) return st;
    if (fresh) {
        st = make_parent(path);
        if (st != SPTUNE_OK) return st;
    }

    sqlite3 *h = NULL;
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &h, flags, NULL) != SQLITE_OK) {
        st = sp_db_sqlfail(h, path, "cannot open the database");
        sqlite3_close(h);
        return st;
    }
    if (sqlite3_db_readonly(h, "main") == 1) {
        sqlite3_close(h);
        return sp_fail(SPTUNE_ERR_DB, "%s: cannot open the database for writing (the file is read-only)",
                       path);
    }
    int version = 0;
    st = db_configure(h, path, 0);
    if (st == SPTUNE_OK) {
        int count;
        const sp_db_step *steps = sp_db_schema_steps(&count);
        st = sp_db_migrate(h, path, steps, count, NULL, &version);
    }
    /* a writable open always ends with the energy columns present */
    int energy = 0;
    if (st == SPTUNE_OK && (st = has_energy(h, path, &energy)) == SPTUNE_OK && !energy) st = add_energy(h, path);
    if (st == SPTUNE_OK) st = db_new(h, path, 0, version, out);
    if (st == SPTUNE_OK) (*out)->energy = 1;
    if (st != SPTUNE_OK) sqlite3_close(h);
    return st;
}

sptune_status sp_db_open_readonly(const char *path, sp_db **out)
{
    if (out) *out = NULL;
    if (!path || !*path || !out) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_open_readonly: no path");
    int fresh = 0;
    sptune_status st = db_inspect(path, INSPECT_READONLY, &fresh);
    if (st != SPTUNE_OK) return st;

    /* Opened read-write when the file allows it (so that the last connection to close cleans up
     * -wal/-shm as usual), with query_only set: nothing is written through this connection. */
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        h = NULL;
        if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            st = sp_db_sqlfail(h, path, "cannot open the database");
            sqlite3_close(h);
            return st;
        }
    }
    st = db_configure(h, path, 1);
    unsigned app = 0;
    int version = 0;
    long long nobjects = 0;
    if (st == SPTUNE_OK && sp_db_read_ids(h, &app, &version, &nobjects) != SQLITE_OK)
        st = sp_db_sqlfail(h, path, "reading the schema version");
    /* Checked again: the file may have changed since the inspection. */
    if (st == SPTUNE_OK && app != SP_DB_APPLICATION_ID) st = sp_db_refuse_foreign(path, app);
    if (st == SPTUNE_OK && version > SP_DB_SCHEMA_VERSION) st = sp_db_refuse_newer(path, version);
    if (st == SPTUNE_OK && version != SP_DB_SCHEMA_VERSION)
        st = sp_fail(SPTUNE_ERR_DB, "%s has schema %d, older than this build's %d; open it for writing once "
                     "to migrate it", path, version, SP_DB_SCHEMA_VERSION);
    int energy = 0;
    if (st == SPTUNE_OK) st = has_energy(h, path, &energy);
    if (st == SPTUNE_OK) st = db_new(h, path, 1, version, out);
    if (st == SPTUNE_OK) (*out)->energy = energy;
    if (st != SPTUNE_OK) sqlite3_close(h);
    return st;
}

void sp_db_close(sp_db *db)
{
    if (!db) return;
    for (int i = 0; i < SP_STMT__COUNT; i++) sqlite3_finalize(db->stmt[i]);
    sqlite3_close(db->h);
    free(db->path);
    free(db);
}

int sp_db_schema_version(const sp_db *db) { return db ? db->version : -1; }
const char *sp_db_path(const sp_db *db) { return db ? db->path : NULL; }

sptune_status sp_db_quick_check(sp_db *db)
{
    if (!db) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_quick_check: no database");
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db->h, "PRAGMA quick_check(1)", -1, &s, NULL) != SQLITE_OK) {
        sptune_status st = sp_db_sqlfail(db->h, db->path, "checking the file (quick_check)");
        sqlite3_finalize(s);
        return st;
    }
    sptune_status st = SPTUNE_OK;
    int rc = sqlite3_step(s);
    const char *msg = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    if (rc != SQLITE_ROW) st = sp_db_sqlfail(db->h, db->path, "checking the file (quick_check)");
    else if (!msg || strcmp(msg, "ok") != 0)
        st = sp_fail(SPTUNE_ERR_DB, "%s is damaged (SQLite's quick_check: %.200s); nothing taken from it", db->path,
                     msg ? msg : "no answer");
    sqlite3_finalize(s);
    return st;
}

sqlite3 *sp_db_handle(sp_db *db) { return db ? db->h : NULL; }


sptune_status sp_db_set_busy_timeout(sp_db *db, int ms)
{
    if (!db || ms < 0) return sp_fail(SPTUNE_ERR_INVALID, "sp_db_set_busy_timeout: bad arguments");
    if (sqlite3_busy_timeout(db->h, ms) != SQLITE_OK)
        return sp_db_sqlfail(db->h, db->path, "setting the busy timeout");
    db->busy_timeout_ms = ms;
    return SPTUNE_OK;
}

sqlite3_stmt *sp_db_stmt(sp_db *db, sp_db_stmt_id id)
{
    if (db->stmt[id]) return db->stmt[id];
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v3(db->h, sp_db_stmt_sql(id), -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) {
        sp_db_sqlfail_busy(db->h, db->path, "preparing a query", db->busy_timeout_ms);
        sqlite3_finalize(s);
        return NULL;
    }
    db->stmt[id] = s;
    return s;
}

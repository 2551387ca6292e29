/* The tuning database under stress: refusal of foreign and newer files (left byte-identical),
 * migrations (and their rollback), a failing record rolled back, a locked database, two processes
 * recording into one file at once, and hostile shared files. */
#include "db_fixture.h"

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

/* A database `name` in the test's folder holding one result: its path (to free). */
static char *with_one_result(const char *name)
{
    char *path = path_in(name);
    sp_db *db = NULL;
    sp_result r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_open(path, 1, &db), SPTUNE_OK);
    if (db) CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    sp_db_close(db);
    return path;
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
    char *future = with_one_result("future.db");
    sp_db *db = NULL;
    CHECK(raw_exec(future, "PRAGMA user_version = 99") == SQLITE_OK);
    CHECK(!side_file_exists(future, "-wal"));
    snprintf(want, sizeof want,
             "%s was written by a newer sptune (schema 99; this build reads up to %d); left untouched", future,
             SP_DB_SCHEMA_VERSION);
    check_refused(future, want);
    CHECK(raw_int(future, "PRAGMA user_version") == 99);

    /* A folder is not a database either. */
    char *folder = path_in("a-folder.db");
    CHECK_EQ(mkdir(folder, 0755), 0);
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
    char *path = with_one_result("migrate.db");
    sp_db *db = NULL;

    /* Two more steps: current -> current + 2. */
    enum { NR = SP_DB_SCHEMA_VERSION };
    sp_db_step steps[NR + 2];
    for (int i = 0; i < NR; i++) steps[i] = real[i];
    steps[NR] = (sp_db_step){"add a notes table", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"};
    steps[NR + 1] = (sp_db_step){"add a column", "ALTER TABLE results ADD COLUMN note TEXT; UPDATE results SET note = 'migrated';"};
    sqlite3 *h = NULL;
    CHECK_EQ(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
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
    CHECK_EQ(sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    CHECK_ST(sp_db_migrate(h, path, steps, NR + 1, NULL, NULL), SPTUNE_ERR_DB);
    snprintf(want, sizeof want, "newer sptune (schema %d", NR + 2);
    CHECK(strstr(sptune_last_error(), want) != NULL);
    sqlite3_close(h);
    CHECK(raw_int(path, "PRAGMA user_version") == NR + 2);

    /* A failing step rolls back every step of the run, and the version. */
    char *path2 = with_one_result("migrate-fail.db");
    sp_db_step bad[NR + 3];
    for (int i = 0; i < NR; i++) bad[i] = real[i];
    bad[NR] = (sp_db_step){"add a notes table", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);"};
    bad[NR + 1] = (sp_db_step){"drop the results", "DELETE FROM results;"};
    bad[NR + 2] = (sp_db_step){"a broken step", "CREATE TABLE broken (x; -- syntax error"};
    CHECK_EQ(sqlite3_open_v2(path2, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    long long objects_before = count_tables(h);
    CHECK_ST(sp_db_migrate(h, path2, bad, NR + 3, NULL, NULL), SPTUNE_ERR_DB);
    snprintf(want, sizeof want, "from version %d to %d (a broken step)", NR + 2, NR + 3);
    CHECK_MSG(strstr(sptune_last_error(), want) != NULL &&
              strncmp(sptune_last_error(), path2, strlen(path2)) == 0, "message: %s", sptune_last_error());
    CHECK(sqlite3_get_autocommit(h) == 1); /* no transaction left open */
    CHECK_EQ(count_tables(h), objects_before);
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
    CHECK_EQ(count_tables(h), 1);
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
    CHECK_EQ(sqlite3_get_autocommit(sp_db_handle(db)), 1);
    CHECK(raw_int(path, "SELECT count(*) FROM environments") == 0);
    CHECK(raw_int(path, "SELECT count(*) FROM templates") == 0);
    CHECK(raw_int(path, "SELECT count(*) FROM configurations") == 0);
    r.detail = "fine";
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);

    /* Another connection holds the write lock: the record waits, then says so. */
    sqlite3 *other = NULL;
    CHECK_EQ(sqlite3_open_v2(path, &other, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK_ST(sp_db_set_busy_timeout(db, 200), SPTUNE_OK);
    r = ok_result(&ENV_H200, HASH_A, PROBLEM, "bm=128,bn=128", 1.0);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_ERR_DB);
    CHECK_MSG(strstr(sptune_last_error(), "locked by another process") != NULL &&
              strncmp(sptune_last_error(), path, strlen(path)) == 0, "message '%s'", sptune_last_error());
    /* Reads go on meanwhile (WAL). */
    long long n = -1;
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_EQ(n, 1);
    CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);
    CHECK_ST(sp_db_record(db, &r), SPTUNE_OK);
    CHECK_ST(sp_db_count(db, &n), SPTUNE_OK);
    CHECK_EQ(n, 2);
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
        CHECK_EQ(waitpid(pid[c], &status, 0), pid[c]);
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

/* Several processes creating one file, many times over: an open must never take another's creation
 * in progress for a foreign database (it did, about once in a thousand, under load). */
static void test_racing_creations(void)
{
    enum { ROUNDS = 40, OPENERS = 4 };
    int refused = 0;
    for (int r = 0; r < ROUNDS; r++) {
        char name[64];
        snprintf(name, sizeof name, "race/%d.db", r);
        char *path = path_in(name);
        fflush(NULL);
        pid_t pid[OPENERS];
        for (int c = 0; c < OPENERS; c++) {
            pid[c] = fork();
            if (pid[c] == 0) {
                sp_db *db = NULL;
                if (sp_db_open(path, 1, &db) != SPTUNE_OK) {
                    fprintf(stderr, "round %d, opener %d: %s\n", r, c, sptune_last_error());
                    _exit(1);
                }
                sp_db_close(db);
                _exit(0);
            }
            CHECK(pid[c] > 0);
        }
        for (int c = 0; c < OPENERS; c++) {
            int status = 0;
            if (pid[c] <= 0) continue;
            CHECK_EQ(waitpid(pid[c], &status, 0), pid[c]);
            refused += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        free(path);
    }
    CHECK_MSG(refused == 0, "%d of %d opens refused a database being created", refused, ROUNDS * OPENERS);
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
int main(void)
{
    tmp = sp_test_tmpdir("test_db_safety");
    test_refusals();
    test_hostile();
    test_migrations();
    test_record_rollback_and_lock();
    test_two_processes();
    test_racing_creations();
    return sp_test_done("test_db_safety");
}

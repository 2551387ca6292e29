#include "sp_db_t4.h"
#include "sp_file.h"
#include "sp_status.h"
#include "sp_str.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static const char *const invalidity[SP_OUTCOME__COUNT] = {
    [SP_OUTCOME_OK] = "correct", [SP_OUTCOME_COMPILE_FAILED] = "compile", [SP_OUTCOME_LAUNCH_FAILED] = "runtime",
    [SP_OUTCOME_WRONG_RESULT] = "correctness", [SP_OUTCOME_TIMED_OUT] = "timeout", [SP_OUTCOME_INVALID] = "constraints"};

const char *sp_t4_invalidity(sp_outcome o) { return o >= 0 && o < SP_OUTCOME__COUNT ? invalidity[o] : "runtime"; }

int sp_t4_outcome(const char *name, sp_outcome *o)
{
    for (int i = 0; name && i < SP_OUTCOME__COUNT; i++)
        if (strcmp(name, invalidity[i]) == 0) {
            *o = (sp_outcome)i;
            return 1;
        }
    return 0;
}

static sptune_status sqlerr(sqlite3 *h, const char *path, const char *what)
{
    return sp_fail(SPTUNE_ERR_INVALID, "%s: %s: %s", path, what, h ? sqlite3_errmsg(h) : "out of memory");
}

sptune_status sp_t4_read(const char *path, sp_t4_fn fn, void *ud)
{
    char *text = NULL;
    size_t len = 0;
    sptune_status st = sp_read_file(path, &text, &len);
    if (st != SPTUNE_OK) return st;
    sqlite3 *h = NULL;
    sqlite3_stmt *s = NULL;
    if (sqlite3_open_v2(":memory:", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL) != SQLITE_OK) {
        st = sqlerr(h, path, "opening SQLite");
        goto out;
    }
    /* the shape first: an object whose results are an array */
    if (sqlite3_prepare_v2(h, "SELECT json_valid(?1), json_type(?1), json_type(?1, '$.results'), "
                              "json_extract(?1, '$.schema_version')", -1, &s, NULL) != SQLITE_OK) {
        st = sqlerr(h, path, "reading JSON");
        goto out;
    }
    sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW || !sqlite3_column_int(s, 0)) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: not JSON", path);
        goto out;
    }
    const char *top = (const char *)sqlite3_column_text(s, 1), *res = (const char *)sqlite3_column_text(s, 2);
    const char *ver = (const char *)sqlite3_column_text(s, 3);
    if (!top || strcmp(top, "object") != 0 || !res || strcmp(res, "array") != 0) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: not T4 results (an object with a \"results\" array)", path);
        goto out;
    }
    if (ver && strncmp(ver, "1.", 2) != 0) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: T4 schema %s (this build reads 1.x)", path, ver);
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;
    /* each result (outer statement) read by a second statement: its configuration as name=value pairs
     * in the file's order, its invalidity, the median of its runtimes, its baseline measurement */
    static const char one[] =
        "SELECT (SELECT group_concat(c.key || '=' || c.atom, ',') FROM json_each(?1, '$.configuration') c),"
        " json_extract(?1, '$.invalidity'), json_type(?1, '$.configuration'),"
        " (SELECT count(*) FROM json_each(?1, '$.times.runtimes')),"
        " (SELECT value FROM json_each(?1, '$.times.runtimes') ORDER BY value"
        "    LIMIT 1 OFFSET (SELECT (count(*) - 1) / 2 FROM json_each(?1, '$.times.runtimes'))),"
        " (SELECT json_extract(m.value, '$.value') FROM json_each(?1, '$.measurements') m"
        "    WHERE json_extract(m.value, '$.name') = 'baseline')";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(h, "SELECT key, value FROM json_each(?1, '$.results') ORDER BY key", -1, &s, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h, one, -1, &q, NULL) != SQLITE_OK) {
        st = sqlerr(h, path, "reading the results");
        sqlite3_finalize(q);
        goto out;
    }
    sqlite3_bind_text(s, 1, text, (int)len, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        long long i = sqlite3_column_int64(s, 0);
        sqlite3_reset(q);
        sqlite3_bind_value(q, 1, sqlite3_column_value(s, 1));
        if (sqlite3_step(q) != SQLITE_ROW) {
            st = sqlerr(h, path, "reading a result");
            break;
        }
        const char *cfg = (const char *)sqlite3_column_text(q, 0), *inv = (const char *)sqlite3_column_text(q, 1);
        const char *ctype = (const char *)sqlite3_column_text(q, 2);
        sp_t4_result r = {cfg, SP_OUTCOME_OK, -1, -1, sqlite3_column_int(q, 3)};
        if (!ctype || strcmp(ctype, "object") != 0 || !cfg || !*cfg) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: result %lld has no configuration object", path, i);
            break;
        }
        if (!sp_t4_outcome(inv, &r.outcome)) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: result %lld: invalidity '%s' is not a T4 value", path, i,
                         inv ? inv : "(none)");
            break;
        }
        if (sqlite3_column_type(q, 4) == SQLITE_INTEGER || sqlite3_column_type(q, 4) == SQLITE_FLOAT)
            r.median_ms = sqlite3_column_double(q, 4);
        if (sqlite3_column_type(q, 5) == SQLITE_INTEGER || sqlite3_column_type(q, 5) == SQLITE_FLOAT)
            r.baseline_ms = sqlite3_column_double(q, 5);
        if (r.outcome == SP_OUTCOME_OK && !(r.median_ms > 0)) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: result %lld is correct but has no positive runtime", path, i);
            break;
        }
        if (fn(&r, ud)) break;
    }
    if (st == SPTUNE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) st = sqlerr(h, path, "reading the results");
    sqlite3_finalize(q);
out:
    sqlite3_finalize(s);
    sqlite3_close(h);
    free(text);
    return st;
}

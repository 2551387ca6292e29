/* sptune db: look at (info, show, verify), export, import and merge tuning databases. Whatever comes from another
 * machine is checked against the local templates before it is recorded: an unknown op, a
 * problem or configuration the local template does not accept, or an unknown GPU profile is
 * rejected (and counted), never executed or compiled. */
#include "cli.h"
#include "sp_db.h"
#include "sp_db_t4.h"
#include "sp_db_text.h"
#include "sp_hash.h"
#include "sp_shipped.h"
#include "sp_status.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct accept_ctx {
    sp_template *t[32];
    int n;
} accept_ctx;

static sp_template *template_for(accept_ctx *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(sp_template_name(a->t[i]), name) == 0) return a->t[i];
    sp_template *t;
    if (a->n == 32 || sp_template_load(name, &t) != SPTUNE_OK) return NULL;
    return a->t[a->n++] = t;
}

static int accept_result(const sp_result *r, void *ud, char *why, size_t len)
{
    accept_ctx *a = ud;
    sp_template *t = template_for(a, r->template_name);
    if (!t) { snprintf(why, len, "no local template '%s'", r->template_name); return 0; }
    sp_gpu_profile gpu;
    if (sp_gpu_profile_named(r->env->gpu_profile, &gpu) != SPTUNE_OK) {
        snprintf(why, len, "unknown GPU profile '%s'", r->env->gpu_profile);
        return 0;
    }
    sp_problem p;
    sp_config c;
    if (sp_problem_parse(t, r->problem_key, &p) != SPTUNE_OK || sp_config_parse(t, r->config, &c) != SPTUNE_OK) {
        snprintf(why, len, "%s", sptune_last_error());
        return 0;
    }
    int ok = 0;
    char *reason = NULL;
    if (sp_template_check(t, &c, &gpu, &p, &ok, &reason) != SPTUNE_OK || !ok) {
        snprintf(why, len, "%s is not in the local %s space for %s: %s", r->config, r->template_name,
                 r->env->gpu_profile, reason ? reason : sptune_last_error());
        free(reason);
        return 0;
    }
    return 1;
}

static void accept_free(accept_ctx *a)
{
    for (int i = 0; i < a->n; i++) sp_template_free(a->t[i]);
}

/* ---- show and verify ---------------------------------------------------------------------------- */

typedef struct row {
    char *key;            /* "gpu\x1fop\x1fproblem": the group */
    char *config;
    double ms, baseline_ms, energy_j;
    int ok, stale;
} row;

typedef struct row_list {
    row *v;
    size_t n, cap;
    accept_ctx acc;
    int oom;
    /* verify */
    long long invalid, stale;
    char first_invalid[512];
} row_list;

static int collect(const sp_result *r, void *ud)
{
    row_list *x = ud;
    sp_template *t = template_for(&x->acc, r->template_name);
    int stale = t && strcmp(sp_template_hash(t), r->template_hash) != 0;
    char why[400] = "";
    if (!accept_result(r, &x->acc, why, sizeof why)) {
        if (x->invalid++ == 0)
            snprintf(x->first_invalid, sizeof x->first_invalid, "%s %s %s: %s", r->template_name, r->problem_key,
                     r->config, why);
        sp_clear_error();
    }
    x->stale += stale;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 256;
        row *v = realloc(x->v, cap * sizeof *v);
        if (!v) { x->oom = 1; return 1; }
        x->v = v;
        x->cap = cap;
    }
    row *w = &x->v[x->n];
    w->key = sp_asprintf("%s\x1f%s\x1f%s", r->env->gpu_profile, r->template_name, r->problem_key);
    w->config = strdup(r->config);
    if (!w->key || !w->config) { free(w->key); free(w->config); x->oom = 1; return 1; }
    w->ms = r->timing.median_ms;
    w->baseline_ms = r->timing.baseline_ms;
    w->energy_j = r->timing.energy_j;
    w->ok = r->outcome == SP_OUTCOME_OK;
    w->stale = stale;
    x->n++;
    return 0;
}

static double speedup(const row *w) { return w->baseline_ms > 0 && w->ms > 0 ? w->baseline_ms / w->ms : 0; }

/* Groups in key order; in a group the passing results fastest first (speed-up, else time), then the
 * failed ones. */
static int by_group(const void *pa, const void *pb)
{
    const row *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c) return c;
    if (a->ok != b->ok) return b->ok - a->ok;
    double sa = speedup(a), sb = speedup(b);
    if (sa != sb) return (sa < sb) - (sa > sb);
    return (a->ms > b->ms) - (a->ms < b->ms);
}

static void rows_free(row_list *x)
{
    for (size_t i = 0; i < x->n; i++) { free(x->v[i].key); free(x->v[i].config); }
    free(x->v);
    accept_free(&x->acc);
}

static int show(cli_cmd *cmd, sp_db *db, int limit)
{
    row_list x;
    memset(&x, 0, sizeof x);
    sptune_status st = sp_db_foreach(db, collect, &x);
    if (st == SPTUNE_OK && x.oom) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (st != SPTUNE_OK) { rows_free(&x); return cli_error(cmd->name, st); }
    if (x.n > 1) qsort(x.v, x.n, sizeof *x.v, by_group);
    printf("%-7s %-14s %-44s %9s %9s %8s %9s  %s\n", "gpu", "op", "problem", "ms", "baseline", "speedup", "J/call",
           "configuration");
    for (size_t i = 0; i < x.n;) {
        size_t j = i, shown = 0, failed = 0;
        char gpu[40], op[40];
        const char *k = x.v[i].key, *s1 = strchr(k, '\x1f'), *s2 = s1 ? strchr(s1 + 1, '\x1f') : NULL;
        snprintf(gpu, sizeof gpu, "%.*s", (int)(s1 ? s1 - k : 0), k);
        snprintf(op, sizeof op, "%.*s", (int)(s2 && s1 ? s2 - s1 - 1 : 0), s1 ? s1 + 1 : "");
        for (; j < x.n && strcmp(x.v[j].key, k) == 0; j++) {
            const row *w = &x.v[j];
            if (!w->ok) { failed++; continue; }
            if ((int)shown++ >= limit) continue;
            char sp[16] = "-";
            if (speedup(w) > 0) snprintf(sp, sizeof sp, "%.2fx", speedup(w));
            char joules[32];
            cli_joules(w->energy_j, joules, sizeof joules);
            printf("%-7s %-14s %-44s %9.4f %9.4f %8s %9s  %s%s\n", gpu, op, s2 ? s2 + 1 : "", w->ms,
                   w->baseline_ms > 0 ? w->baseline_ms : 0.0, sp, joules, w->config,
                   w->stale ? "  [stale: earlier template]" : "");
        }
        if (shown > (size_t)limit || failed)
            printf("%-7s %-14s %-44s   (%zu more passing, %zu failed)\n", "", "", "",
                   shown > (size_t)limit ? shown - (size_t)limit : 0, failed);
        i = j;
    }
    rows_free(&x);
    return CLI_OK;
}

static int verify(cli_cmd *cmd, sp_db *db, const char *path)
{
    sptune_status st = sp_db_quick_check(db);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    row_list x;
    memset(&x, 0, sizeof x);
    st = sp_db_foreach(db, collect, &x);
    if (st == SPTUNE_OK && x.oom) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (st != SPTUNE_OK) { rows_free(&x); return cli_error(cmd->name, st); }
    printf("%s: integrity ok (quick_check), schema %d, %zu results: %lld valid for the local templates, "
           "%lld not, %lld measured with an earlier template version (stale)\n", path, sp_db_schema_version(db), x.n,
           (long long)x.n - x.invalid, x.invalid, x.stale);
    if (x.invalid) printf("  first not valid: %s\n", x.first_invalid);
    int rc = x.invalid ? CLI_FAIL : CLI_OK;
    rows_free(&x);
    return rc;
}

static int report(const char *what, const sp_db_import_stats *s, long long added);

/* ---- Kernel Tuner's T4 results (db/sp_db_t4.h): one op, problem and GPU profile per file --------- */

typedef struct t4_ctx {
    sp_template *t;
    const char *key, *profile;
    int n;
    /* import */
    sp_db *db;
    accept_ctx *acc;
    sp_env env;
    char hash[65];
    sp_db_import_stats stats;
    sptune_status st;
} t4_ctx;

static int t4_write(const sp_result *r, void *ud)
{
    t4_ctx *x = ud;
    if (strcmp(r->template_name, sp_template_name(x->t)) || strcmp(r->problem_key, x->key) ||
        strcmp(r->env->gpu_profile, x->profile))
        return 0;
    printf("%s\n  {\"timestamp\": \"%lld\", \"configuration\": {", x->n++ ? "," : "", r->recorded_at);
    char *cfg = strdup(r->config);
    int first = 1;
    for (char *save = NULL, *kv = cfg ? strtok_r(cfg, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = 0;
        cli_json_key(kv, first);
        first = 0;
        char *end = NULL;
        strtoll(eq + 1, &end, 10);
        if (*(eq + 1) && !*end) printf("%s", eq + 1);   /* an integer */
        else cli_json_str(eq + 1);
    }
    free(cfg);
    int ok = r->outcome == SP_OUTCOME_OK;
    printf("}, \"objectives\": [\"time\"], \"times\": {\"runtimes\": [");
    if (ok) cli_json_num(r->timing.median_ms, 6);
    printf("]}, \"invalidity\": \"%s\", \"correctness\": %d, \"measurements\": [", sp_t4_invalidity(r->outcome), ok);
    if (ok) {
        printf("{\"name\": \"time\", \"value\": ");
        cli_json_num(r->timing.median_ms, 6);
        printf(", \"unit\": \"ms\"}");
        if (r->timing.baseline_ms > 0) {
            printf(", {\"name\": \"baseline\", \"value\": ");
            cli_json_num(r->timing.baseline_ms, 6);
            printf(", \"unit\": \"ms\"}");
        }
    }
    printf("]}");
    return 0;
}

static int t4_take(const sp_t4_result *in, void *ud)
{
    t4_ctx *x = ud;
    x->stats.read++;
    sp_config c;
    char *cfg = NULL, why[600] = "";
    if (sp_config_parse(x->t, in->config, &c) != SPTUNE_OK || !(cfg = sp_config_format(x->t, &c))) {
        snprintf(why, sizeof why, "%s", sptune_last_error());
    } else {
        sp_result r;
        memset(&r, 0, sizeof r);
        r.env = &x->env;
        r.template_name = sp_template_name(x->t);
        r.template_hash = x->hash;
        r.problem_key = x->key;
        r.config = cfg;
        r.outcome = in->outcome;
        r.detail = in->outcome == SP_OUTCOME_OK ? NULL : "imported from a T4 file";
        r.timing.runs = in->runs > 0 ? in->runs : 1;
        r.timing.median_ms = r.timing.min_ms = r.timing.max_ms = r.timing.p10_ms = r.timing.p90_ms = in->median_ms;
        r.timing.baseline_ms = in->baseline_ms;
        r.timing.rel_error = in->outcome == SP_OUTCOME_OK ? 0 : -1;
        r.timing.method = "imported from a T4 file";
        r.registers = r.smem_bytes = r.spill_bytes = -1;
        if (accept_result(&r, x->acc, why, sizeof why)) {
            if ((x->st = sp_db_record(x->db, &r)) != SPTUNE_OK) { free(cfg); return 1; }
            x->stats.recorded++;
        }
    }
    if (*why) {
        if (x->stats.rejected++ == 0)
            snprintf(x->stats.first_rejection, sizeof x->stats.first_rejection, "result %lld: %s", x->stats.read - 1,
                     why);
        sp_clear_error();
    }
    free(cfg);
    return 0;
}

/* --t4: the op, problem and GPU profile the file is about. */
static int t4_target(cli_cmd *cmd, accept_ctx *acc, sp_gpu_profile *gpu, t4_ctx *x, char **key)
{
    const char *op = cli_get(cmd, "op"), *shape = cli_get(cmd, "shape"), *g = cli_get(cmd, "gpu");
    if (!op || !shape || !g)
        return cli_usage_error(cmd->name, "--t4 needs --op, --shape and --gpu (a T4 file is one kernel's results for "
                               "one problem on one device)");
    sp_problem p;
    sptune_status st;
    if (!(x->t = template_for(acc, op)))
        return cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOT_FOUND, "no template '%s'", op));
    if ((st = sp_gpu_profile_named(g, gpu)) != SPTUNE_OK || (st = sp_problem_parse(x->t, shape, &p)) != SPTUNE_OK)
        return cli_error(cmd->name, st);
    if (!(*key = sp_problem_format(&p))) return cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory"));
    x->key = *key;
    x->profile = gpu->info.profile;
    return CLI_OK;
}

static int t4_export(cli_cmd *cmd, sp_db *db)
{
    accept_ctx acc = {{0}, 0};
    sp_gpu_profile gpu;
    t4_ctx x;
    char *key = NULL;
    memset(&x, 0, sizeof x);
    int rc = t4_target(cmd, &acc, &gpu, &x, &key);
    if (rc == CLI_OK) {
        printf("{\"schema_version\": \"1.0.0\", \"results\": [");
        sptune_status st = sp_db_foreach(db, t4_write, &x);
        printf("\n]}\n");
        if (st != SPTUNE_OK) rc = cli_error(cmd->name, st);
        else fprintf(stderr, "%d results of %s %s on %s\n", x.n, sp_template_name(x.t), x.key, x.profile);
    }
    free(key);
    accept_free(&acc);
    return rc;
}

/* Records the file's results (counted in *stats); the exit code of a failure, CLI_OK otherwise. */
static int t4_import(cli_cmd *cmd, sp_db *db, const char *file, accept_ctx *acc, sp_db_import_stats *stats)
{
    sp_gpu_profile gpu;
    t4_ctx x;
    char *key = NULL;
    memset(&x, 0, sizeof x);
    int rc = t4_target(cmd, acc, &gpu, &x, &key);
    if (rc != CLI_OK) return rc;
    /* another tool's measurements: their own "template version", so that sptune's own results of the
     * problem come first and tuning re-measures what is served */
    sp_sha256 h;
    uint8_t d[32];
    sp_sha256_init(&h);
    sp_sha256_field(&h, "T4 import", 9);
    sp_sha256_field(&h, sp_template_hash(x.t), strlen(sp_template_hash(x.t)));
    sp_sha256_final(&h, d);
    sp_hex(d, 32, x.hash);
    x.env = (sp_env){"(imported from a T4 file)", gpu.info.profile, gpu.info.cc_major, gpu.info.cc_minor,
                     gpu.info.sm_count, "unknown", "unknown", sptune_version()};
    x.db = db;
    x.acc = acc;
    sptune_status st = sp_t4_read(file, t4_take, &x);
    /* the file's own failure (unreadable, malformed) is the input's; a recording failure is not */
    rc = st != SPTUNE_OK && x.st == SPTUNE_OK ? cli_input_error(cmd->name, st)
         : x.st != SPTUNE_OK                  ? cli_error(cmd->name, x.st)
                                              : CLI_OK;
    *stats = x.stats;
    free(key);
    return rc;
}

/* added: rows the database did not hold before (counted, not assumed: a result already recorded for the same
 * environment, template, problem and configuration is replaced when newer and adds nothing). */
static int report(const char *what, const sp_db_import_stats *s, long long added)
{
    if (added < 0) added = 0;
    if (added > s->recorded) added = s->recorded;
    printf("%s: %lld results read, %lld new, %lld already recorded, %lld rejected\n", what, s->read,
           added, s->recorded - added, s->rejected);
    if (s->rejected) printf("  first rejected: %s\n", s->first_rejection);
    return CLI_OK;
}

/* Before anything is tuned here the default database does not exist, and the results shipped with sptune are
 * what the runtime serves: looking at "the database" then looks at those, gathered into a scratch database (tmp,
 * removed by the caller) so that show, verify and export work on them unchanged. */
static sptune_status open_shipped(const char *path, char *tmp, size_t len, sp_db **db)
{
    const char *dir = getenv("TMPDIR");
    snprintf(tmp, len, "%s/sptune-shipped-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        sptune_status st = sp_fail(SPTUNE_ERR_IO, "cannot create a scratch file in %s: %s",
                                   dir && *dir ? dir : "/tmp", strerror(errno));
        *tmp = 0;
        return st;
    }
    close(fd);
    sptune_status st = sp_db_open(tmp, 1, db);
    long long rows = 0;
    for (int i = 0; st == SPTUNE_OK && i < sp_shipped_data_count; i++) {
        const sp_embedded_file *f = &sp_shipped_data[i];
        sp_db_import_stats stats;
        FILE *in = fmemopen((void *)f->data, f->len, "r");
        if (!in) { st = sp_fail(SPTUNE_ERR_NOMEM, "cannot read the shipped %s", f->path); break; }
        st = sp_db_import_text(*db, in, f->path, NULL, NULL, &stats);
        fclose(in);
        rows += stats.recorded;
    }
    if (st != SPTUNE_OK) {
        sp_db_close(*db);
        *db = NULL;
        return st;
    }
    fprintf(stderr, "sptune db: no database at %s yet (nothing tuned on this machine); these are the %lld results "
            "shipped with sptune, which serve until then\n", path, rows);
    return SPTUNE_OK;
}

/* ---- the actions: read-only ones on an open database (label: what to call it), and the two that record ---- */

static int act_show(cli_cmd *cmd, sp_db *db, const char *label, int npos, char **pos)
{
    (void)label; (void)npos; (void)pos;
    const char *l = cli_get(cmd, "limit");
    char *end = NULL;
    long limit = l ? strtol(l, &end, 10) : 3;
    return l && (*end || limit < 1) ? cli_usage_error(cmd->name, "--limit wants a positive count, got '%s'", l)
                                    : show(cmd, db, (int)limit);
}

static int act_verify(cli_cmd *cmd, sp_db *db, const char *label, int npos, char **pos)
{
    (void)npos; (void)pos;
    return verify(cmd, db, label);
}

static int act_info(cli_cmd *cmd, sp_db *db, const char *label, int npos, char **pos)
{
    (void)npos; (void)pos;
    long long n = 0;
    sptune_status st = sp_db_count(db, &n);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    printf("%s: sptune database, schema %d, %lld results\n", label, sp_db_schema_version(db), n);
    return CLI_OK;
}

static int act_export(cli_cmd *cmd, sp_db *db, const char *label, int npos, char **pos)
{
    (void)label;
    const int to_file = npos == 2 && strcmp(pos[1], "-") != 0;
    if (cli_get(cmd, "t4")) {
        if (to_file && !freopen(pos[1], "w", stdout)) {
            fprintf(stderr, "sptune db: cannot write %s\n", pos[1]);
            return CLI_FAIL;
        }
        int rc = t4_export(cmd, db);
        if (fflush(stdout) != 0 && rc == CLI_OK)
            rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_IO, "cannot finish the output"));
        return rc;
    }
    FILE *out = stdout;
    long long rows = 0;
    if (to_file && !(out = fopen(pos[1], "w"))) {
        fprintf(stderr, "sptune db: cannot write %s\n", pos[1]);
        return CLI_FAIL;
    }
    sptune_status st = sp_db_export_text(db, out, &rows);
    if (out != stdout && fclose(out) != 0 && st == SPTUNE_OK) st = sp_fail(SPTUNE_ERR_IO, "cannot finish %s", pos[1]);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    if (out != stdout) fprintf(stderr, "%lld results written to %s\n", rows, pos[1]);
    return CLI_OK;
}

static int act_import(cli_cmd *cmd, sp_db *db, const char *file, accept_ctx *acc, sp_db_import_stats *stats)
{
    if (cli_get(cmd, "t4")) return t4_import(cmd, db, file, acc, stats);
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!in) return cli_input_error(cmd->name, sp_fail(SPTUNE_ERR_IO, "cannot read %s: %s", file, strerror(errno)));
    sptune_status st = sp_db_import_text(db, in, file, accept_result, acc, stats);
    if (in != stdin) fclose(in);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd->name, st);
}

static int act_merge(cli_cmd *cmd, sp_db *db, const char *file, accept_ctx *acc, sp_db_import_stats *stats)
{
    /* the other database is checked whole before its first row is offered: a failure with nothing read is the
     * file's (missing, not a database, damaged), one after is recording's */
    sptune_status st = sp_db_merge(db, file, accept_result, acc, stats);
    return st == SPTUNE_OK ? CLI_OK : stats->read == 0 ? cli_input_error(cmd->name, st) : cli_error(cmd->name, st);
}

typedef struct db_action {
    const char *name;
    int file;   /* a file argument: 0 none, 1 optional (export: else standard output), 2 required */
    int (*read)(cli_cmd *cmd, sp_db *db, const char *label, int npos, char **pos);
    int (*record)(cli_cmd *cmd, sp_db *db, const char *file, accept_ctx *acc, sp_db_import_stats *stats);
} db_action;

static const db_action actions[] = {
    {"info", 0, act_info, NULL},     {"show", 0, act_show, NULL},    {"verify", 0, act_verify, NULL},
    {"export", 1, act_export, NULL}, {"import", 2, NULL, act_import}, {"merge", 2, NULL, act_merge},
};

/* The read-only actions: the database opened read-only (where none exists and --db names none, the results shipped
 * with sptune, in a scratch copy). */
static int run_read(cli_cmd *cmd, const db_action *a, const char *path, int npos, char **pos)
{
    sp_db *db = NULL;
    char scratch[4096] = "";
    struct stat sb;
    sptune_status st;
    if (!cli_get(cmd, "db") && stat(path, &sb) != 0 && errno == ENOENT)
        st = open_shipped(path, scratch, sizeof scratch, &db);
    else
        st = sp_db_open_readonly(path, &db);
    if (st != SPTUNE_OK) {
        if (*scratch) unlink(scratch);
        return *scratch ? cli_error(cmd->name, st) : cli_input_error(cmd->name, st);
    }
    const int rc = a->read(cmd, db, *scratch ? "the results shipped with sptune" : path, npos, pos);
    sp_db_close(db);
    if (*scratch) unlink(scratch);
    return rc;
}

/* import and merge: what passes the local templates recorded, counted before and after; a database this created
 * and left empty (the input refused) removed with SQLite's files beside it. */
static int run_record(cli_cmd *cmd, const db_action *a, const char *path, const char *file)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (a->record == act_merge && realpath(file, ra) && realpath(path, rb) && strcmp(ra, rb) == 0)
        return cli_usage_error(cmd->name, "cannot merge %s into itself", file);
    struct stat existing;
    const int created = stat(path, &existing) != 0;
    sp_db *db = NULL;
    sptune_status st;
    if ((st = sp_db_open(path, 1, &db)) != SPTUNE_OK) return cli_error(cmd->name, st);
    accept_ctx acc = {{0}, 0};
    sp_db_import_stats stats;
    memset(&stats, 0, sizeof stats);
    long long before = 0, after = 0;
    if ((st = sp_db_count(db, &before)) != SPTUNE_OK) {
        sp_db_close(db);
        return cli_error(cmd->name, st);
    }
    int rc = a->record(cmd, db, file, &acc, &stats);
    if (rc == CLI_OK)
        rc = (st = sp_db_count(db, &after)) == SPTUNE_OK ? report(file, &stats, after - before)
                                                         : cli_error(cmd->name, st);
    accept_free(&acc);
    long long kept = -1;
    const int empty = rc != CLI_OK && created && sp_db_count(db, &kept) == SPTUNE_OK && kept == 0;
    sp_clear_error();
    sp_db_close(db);
    static const char *const files[] = {"", "-wal", "-shm"};   /* the database and SQLite's files beside it */
    for (size_t i = 0; empty && i < sizeof files / sizeof files[0]; i++) {
        char name[PATH_MAX + 8];
        snprintf(name, sizeof name, "%s%s", path, files[i]);
        unlink(name);
    }
    return rc;
}

int cmd_db(cli_cmd *cmd, int npos, char **pos)
{
    const db_action *a = NULL;
    for (size_t i = 0; i < sizeof actions / sizeof actions[0] && !a; i++)
        if (strcmp(pos[0], actions[i].name) == 0) a = &actions[i];
    if (!a) return cli_usage_error(cmd->name, "unknown action '%s' (info, show, verify, export, import, merge)", pos[0]);
    char buf[4096];
    const char *path;
    int rc = cli_db_path(cmd, buf, sizeof buf, &path);
    if (rc) return rc;
    if (a->file == 0 && npos > 1)
        return cli_usage_error(cmd->name, "%s takes no file (--db PATH names the database)", a->name);
    if (a->file == 2 && npos < 2) return cli_usage_error(cmd->name, "%s needs a file", a->name);
    if (a->file < 2 && npos > 2) return cli_usage_error(cmd->name, "too many arguments");
    return a->record ? run_record(cmd, a, path, pos[1]) : run_read(cmd, a, path, npos, pos);
}

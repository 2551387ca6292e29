#include "sp_db_text.h"
#include "sp_status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { F_GPU_NAME, F_GPU_PROFILE, F_CC_MAJOR, F_CC_MINOR, F_SM_COUNT, F_DRIVER, F_NVRTC, F_SPTUNE, F_TEMPLATE,
       F_HASH, F_PROBLEM, F_CONFIG, F_OUTCOME, F_RUNS, F_MEDIAN, F_MIN, F_MAX, F_P10, F_P90, F_BASELINE,
       F_REL_ERROR, F_METHOD, F_REGISTERS, F_SMEM, F_SPILL, F_RECORDED, F_DETAIL, F_ENERGY, F_BASE_ENERGY, F_COUNT };
/* Files written before the energy columns end at detail: read as unmeasured. */
#define F_COUNT_V1 F_ENERGY

static const char *const columns[F_COUNT] = {
    "gpu_name", "gpu_profile", "cc_major", "cc_minor", "sm_count", "driver_version", "nvrtc_version",
    "sptune_version", "template", "template_hash", "problem", "config", "outcome", "runs", "median_ms",
    "min_ms", "max_ms", "p10_ms", "p90_ms", "baseline_ms", "rel_error", "method", "registers",
    "smem_bytes", "spill_bytes", "recorded_at", "detail", "energy_j", "baseline_energy_j"};

#define MAX_LINE 65536
#define MAX_FIELD 4096

static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '\\': fputs("\\\\", f); break;
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        default: fputc(*s, f);
        }
    }
}

static void put_num(FILE *f, double v) { if (v < 0 || !isfinite(v)) fputc('-', f); else fprintf(f, "%.9g", v); }
static void put_int(FILE *f, long long v) { if (v < 0) fputc('-', f); else fprintf(f, "%lld", v); }

typedef struct export_ctx { FILE *out; long long rows; } export_ctx;

static int export_row(const sp_result *r, void *ud)
{
    export_ctx *x = ud;
    FILE *f = x->out;
    const sp_env *e = r->env;
    put_escaped(f, e->gpu_name); fputc('\t', f); put_escaped(f, e->gpu_profile); fputc('\t', f);
    fprintf(f, "%d\t%d\t%d\t", e->cc_major, e->cc_minor, e->sm_count);
    put_escaped(f, e->driver_version); fputc('\t', f); put_escaped(f, e->nvrtc_version); fputc('\t', f);
    put_escaped(f, e->sptune_version); fputc('\t', f); put_escaped(f, r->template_name); fputc('\t', f);
    put_escaped(f, r->template_hash); fputc('\t', f); put_escaped(f, r->problem_key); fputc('\t', f);
    put_escaped(f, r->config); fputc('\t', f); fputs(sp_outcome_name(r->outcome), f); fputc('\t', f);
    const sp_timing *t = &r->timing;
    int ok = r->outcome == SP_OUTCOME_OK;
    put_int(f, ok ? t->runs : -1); fputc('\t', f);
    put_num(f, ok ? t->median_ms : -1); fputc('\t', f); put_num(f, ok ? t->min_ms : -1); fputc('\t', f);
    put_num(f, ok ? t->max_ms : -1); fputc('\t', f); put_num(f, ok ? t->p10_ms : -1); fputc('\t', f);
    put_num(f, ok ? t->p90_ms : -1); fputc('\t', f); put_num(f, t->baseline_ms); fputc('\t', f);
    put_num(f, t->rel_error); fputc('\t', f); put_escaped(f, t->method); fputc('\t', f);
    put_int(f, r->registers); fputc('\t', f); put_int(f, r->smem_bytes); fputc('\t', f);
    put_int(f, r->spill_bytes); fputc('\t', f); put_int(f, r->recorded_at); fputc('\t', f);
    put_escaped(f, r->detail); fputc('\t', f);
    put_num(f, ok && t->energy_j > 0 ? t->energy_j : -1); fputc('\t', f);
    put_num(f, ok && t->baseline_energy_j > 0 ? t->baseline_energy_j : -1); fputc('\n', f);
    x->rows++;
    return ferror(f) != 0;
}

sptune_status sp_db_export_text(sp_db *db, FILE *out, long long *rows)
{
    export_ctx x = {out, 0};
    fprintf(out, "%s\n", SP_DB_TEXT_MAGIC);
    for (int i = 0; i < F_COUNT; i++) fprintf(out, "%s%s", i ? "\t" : "", columns[i]);
    fputc('\n', out);
    sptune_status st = sp_db_foreach(db, export_row, &x);
    if (st != SPTUNE_OK) return st;
    if (fflush(out) != 0 || ferror(out)) return sp_fail(SPTUNE_ERR_IO, "writing the export failed: %s", strerror(errno));
    if (rows) *rows = x.rows;
    return SPTUNE_OK;
}

/* One parsed line: fields unescaped in place. */
typedef struct record {
    char *f[F_COUNT];
    sp_env env;
    sp_result r;
} record;

static int unescape(char *s)
{
    char *w = s;
    for (char *p = s; *p; p++) {
        if (*p != '\\') { *w++ = *p; continue; }
        p++;
        switch (*p) {
        case '\\': *w++ = '\\'; break;
        case 't': *w++ = '\t'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        default: return 0;
        }
    }
    *w = 0;
    return 1;
}

static int parse_double(const char *s, double *v, int optional)
{
    if (optional && strcmp(s, "-") == 0) { *v = -1; return 1; }
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *s && !*end && !errno && isfinite(*v) && *v >= 0;
}

static int parse_ll(const char *s, long long *v, int optional, long long max)
{
    if (optional && strcmp(s, "-") == 0) { *v = -1; return 1; }
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *s && !*end && !errno && *v >= 0 && *v <= max;
}

/* Splits and checks one line; the reason in why when it is not a record. */
static int parse_line(char *line, record *rec, char *why, size_t len)
{
    memset(rec, 0, sizeof *rec);
    int n = 0;
    for (char *p = line;; ) {
        if (n == F_COUNT) { snprintf(why, len, "more than %d fields", F_COUNT); return 0; }
        rec->f[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = 0;
        p = tab + 1;
    }
    if (n != F_COUNT && n != F_COUNT_V1) { snprintf(why, len, "%d fields, expected %d", n, F_COUNT); return 0; }
    for (int i = 0; i < n; i++) {
        if (strlen(rec->f[i]) > MAX_FIELD) { snprintf(why, len, "field %s is too long", columns[i]); return 0; }
        if (!unescape(rec->f[i])) { snprintf(why, len, "field %s has a bad escape", columns[i]); return 0; }
    }
    for (; n < F_COUNT; n++) rec->f[n] = (char *)"-";   /* an older file: no energy (read, never written) */
    static const int required[] = {F_GPU_NAME, F_GPU_PROFILE, F_DRIVER, F_NVRTC, F_SPTUNE, F_TEMPLATE, F_HASH, F_PROBLEM, F_CONFIG};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!rec->f[required[i]][0]) { snprintf(why, len, "field %s is empty", columns[required[i]]); return 0; }
    long long cc_major, cc_minor, sm, runs, regs, smem, spill, when;
    double med, mn, mx, p10, p90, base, rel, joules, base_joules;
    sp_outcome out;
    if (!parse_ll(rec->f[F_CC_MAJOR], &cc_major, 0, 99) || !parse_ll(rec->f[F_CC_MINOR], &cc_minor, 0, 9) ||
        !parse_ll(rec->f[F_SM_COUNT], &sm, 0, 100000)) { snprintf(why, len, "bad GPU numbers"); return 0; }
    if (!sp_outcome_parse(rec->f[F_OUTCOME], &out)) { snprintf(why, len, "unknown outcome '%s'", rec->f[F_OUTCOME]); return 0; }
    int ok = out == SP_OUTCOME_OK;
    if (!parse_ll(rec->f[F_RUNS], &runs, !ok, 1000000000) || !parse_double(rec->f[F_MEDIAN], &med, !ok) ||
        !parse_double(rec->f[F_MIN], &mn, !ok) || !parse_double(rec->f[F_MAX], &mx, !ok) ||
        !parse_double(rec->f[F_P10], &p10, !ok) || !parse_double(rec->f[F_P90], &p90, !ok) ||
        !parse_double(rec->f[F_BASELINE], &base, 1) || !parse_double(rec->f[F_REL_ERROR], &rel, 1) ||
        !parse_ll(rec->f[F_REGISTERS], &regs, 1, 65536) || !parse_ll(rec->f[F_SMEM], &smem, 1, 1 << 30) ||
        !parse_ll(rec->f[F_SPILL], &spill, 1, 1 << 30) || !parse_ll(rec->f[F_RECORDED], &when, 0, 1LL << 40) ||
        !parse_double(rec->f[F_ENERGY], &joules, 1) || !parse_double(rec->f[F_BASE_ENERGY], &base_joules, 1)) {
        snprintf(why, len, "bad timing or resource numbers");
        return 0;
    }
    if (ok && (runs < 1 || mn > med || med > mx)) { snprintf(why, len, "inconsistent timing"); return 0; }
    rec->env = (sp_env){rec->f[F_GPU_NAME], rec->f[F_GPU_PROFILE], (int)cc_major, (int)cc_minor, (int)sm,
                        rec->f[F_DRIVER], rec->f[F_NVRTC], rec->f[F_SPTUNE]};
    rec->r = (sp_result){.env = &rec->env, .template_name = rec->f[F_TEMPLATE], .template_hash = rec->f[F_HASH],
                         .problem_key = rec->f[F_PROBLEM], .config = rec->f[F_CONFIG], .outcome = out,
                         .detail = rec->f[F_DETAIL][0] ? rec->f[F_DETAIL] : NULL,
                         .registers = (int)regs, .smem_bytes = (int)smem, .spill_bytes = (int)spill,
                         .recorded_at = when};
    sp_timing *t = &rec->r.timing;
    t->runs = ok ? (int)runs : 0;
    t->median_ms = ok ? med : 0; t->min_ms = ok ? mn : 0; t->max_ms = ok ? mx : 0;
    t->p10_ms = ok ? p10 : 0; t->p90_ms = ok ? p90 : 0;
    t->baseline_ms = base;
    t->rel_error = rel;
    t->energy_j = ok ? joules : -1;
    t->baseline_energy_j = ok ? base_joules : -1;
    t->method = rec->f[F_METHOD][0] ? rec->f[F_METHOD] : NULL;
    return 1;
}

static void offer(sp_db *db, const sp_result *r, sp_db_accept_fn accept, void *ud, const char *where,
                  sp_db_import_stats *stats, sptune_status *st)
{
    char why[400] = "";
    if (accept && !accept(r, ud, why, sizeof why)) {
        if (!stats->rejected++) snprintf(stats->first_rejection, sizeof stats->first_rejection, "%s: %s", where, why);
        return;
    }
    if ((*st = sp_db_record(db, r)) == SPTUNE_OK) stats->recorded++;
}

/* Reads the whole file, checking every line; each well-formed record goes to fn (when set) with
 * "name:line". fn returns non-zero to stop. A malformed file is SPTUNE_ERR_INVALID naming the line. */
typedef int (*row_fn)(const sp_result *r, const char *where, void *ud);

static sptune_status walk(FILE *in, const char *name, row_fn fn, void *ud)
{
    char *line = malloc(MAX_LINE + 2);
    record *rec = malloc(sizeof *rec);
    sptune_status st = SPTUNE_OK;
    if (!line || !rec) { free(line); free(rec); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    rewind(in);
    long long lineno = 0;
    while (st == SPTUNE_OK && fgets(line, MAX_LINE + 2, in)) {
        lineno++;
        size_t n = strlen(line);
        if (n > MAX_LINE || (n > 0 && line[n - 1] != '\n' && !feof(in))) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s:%lld: line longer than %d bytes; nothing imported", name, lineno, MAX_LINE);
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (lineno == 1) {
            if (strcmp(line, SP_DB_TEXT_MAGIC) != 0 && strcmp(line, SP_DB_TEXT_MAGIC_V1) != 0)
                st = sp_fail(SPTUNE_ERR_INVALID, "%s: not an sptune results file (first line must be '%s' or '%s'); "
                             "nothing imported", name, SP_DB_TEXT_MAGIC, SP_DB_TEXT_MAGIC_V1);
            continue;
        }
        if (lineno == 2 || n == 0) continue; /* the column names; blank lines */
        char why[256];
        if (!parse_line(line, rec, why, sizeof why)) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s:%lld: %s; nothing imported", name, lineno, why);
            break;
        }
        if (!fn) continue;
        char where[300];
        snprintf(where, sizeof where, "%s:%lld", name, lineno);
        if (fn(&rec->r, where, ud)) break;
    }
    if (st == SPTUNE_OK && ferror(in)) st = sp_fail(SPTUNE_ERR_IO, "%s: read error", name);
    if (st == SPTUNE_OK && lineno == 0) st = sp_fail(SPTUNE_ERR_INVALID, "%s is empty; nothing imported", name);
    free(line);
    free(rec);
    return st;
}

typedef struct import_ctx {
    sp_db *db;
    sp_db_accept_fn accept;
    void *ud;
    sp_db_import_stats *stats;
    sptune_status st;
} import_ctx;

static int import_row(const sp_result *r, const char *where, void *ud)
{
    import_ctx *x = ud;
    x->stats->read++;
    offer(x->db, r, x->accept, x->ud, where, x->stats, &x->st);
    return x->st != SPTUNE_OK;
}

/* A stream that cannot be rewound (a pipe) copied into a temporary file, which *out then is. */
static sptune_status spool(FILE *in, const char *name, FILE **out)
{
    FILE *tmp = tmpfile();
    if (!tmp) return sp_fail(SPTUNE_ERR_IO, "%s: no temporary file to hold it: %s", name, strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, tmp) != n) break;
    if (ferror(in) || ferror(tmp)) {
        fclose(tmp);
        return sp_fail(SPTUNE_ERR_IO, "%s: read error; nothing imported", name);
    }
    *out = tmp;
    return SPTUNE_OK;
}

sptune_status sp_db_import_text(sp_db *db, FILE *in, const char *name, sp_db_accept_fn accept, void *ud,
                                sp_db_import_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    /* Two passes: the whole file must be well formed before the first line is recorded. */
    FILE *tmp = NULL;
    sptune_status st = SPTUNE_OK;
    if (fseek(in, 0, SEEK_SET) != 0 && (st = spool(in, name, &tmp)) != SPTUNE_OK) return st;
    if (tmp) in = tmp;
    st = walk(in, name, NULL, NULL);
    import_ctx x = {db, accept, ud, stats, SPTUNE_OK};
    if (st == SPTUNE_OK) st = walk(in, name, import_row, &x);
    if (tmp) fclose(tmp);
    return st != SPTUNE_OK ? st : x.st;
}

typedef struct foreach_ctx { sp_db_row_cb cb; void *ud; } foreach_ctx;

static int foreach_row(const sp_result *r, const char *where, void *ud)
{
    (void)where;
    foreach_ctx *x = ud;
    return x->cb(r, x->ud);
}

sptune_status sp_db_text_foreach(FILE *in, const char *name, sp_db_row_cb cb, void *ud)
{
    foreach_ctx x = {cb, ud};
    return walk(in, name, foreach_row, &x);
}


typedef struct merge_ctx {
    sp_db *db;
    sp_db_accept_fn accept;
    void *ud;
    const char *name;
    sp_db_import_stats *stats;
    sptune_status st;
} merge_ctx;

static int merge_row(const sp_result *r, void *ud)
{
    merge_ctx *m = ud;
    m->stats->read++;
    char where[300];
    snprintf(where, sizeof where, "%s row %lld", m->name, m->stats->read);
    offer(m->db, r, m->accept, m->ud, where, m->stats, &m->st);
    return m->st != SPTUNE_OK;
}

static int read_only_row(const sp_result *r, void *ud)
{
    (void)r;
    (void)ud;
    return 0;
}

sptune_status sp_db_merge(sp_db *db, const char *other_path, sp_db_accept_fn accept, void *ud,
                          sp_db_import_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    sp_db *other;
    sptune_status st = sp_db_open_readonly(other_path, &other);
    if (st != SPTUNE_OK) return st;
    /* refused whole: the file checked, then every row read once before any is taken */
    if ((st = sp_db_quick_check(other)) != SPTUNE_OK || (st = sp_db_foreach(other, read_only_row, NULL)) != SPTUNE_OK) {
        sp_db_close(other);
        return st;
    }
    merge_ctx m = {db, accept, ud, other_path, stats, SPTUNE_OK};
    st = sp_db_foreach(other, merge_row, &m);
    sp_db_close(other);
    return st != SPTUNE_OK ? st : m.st;
}

/* Which recorded result serves a request (sp_api_lookup.h): the candidates of the user's database and the shipped
 * results, ranked by the distance of their problem to the wanted one, this GPU before its architecture's others, the
 * current template version before earlier ones; the first whose configuration fits the problem is served. */
#include "sp_api_across.h"
#include "sp_api_lookup.h"
#include "sp_db.h"
#include "sp_db_text.h"
#include "sp_shipped.h"
#include "sp_gpu.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sptune.h"
#include "sptune_kernel_object.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One recorded candidate: a problem of the op on this GPU profile with its fastest configuration. */
typedef struct candidate {
    char *config, *problem;
    double distance;      /* sum over dimensions of |log2(recorded / wanted)| */
    int other_gpu;        /* recorded on another GPU profile of the same architecture */
    int shipped;          /* from the results shipped with sptune, not the user's database */
    int other_version;    /* recorded with another version of the template */
    int shadowed;         /* another version's, and the current version has a result for the problem */
    char gpu[32];
    double median_ms, baseline_ms;
    /* measured on several kinds of data (sp_api_across.h): config is the best worst case's, the times those of its
       worst data (whose key is worst), own the fastest on the problem's own data, across each kind's speed-up;
       NULL otherwise, and across names the one kind of data an op with kinds was measured on ("" none) */
    char *own, *worst;
    char across[256];
    int own_data;         /* config and times are those measured on the application's own tensors (across: which) */
    sp_problem p;         /* problem, parsed */
} candidate;

sptune_status sp_api_fixed_parse(const sp_template *t, const char *text, sp_fixed_params *f)
{
    f->n = 0;
    if (!text || !*text) return SPTUNE_OK;
    char item[256];
    for (const char *s = text; *s;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len >= sizeof item) return sp_fail(SPTUNE_ERR_INVALID, "fixed parameters: '%.40s...' is too long", s);
        memcpy(item, s, len);
        item[len] = 0;
        const char *eq = strchr(item, '=');
        sp_config one;
        sptune_status st = eq ? sp_config_parse(t, item, &one) : SPTUNE_ERR_INVALID;
        if (st != SPTUNE_OK) return sp_wrap(eq ? st : sp_fail(st, "'%s' is not name=value", item), "fixed parameters");
        for (int i = 0; i < sp_template_nparams(t); i++)
            if (strncmp(sp_template_param(t, i)->name, item, (size_t)(eq - item)) == 0 &&
                sp_template_param(t, i)->name[eq - item] == 0 && f->n < SP_MAX_PARAMS) {
                f->param[f->n] = i;
                f->value[f->n++] = one.idx[i];
            }
        if (!comma) break;
        s = comma + 1;
    }
    return SPTUNE_OK;
}

/* Whether c takes the fixed parameters; one whose values cost the same (same_cost: a data format) is given the
 * fixed value instead, since a result measured in one format stands for the others. */
static int takes_fixed(const sp_template *t, sp_config *c, const sp_fixed_params *f)
{
    for (int i = 0; i < f->n; i++) {
        if (c->idx[f->param[i]] == f->value[i]) continue;
        if (!sp_template_param(t, f->param[i])->same_cost) return 0;
        c->idx[f->param[i]] = f->value[i];
    }
    return 1;
}

int sp_api_fixed_has(const sp_fixed_params *f, int param)
{
    for (int i = 0; i < f->n; i++)
        if (f->param[i] == param) return 1;
    return 0;
}

typedef struct scan {
    const char *op, *profile, *arch, *hash;
    const sp_template *t;
    const sp_problem *want;
    candidate *c;
    size_t n, cap;
    int oom;
    int shipped;          /* the rows visited now are the shipped ones */
    const sp_fixed_params *fixed; /* results whose configuration does not take these are passed over */
    char last_profile[32];/* another GPU profile seen last, and whether it shares the architecture */
    int last_same_arch;
    sp_across *across;    /* every result, by kind of data, where the op's data has kinds (NULL otherwise) */
} scan;

static double distance(const sp_template *t, const sp_problem *a, const sp_problem *b)
{
    double d = 0;
    for (int i = 0; i < a->n && i < b->n; i++) {
        if (strcmp(a->name[i], b->name[i]) != 0) return INFINITY;
        if (a->v[i] == b->v[i]) continue; /* equal, zeros included (a flag such as fp16=0) */
        if (sp_template_dim_category(t, i)) { /* another kind of data: one step (as far as a size twice as large) */
            if (!sp_api_kinds_alike(t, i, a->v[i], b->v[i])) d += 1;
            continue;
        }
        if (sp_template_dim_default(t, i, NULL)) {
            /* a dimension with a default describes the data (a fraction that may be 0): near, not apart */
            if (!(a->v[i] >= 0) || !(b->v[i] >= 0)) return INFINITY;
            d += fabs(log2((1 + a->v[i]) / (1 + b->v[i])));
            continue;
        }
        if (!(a->v[i] > 0) || !(b->v[i] > 0)) return INFINITY;
        d += fabs(log2(a->v[i] / b->v[i]));
    }
    return a->n == b->n ? d : INFINITY;
}

/* Which of two results of one problem and GPU profile ran faster: by the speed-up over the baseline
 * timed in the same run when both have one (comparable between machines and runs), else by time.
 * < 0 when x is faster. */
static int faster(const candidate *x, const candidate *y)
{
    /* a total order: results with a time and a baseline, then with a time only, then the rest */
    int kx = x->median_ms > 0 ? (x->baseline_ms > 0 ? 0 : 1) : 2;
    int ky = y->median_ms > 0 ? (y->baseline_ms > 0 ? 0 : 1) : 2;
    if (kx != ky) return kx - ky;
    if (kx == 0) {
        double sx = x->baseline_ms / x->median_ms, sy = y->baseline_ms / y->median_ms;
        return (sx < sy) - (sx > sy);
    }
    return kx == 1 ? (x->median_ms > y->median_ms) - (x->median_ms < y->median_ms) : 0;
}

/* qsort order, best first: this GPU's results before those of its architecture's other GPUs; then
 * the nearest problem; then the current template version's results before an earlier version's when
 * the current one has any for that problem (a stale result is re-measured by tuning, which measures the
 * served configuration first, and then gives way); then the fastest, whoever measured it (never worse:
 * a short tuning run that measured a slow configuration does not displace a faster recorded one); at
 * equal speed the current template version, then the user's results before the shipped ones. */
static int by_preference(const void *pa, const void *pb)
{
    const candidate *x = pa, *y = pb;
    if (x->other_gpu != y->other_gpu) return x->other_gpu - y->other_gpu;
    if (x->distance != y->distance) return x->distance < y->distance ? -1 : 1;
    if (x->shadowed != y->shadowed) return x->shadowed - y->shadowed;
    int f = faster(x, y);
    if (f) return f;
    if (x->other_version != y->other_version) return x->other_version - y->other_version;
    return x->shipped - y->shipped;
}

/* Keeps, per (problem, GPU profile, template version, source), the fastest OK result of the op
 * on this GPU or another of its architecture. */
static int visit(const sp_result *r, void *ud)
{
    scan *s = ud;
    if (r->outcome != SP_OUTCOME_OK || strcmp(r->template_name, s->op) != 0) return 0;
    if (s->fixed->n > 0) {
        sp_config c;
        int ok = sp_config_parse(s->t, r->config, &c) == SPTUNE_OK && takes_fixed(s->t, &c, s->fixed);
        sp_clear_error();
        if (!ok) return 0;
    }
    int other_gpu = strcmp(r->env->gpu_profile, s->profile) != 0;
    if (other_gpu) {
        /* the other profile's architecture, looked up once per run of rows of that profile */
        if (strcmp(s->last_profile, r->env->gpu_profile) != 0) {
            sp_gpu_profile g;
            s->last_same_arch = sp_gpu_profile_named(r->env->gpu_profile, &g) == SPTUNE_OK &&
                                strcmp(g.info.arch, s->arch) == 0;
            sp_clear_error();
            snprintf(s->last_profile, sizeof s->last_profile, "%s", r->env->gpu_profile);
        }
        if (!s->last_same_arch) return 0;
    }
    candidate c;
    memset(&c, 0, sizeof c);
    c.other_gpu = other_gpu;
    c.shipped = s->shipped;
    c.other_version = strcmp(r->template_hash, s->hash) != 0;
    c.median_ms = r->timing.median_ms;
    c.baseline_ms = r->timing.baseline_ms;
    snprintf(c.gpu, sizeof c.gpu, "%s", r->env->gpu_profile);
    /* the key parsed: for every row where the op's data has kinds (each row is a measurement of its kind), else
       only for a problem not kept yet; -1 not yet, 0 another version's dimensions */
    sp_problem p;
    int parsed = -1;
    if (s->across) {
        if (!(parsed = sp_problem_parse(s->t, r->problem_key, &p) == SPTUNE_OK)) sp_clear_error();
        else if (sp_across_add(s->across, &p, r->problem_key, c.gpu, c.other_version, r->config, c.median_ms,
                               c.baseline_ms) != SPTUNE_OK) { s->oom = 1; return 1; }
    }
    /* A problem already kept (most rows: one per configuration tried) needs no parsing. */
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->c[i].problem, r->problem_key) == 0 && s->c[i].other_version == c.other_version &&
            s->c[i].shipped == c.shipped && strcmp(s->c[i].gpu, c.gpu) == 0) {
            /* keep only the fastest configuration of that problem */
            if (faster(&c, &s->c[i]) < 0) {
                char *cfg = strdup(r->config);
                if (!cfg) { s->oom = 1; return 1; }
                free(s->c[i].config);
                s->c[i].config = cfg;
                s->c[i].median_ms = c.median_ms;
                s->c[i].baseline_ms = c.baseline_ms;
            }
            return 0;
        }
    if (parsed < 0 && !(parsed = sp_problem_parse(s->t, r->problem_key, &p) == SPTUNE_OK)) sp_clear_error();
    if (!parsed) return 0;   /* another version's dimensions */
    c.p = p;
    c.distance = distance(s->t, &p, s->want);
    if (!isfinite(c.distance)) return 0;
    /* A key written before the op had some of its dimensions (data dimensions with defaults added
     * later) was measured on other data than the defaults say: near, never the same problem, unless the
     * dimension's default is that earlier data (as_before). */
    if (sp_api_key_predates(s->t, r->problem_key)) c.distance += 1.0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        candidate *m = realloc(s->c, cap * sizeof *m);
        if (!m) { s->oom = 1; return 1; }
        s->c = m;
        s->cap = cap;
    }
    c.config = strdup(r->config);
    c.problem = strdup(r->problem_key);
    if (!c.config || !c.problem) { free(c.config); free(c.problem); s->oom = 1; return 1; }
    s->c[s->n++] = c;
    return 0;
}

/* The results shipped with sptune (db/data/<gpu>.tsv, embedded) into s. */
static sptune_status scan_shipped(scan *s)
{
    for (int i = 0; i < sp_shipped_data_count; i++) {
        const sp_embedded_file *f = &sp_shipped_data[i];
        FILE *in = fmemopen((void *)f->data, f->len, "r");
        if (!in) return sp_fail(SPTUNE_ERR_NOMEM, "cannot read the shipped %s", f->path);
        sptune_status st = sp_db_text_foreach(in, f->path, visit, s);
        fclose(in);
        if (st != SPTUNE_OK) return st;
    }
    return SPTUNE_OK;
}

/* Where a candidate's problem was measured on several kinds of data (the tuner's generators), its configuration
 * becomes the one of the best worst case over them and its times those of that worst case, so that the ranking
 * and what the kernel says it expects hold on data like none of them (a user's). */
static sptune_status pick_across(scan *s)
{
    for (size_t i = 0; s->across && i < s->n; i++) {
        candidate *c = &s->c[i];
        sp_across_pick pk;
        if (!sp_across_choose(s->across, &c->p, c->problem, c->gpu, c->other_version, &pk)) {
            if (pk.kinds == 1) snprintf(c->across, sizeof c->across, "%.200s", pk.note);   /* one kind alone */
            continue;
        }
        char *config = strdup(pk.config), *worst = strdup(pk.worst_key);
        if (!config || !worst) { free(config); free(worst); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
        c->own = c->config;
        c->config = config;
        c->worst = worst;
        c->median_ms = pk.median_ms;
        c->baseline_ms = pk.baseline_ms;
        c->own_data = pk.own;
        if (pk.own) snprintf(c->across, sizeof c->across, "%.250s", pk.note);
        else snprintf(c->across, sizeof c->across, "%d kinds of data: %.220s", pk.kinds, pk.note);
    }
    return SPTUNE_OK;
}

/* The recorded candidates for want, best first (the user's database, then the shipped results; an earlier
 * version's result shadowed where the current version has the problem), into *s (free with ranked_free). none: why
 * no database was read ("" when one was), db_path the one read. */
static sptune_status ranked(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *want,
                            const sptune_kernel_request *req, const sp_fixed_params *fixed, scan *out, char *none,
                            size_t nlen, char *path, size_t plen)
{
    const char *db_path = req->db_path;
    sptune_status st = SPTUNE_OK;
    scan s = {sp_template_name(t), gpu->info.profile, gpu->info.arch, sp_template_hash(t), t, want, NULL, 0, 0, 0, 0,
              fixed, "", 0, NULL};
    *none = 0;
    st = sp_across_new(t, &s.across);
    *out = s;   /* empty until the scan ends; the caller's ranked_free frees it whatever returns */
    if (st != SPTUNE_OK) return st;
    snprintf(path, plen, "%s", db_path ? db_path : "");
    if (db_path && !*db_path) {
        snprintf(none, nlen, "no database of the user's");
    } else {
        if (!db_path) {
            if ((st = sptune_default_db_path(path, plen)) != SPTUNE_OK) return st;
            db_path = path;
        }
        struct stat sb;
        if (stat(db_path, &sb) != 0) {
            snprintf(none, nlen, "no database at %.300s", db_path);
        } else {
            sp_db *db;
            if ((st = sp_db_open_readonly(db_path, &db)) != SPTUNE_OK) return st;
            st = sp_db_foreach(db, visit, &s);
            sp_db_close(db);
        }
    }
    s.shipped = 1;
    if (st == SPTUNE_OK && !req->ignore_shipped) st = scan_shipped(&s);
    if (st == SPTUNE_OK && s.oom) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    /* An earlier version's result gives way where the current version has one for the problem. */
    for (size_t i = 0; i < s.n; i++)
        for (size_t j = 0; j < s.n && s.c[i].other_version && !s.c[i].shadowed; j++)
            s.c[i].shadowed = !s.c[j].other_version && strcmp(s.c[j].problem, s.c[i].problem) == 0 &&
                              strcmp(s.c[j].gpu, s.c[i].gpu) == 0;
    if (st == SPTUNE_OK) st = pick_across(&s);
    if (s.n > 1) qsort(s.c, s.n, sizeof *s.c, by_preference);
    *out = s;
    return st;
}

static void ranked_free(scan *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->c[i].config);
        free(s->c[i].problem);
        free(s->c[i].own);
        free(s->c[i].worst);
    }
    free(s->c);
    sp_across_free(s->across);
    s->across = NULL;
    s->c = NULL;
    s->n = 0;
}

/* Whether candidate c's configuration (into cfg) takes the fixed parameters and is valid for want. */
static int usable(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *want, const sp_fixed_params *fixed,
                  const candidate *c, sp_config *cfg, sptune_status *st)
{
    int ok = 0;
    if (sp_config_parse(t, c->config, cfg) == SPTUNE_OK && takes_fixed(t, cfg, fixed)) {
        *st = sp_template_check(t, cfg, gpu, want, &ok, NULL);
        /* measured in another data format than the problem's (bf16 for an fp16 problem): the same configuration
         * in the problem's format, a same_cost parameter at a value the problem accepts */
        for (int p = 0; !ok && *st == SPTUNE_OK && p < sp_template_nparams(t); p++) {
            if (!sp_template_param(t, p)->same_cost || sp_api_fixed_has(fixed, p)) continue;
            const int was = cfg->idx[p];
            for (int v = 0; !ok && *st == SPTUNE_OK && v < sp_template_param(t, p)->nvalues; v++)
                if (v != was) {
                    cfg->idx[p] = v;
                    *st = sp_template_check(t, cfg, gpu, want, &ok, NULL);
                }
            if (!ok) cfg->idx[p] = was;
        }
    }
    sp_clear_error();
    return ok;
}

/* The best recorded configuration valid for the wanted problem, if any (*found). */
sptune_status sp_api_lookup(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *want,
                            const sptune_kernel_request *req, const sp_fixed_params *fixed, sptune_kernel *k,
                            sp_config *cfg, int *found)
{
    char path[4096], none[512];
    scan s;
    *found = 0;
    sptune_status st = ranked(t, gpu, want, req, fixed, &s, none, sizeof none, path, sizeof path);
    const char *db_path = path;
    /* Best first; the first whose configuration the current template accepts for this problem. */
    for (size_t i = 0; st == SPTUNE_OK && !*found && i < s.n; i++) {
        const candidate *c = &s.c[i];
        if (usable(t, gpu, want, fixed, c, cfg, &st)) {
            *found = 1;
            k->origin = c->distance == 0 && !c->other_gpu ? SPTUNE_ORIGIN_EXACT
                        : c->other_gpu ? SPTUNE_ORIGIN_SAME_ARCH : SPTUNE_ORIGIN_NEAREST;
            char speed[64] = "";
            if (c->baseline_ms > 0) snprintf(speed, sizeof speed, " (%.2fx the baseline)", c->baseline_ms / c->median_ms);
            k->ms = c->median_ms;
            k->baseline_ms = c->baseline_ms > 0 ? c->baseline_ms : -1;
            /* a time measured at a token count over 4x from the one asked says nothing of it */
            double had = 0, asked = 0;
            const char *tok = sp_template_tokens(t);
            if (tok && sp_problem_get(&c->p, tok, &had) && sp_problem_get(want, tok, &asked) && had > 0 && asked > 0 &&
                fmax(had / asked, asked / had) > 4) {
                k->ms = k->baseline_ms = -1;
                snprintf(speed + strlen(speed), sizeof speed - strlen(speed), "; no time expected at %s=%.0f", tok, asked);
            }
            snprintf(k->recorded, sizeof k->recorded, "%s", c->worst ? c->worst : c->problem);
            snprintf(k->recorded_gpu, sizeof k->recorded_gpu, "%s", c->gpu);
            /* the parameters served otherwise than measured (a same_cost one: the problem's data format) */
            char as[128] = "";
            sp_config measured;
            if (sp_config_parse(t, c->config, &measured) == SPTUNE_OK)
                for (int p = 0, n = 0; p < sp_template_nparams(t); p++)
                    if (measured.idx[p] != cfg->idx[p] && n < (int)sizeof as - 1)
                        n += snprintf(as + n, sizeof as - (size_t)n, "%s%s=%s", n ? "," : ", measured with ",
                                      sp_template_param(t, p)->name,
                                      sp_template_param(t, p)->values[measured.idx[p]].text);
            sp_clear_error();
            char across[640] = "", alone[320] = "";
            if (c->own_data)
                snprintf(across, sizeof across, ", %.256s", c->across);
            else if (c->worst)
                snprintf(across, sizeof across, " on its worst data (%.200s) of %.256s", c->worst, c->across);
            else if (c->across[0])
                snprintf(alone, sizeof alone, "; measured on one kind of data alone (%.200s): other data may run it "
                         "slower (sptune_kernel_autotune times it on yours)", c->across);
            snprintf(k->detail, sizeof k->detail, "tuned for %s on %s at %.4f ms%s%s%s%s%s%s%s", c->problem, c->gpu,
                     c->median_ms, speed, across, as, c->other_gpu ? ", a GPU of the same architecture" : "",
                     c->other_version ? ", with an earlier version of the template (stale: not re-measured)" : "",
                     c->shipped ? " (results shipped with sptune)" : "", alone);
        }
    }
    ranked_free(&s);
    if (st == SPTUNE_OK && !*found)
        snprintf(k->detail, sizeof k->detail, "nothing usable recorded for %s on %s (%s%.300s%s): the template's "
                 "default configuration", sp_template_name(t), gpu->info.profile, *none ? none : "searched ",
                 *none ? "" : db_path, req->ignore_shipped ? "" : " and the shipped results");
    return st;
}

sptune_status sp_api_ranked_configs(const sptune_kernel_request *req, int max, char **configs, int *n)
{
    *n = 0;
    sp_gpu_profile gpu;
    sptune_status st = strcmp(req->gpu, "auto") == 0 ? sp_gpu_profile_current(&gpu) : sp_gpu_profile_named(req->gpu, &gpu);
    sp_template *t = NULL;
    if (st == SPTUNE_OK) st = sp_template_load(req->op, &t);
    sp_problem want;
    sp_fixed_params fixed;
    if (st == SPTUNE_OK) st = sp_problem_parse(t, req->problem, &want);
    if (st == SPTUNE_OK) st = sp_api_fixed_parse(t, req->fixed, &fixed);
    char path[4096], none[512];
    scan s = {0};
    if (st == SPTUNE_OK) st = ranked(t, &gpu, &want, req, &fixed, &s, none, sizeof none, path, sizeof path);
    /* each candidate's configuration, then (measured on several kinds of data) the fastest on its own data */
    for (size_t i = 0; st == SPTUNE_OK && *n < max && i < 2 * s.n; i++) {
        candidate c = s.c[i / 2];
        if (i % 2 && !(c.config = c.own)) continue;
        sp_config cfg;
        if (!usable(t, &gpu, &want, &fixed, &c, &cfg, &st)) continue;
        char *text = sp_config_format(t, &cfg);
        if (!text) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); break; }
        int seen = 0;
        for (int j = 0; j < *n && !seen; j++) seen = !strcmp(configs[j], text);
        if (seen) free(text);
        else configs[(*n)++] = text;
    }
    ranked_free(&s);
    sp_template_free(t);
    if (st != SPTUNE_OK) {
        for (int j = 0; j < *n; j++) free(configs[j]);
        *n = 0;
    }
    return st;
}

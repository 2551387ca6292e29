/* Configurations ("bm=128,bn=64") and problems ("M=4096,N=4096,K=4096" or "4096x4096x4096"). */
#include "sp_template_internal.h"

#include "sp_status.h"
#include "sp_str.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A token of text: [s, s + n), trimmed. */
typedef struct tok {
    const char *s;
    size_t n;
} tok;

static tok trim(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    return (tok){s, n};
}

static int tok_eq(tok t, const char *s) { return strlen(s) == t.n && memcmp(t.s, s, t.n) == 0; }

static int blank(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    return *s == 0;
}

/* ---- configurations ---------------------------------------------------------------------- */

void sp_config_default(const sp_template *t, sp_config *out)
{
    memset(out, 0, sizeof *out);
    out->nparams = t->nparams;
    for (int i = 0; i < t->nparams; i++) out->idx[i] = t->params[i].default_index;
}

long long sp_config_int(const sp_template *t, const sp_config *c, const char *name)
{
    for (int i = 0; i < sp_template_nparams(t) && i < c->nparams; i++) {
        const sp_param *p = sp_template_param(t, i);
        if (strcmp(p->name, name) == 0)
            return p->values[c->idx[i]].kind == SP_VAL_INT ? p->values[c->idx[i]].i : -1;
    }
    return -1;
}

const char *sp_config_text(const sp_template *t, const sp_config *c, const char *name)
{
    for (int i = 0; i < sp_template_nparams(t) && i < c->nparams; i++) {
        const sp_param *p = sp_template_param(t, i);
        if (strcmp(p->name, name) == 0) return p->values[c->idx[i]].text;
    }
    return NULL;
}

void sp_config_vars(const sp_template *t, const sp_config *c, const sp_problem *p, sp_vars *vars)
{
    memset(vars, 0, sizeof *vars);
    for (int i = 0; p && i < p->n; i++) sp_vars_set(vars, t->dims[i], p->v[i]);
    for (int i = 0; i < t->nparams; i++) {
        const sp_value *v = &t->params[i].values[c->idx[i]];
        if (v->kind == SP_VAL_INT) sp_vars_set(vars, t->params[i].name, (double)v->i);
    }
}

sptune_status sp_config_scalar_size(const sp_template *t, const sp_config *c, const sp_problem *p, const char *name,
                                    int bound, long long *out)
{
    for (int i = 0; i < t->nargs; i++) {
        const sp_arg *a = &t->args[i];
        if (strcmp(a->name, name) != 0 || a->role != SP_ROLE_SCALAR) continue;
        const char *e = bound ? a->bound : a->typical;
        if (!e) return sp_fail(SPTUNE_ERR_INVALID, "%s: argument %s declares no %s size", t->name, name,
                               bound ? "bound" : "typical");
        sp_vars vars;
        sp_config_vars(t, c, p, &vars);
        sptune_status st = sp_expr_eval(e, &vars, out);
        return st == SPTUNE_OK ? st : sp_wrap(st, "%s: %s's %s size", t->name, name, bound ? "bound" : "typical");
    }
    return sp_fail(SPTUNE_ERR_INVALID, "%s has no scalar argument %s", t->name, name);
}

sptune_status sp_config_validate(const sp_template *t, const sp_config *c)
{
    if (!c) return sp_fail(SPTUNE_ERR_INVALID, "no configuration given");
    if (c->nparams != t->nparams)
        return sp_fail(SPTUNE_ERR_INVALID, "configuration has %d parameters, %s has %d", c->nparams, t->name,
                       t->nparams);
    for (int i = 0; i < t->nparams; i++)
        if (c->idx[i] < 0 || c->idx[i] >= t->params[i].nvalues)
            return sp_fail(SPTUNE_ERR_INVALID, "configuration value index %d of %s is out of range (%d values)",
                           c->idx[i], t->params[i].name, t->params[i].nvalues);
    return SPTUNE_OK;
}

static int value_matches(const sp_value *v, tok text)
{
    if (tok_eq(text, v->text)) return 1;
    if (v->kind != SP_VAL_INT || text.n == 0 || text.n > 30) return 0;
    char buf[32], *end;
    memcpy(buf, text.s, text.n);
    buf[text.n] = 0;
    if (!(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+')) return 0;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    return errno == 0 && *end == 0 && x == v->i;
}

static void list_params(const sp_template *t, sp_buf *b)
{
    for (int i = 0; i < t->nparams; i++) sp_buf_printf(b, "%s%s", i ? ", " : "", t->params[i].name);
}

static void list_values(const sp_param *p, sp_buf *b)
{
    for (int j = 0; j < p->nvalues; j++) sp_buf_printf(b, "%s%s", j ? ", " : "", p->values[j].text);
}

sptune_status sp_config_parse(const sp_template *t, const char *text, sp_config *out)
{
    if (!t || !text || !out) return sp_fail(SPTUNE_ERR_INVALID, "sp_config_parse: missing argument");
    sp_config_default(t, out);
    if (blank(text)) return SPTUNE_OK;
    int seen[SP_MAX_PARAMS] = {0};
    const char *s = text;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        tok entry = trim(s, len);
        const char *eq = memchr(entry.s, '=', entry.n);
        if (!eq)
            return sp_fail(SPTUNE_ERR_INVALID, "bad configuration entry '%.*s' in '%s' (expected name=value)",
                           (int)entry.n, entry.s, text);
        tok key = trim(entry.s, (size_t)(eq - entry.s));
        tok val = trim(eq + 1, entry.n - (size_t)(eq - entry.s) - 1);
        int pi = -1;
        for (int i = 0; i < t->nparams && pi < 0; i++)
            if (tok_eq(key, t->params[i].name)) pi = i;
        sp_buf b = {0};
        if (pi < 0) {
            list_params(t, &b);
            sptune_status st = sp_fail(SPTUNE_ERR_INVALID, "unknown parameter '%.*s' for %s (parameters: %s)",
                                       (int)key.n, key.s, t->name, b.data ? b.data : "");
            sp_buf_free(&b);
            return st;
        }
        const sp_param *p = &t->params[pi];
        if (seen[pi]++) return sp_fail(SPTUNE_ERR_INVALID, "parameter '%s' is given twice in '%s'", p->name, text);
        int vi = -1;
        for (int j = 0; j < p->nvalues && vi < 0; j++)
            if (value_matches(&p->values[j], val)) vi = j;
        if (vi < 0) {
            list_values(p, &b);
            sptune_status st = sp_fail(SPTUNE_ERR_INVALID, "%s=%.*s is not allowed (values: %s)", p->name,
                                       (int)val.n, val.s, b.data ? b.data : "");
            sp_buf_free(&b);
            return st;
        }
        out->idx[pi] = vi;
        if (!comma) break;
        s = comma + 1;
    }
    return SPTUNE_OK;
}

char *sp_config_format(const sp_template *t, const sp_config *c)
{
    if (!t || !c || sp_config_validate(t, c) != SPTUNE_OK) return NULL;
    sp_buf b = {0};
    for (int i = 0; i < t->nparams; i++)
        sp_buf_printf(&b, "%s%s=%s", i ? "," : "", t->params[i].name, t->params[i].values[c->idx[i]].text);
    if (!b.data && !b.oom) return sp_strdup("");
    if (b.oom) { sp_buf_free(&b); return NULL; }
    return b.data;
}

/* ---- problems ---------------------------------------------------------------------------- */

/* A finite decimal number: [+-]digits[.digits][e[+-]digits] (no hex, inf or nan). */
static int parse_number(tok t, double *v)
{
    char buf[64], *end;
    if (t.n == 0 || t.n >= sizeof buf) return 0;
    memcpy(buf, t.s, t.n);
    buf[t.n] = 0;
    int digits = 0;
    for (size_t i = 0; i < t.n; i++) {
        char ch = buf[i];
        if (isdigit((unsigned char)ch)) digits = 1;
        else if (!(ch == '.' || ch == '-' || ch == '+' || ch == 'e' || ch == 'E')) return 0;
    }
    if (!digits) return 0;
    errno = 0;
    *v = strtod(buf, &end);
    return *end == 0 && isfinite(*v) && errno != ERANGE;
}

static void list_dims(const sp_template *t, sp_buf *b, const char *sep)
{
    for (int i = 0; i < t->ndims; i++) {
        sp_buf_printf(b, "%s%s", i ? sep : "", t->dims[i]);
        if (t->dim_optional[i]) sp_buf_printf(b, " (default %g)", t->dim_default[i]);
    }
}

/* "<what> in problem '<text>' (gemm takes M, N, K)". */
static sptune_status dims_fail(const sp_template *t, const char *text, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static sptune_status dims_fail(const sp_template *t, const char *text, const char *sep, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    sp_buf b = {0};
    list_dims(t, &b, sep);
    sptune_status st = sp_fail(SPTUNE_ERR_INVALID, "%s in problem '%s' (%s takes %s)", what, text, t->name,
                               b.data ? b.data : "no dimensions");
    sp_buf_free(&b);
    return st;
}

/* Every dimension within its range (template ranges and the kernels' integer types). */
static sptune_status check_ranges(const sp_template *t, const sp_problem *p, const char *text)
{
    for (int i = 0; i < t->ndims; i++) {
        const double v = p->v[i], lo = t->dim_min[i], hi = t->dim_max[i];
        if (v >= lo && v <= hi && (!t->dim_int[i] || v == floor(v))) continue;
        char range[96];
        if (isinf(hi)) snprintf(range, sizeof range, "%s %g or more", t->dim_int[i] ? "an integer," : "a number,", lo);
        else if (isinf(lo)) snprintf(range, sizeof range, "%s at most %g", t->dim_int[i] ? "an integer," : "a number,", hi);
        else snprintf(range, sizeof range, "%s from %.10g to %.10g", t->dim_int[i] ? "an integer" : "a number", lo, hi);
        return sp_fail(SPTUNE_ERR_INVALID, "%s=%.17g in problem '%s': %s must be %s", t->dims[i], v, text, t->dims[i], range);
    }
    return SPTUNE_OK;
}

sptune_status sp_problem_parse(const sp_template *t, const char *text, sp_problem *out)
{
    if (!t || !text || !out) return sp_fail(SPTUNE_ERR_INVALID, "sp_problem_parse: missing argument");
    memset(out, 0, sizeof *out);
    out->n = t->ndims;
    for (int i = 0; i < t->ndims; i++) {
        snprintf(out->name[i], sizeof out->name[i], "%s", t->dims[i]);
        out->v[i] = t->dim_default[i];
    }
    if (blank(text)) {
        if (t->ndims == 0) return SPTUNE_OK;
        return dims_fail(t, text, ", ", "empty problem");
    }
    int seen[SP_MAX_DIMS] = {0};
    if (strchr(text, '=')) {
        const char *s = text;
        for (;;) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            tok entry = trim(s, len);
            const char *eq = memchr(entry.s, '=', entry.n);
            if (!eq) return dims_fail(t, text, ", ", "bad entry '%.*s' (expected name=value)", (int)entry.n, entry.s);
            tok key = trim(entry.s, (size_t)(eq - entry.s));
            tok val = trim(eq + 1, entry.n - (size_t)(eq - entry.s) - 1);
            int di = -1;
            for (int i = 0; i < t->ndims && di < 0; i++)
                if (tok_eq(key, t->dims[i])) di = i;
            if (di < 0) return dims_fail(t, text, ", ", "unknown dimension '%.*s'", (int)key.n, key.s);
            if (seen[di]++) return dims_fail(t, text, ", ", "dimension '%.*s' given twice", (int)key.n, key.s);
            if (!parse_number(val, &out->v[di]))
                return sp_fail(SPTUNE_ERR_INVALID, "%s=%.*s in problem '%s' is not a finite number", t->dims[di],
                               (int)val.n, val.s, text);
            if (!comma) break;
            s = comma + 1;
        }
        for (int i = 0; i < t->ndims; i++)
            if (!seen[i] && !t->dim_optional[i]) return dims_fail(t, text, ", ", "missing dimension '%s'", t->dims[i]);
        return check_ranges(t, out, text);
    }
    /* "4096x4096x4096": the declared order. */
    const char *s = text;
    int k = 0;
    for (;;) {
        const char *x = s;
        while (*x && *x != 'x' && *x != 'X') x++;
        tok v = trim(s, (size_t)(x - s));
        if (k >= t->ndims)
            return dims_fail(t, text, " x ", "too many sizes (%d or more)", k + 1);
        if (!parse_number(v, &out->v[k]))
            return sp_fail(SPTUNE_ERR_INVALID, "%.*s (dimension %s) in problem '%s' is not a finite number",
                           (int)v.n, v.s, t->dims[k], text);
        k++;
        if (!*x) break;
        s = x + 1;
    }
    if (k != t->ndims && !t->dim_optional[k])
        return dims_fail(t, text, " x ", "missing dimension '%s'", t->dims[k]);
    return check_ranges(t, out, text);
}

int sp_problem_get(const sp_problem *p, const char *name, double *v)
{
    for (int i = 0; i < p->n; i++)
        if (strncmp(p->name[i], name, sizeof p->name[i]) == 0) {
            *v = p->v[i];
            return 1;
        }
    return 0;
}

char *sp_problem_format(const sp_problem *p)
{
    if (!p || p->n < 0 || p->n > SP_MAX_DIMS) return NULL;
    sp_buf b = {0};
    for (int i = 0; i < p->n; i++) {
        double v = p->v[i];
        sp_buf_printf(&b, "%s%.*s=", i ? "," : "", (int)strnlen(p->name[i], sizeof p->name[i]), p->name[i]);
        if (v == floor(v) && fabs(v) < 9.2e18) {
            sp_buf_printf(&b, "%lld", (long long)v);
        } else {
            char num[32];
            snprintf(num, sizeof num, "%.15g", v);   /* the shortest of 15 or 17 digits that reads back as v */
            if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
            sp_buf_printf(&b, "%s", num);
        }
    }
    if (b.oom) { sp_buf_free(&b); return NULL; }
    return b.data ? b.data : sp_strdup("");
}

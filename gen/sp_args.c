/* Kernel argument declarations: types, roles, extent expressions, descriptions. */
#include "sp_args.h"
#include "sp_status.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[SP_ARG__TYPES] = {"bf16", "f16", "x16", "u8", "u32", "u64", "i32", "f32"};
static const size_t type_sizes[SP_ARG__TYPES] = {2, 2, 2, 1, 4, 8, 4, 4};
static const char *const role_names[SP_ROLE__COUNT] = {"input", "output", "workspace", "dim", "scalar"};

const char *sp_arg_type_name(sp_arg_type t) { return t < SP_ARG__TYPES ? type_names[t] : "?"; }
size_t sp_arg_type_size(sp_arg_type t) { return t < SP_ARG__TYPES ? type_sizes[t] : 0; }
const char *sp_arg_role_name(sp_arg_role r) { return r < SP_ROLE__COUNT ? role_names[r] : "?"; }

int sp_arg_type_parse(const char *s, sp_arg_type *t)
{
    for (int i = 0; i < SP_ARG__TYPES; i++)
        if (strcmp(s, type_names[i]) == 0) { *t = (sp_arg_type)i; return 1; }
    return 0;
}

int sp_arg_role_parse(const char *s, sp_arg_role *r)
{
    for (int i = 0; i < SP_ROLE__COUNT; i++)
        if (strcmp(s, role_names[i]) == 0) { *r = (sp_arg_role)i; return 1; }
    return 0;
}

void sp_arg_free(sp_arg *a)
{
    for (int i = 0; i < a->nshape; i++) free(a->shape[i]);
    free(a->doc);
    free(a->typical);
    free(a->bound);
    memset(a, 0, sizeof *a);
}

int sp_vars_set(sp_vars *vs, const char *name, double v)
{
    for (int i = 0; i < vs->n; i++)
        if (strcmp(vs->name[i], name) == 0) { vs->v[i] = v; return 1; }
    if (vs->n == SP_MAX_VARS) return 0;
    vs->name[vs->n] = name;
    vs->v[vs->n++] = v;
    return 1;
}

/* ---- extent expressions: a recursive-descent parser that evaluates as it goes ------------------ */

typedef struct expr {
    const char *text, *p;
    const sp_vars *vars;           /* evaluation */
    const char *const *names;      /* checking only (vars NULL) */
    int nnames;
    int depth;
    int failed;
    char why[160];
} expr;

/* Values are non-negative reals (long double: every integer below 2^63 exact), so that a data dimension with a
 * fraction (a percentage) can size a capacity; '/' and cdiv round down and up as integer division does, and the
 * extent is the value rounded down: for integer operands the same as integer arithmetic. */
typedef long double num;

static num efail(expr *e, const char *why)
{
    if (!e->failed) {
        e->failed = 1;
        snprintf(e->why, sizeof e->why, "%s at '%.20s'", why, e->p);
    }
    return 0;
}

static void skip(expr *e)
{
    while (isspace((unsigned char)*e->p)) e->p++;
}

static num sum(expr *e);

static num checked(expr *e, num v)
{
    if (!(v <= (num)LLONG_MAX / 2) || v < 0) return efail(e, "value out of range");
    return v;
}

static const char *divisor_fault(num b)
{
    return b == 0 ? "division by zero" : "a negative value outside min and max";
}

static num call(expr *e, const char *name, size_t n)
{
    num a = sum(e), b;
    skip(e);
    if (*e->p != ',') return efail(e, "expected ','");
    e->p++;
    b = sum(e);
    skip(e);
    if (*e->p != ')') return efail(e, "expected ')'");
    e->p++;
    if (n == 3 && memcmp(name, "min", 3) == 0) return a < b ? a : b;
    if (n == 3 && memcmp(name, "max", 3) == 0) return a > b ? a : b;
    if (a < 0) return efail(e, "a negative value outside min and max");
    if (n == 4 && memcmp(name, "cdiv", 4) == 0) return b > 0 ? ceill(a / b) : efail(e, divisor_fault(b));
    return efail(e, "unknown function (cdiv, min, max)");
}

static num name_value(expr *e, const char *name, size_t n)
{
    if (!e->vars) {
        for (int i = 0; i < e->nnames; i++)
            if (strlen(e->names[i]) == n && memcmp(e->names[i], name, n) == 0) return 1;
        return efail(e, "unknown name (not a dimension, integer parameter or scalar argument)");
    }
    for (int i = 0; i < e->vars->n; i++) {
        if (strlen(e->vars->name[i]) != n || memcmp(e->vars->name[i], name, n) != 0) continue;
        double v = e->vars->v[i];
        if (v != v) return efail(e, "the name's value is not a number");
        /* an integer parameter may be negative (twell-ffn's route=-1): only min and max take it as it is */
        return v < 0 ? (num)v : checked(e, v);
    }
    return efail(e, "no value for this name");
}

static num atom(expr *e)
{
    skip(e);
    if (++e->depth > 32) return efail(e, "nested too deeply");
    num v = 0;
    if (*e->p == '(') {
        e->p++;
        v = sum(e);
        skip(e);
        if (*e->p != ')') return efail(e, "expected ')'");
        e->p++;
    } else if (isdigit((unsigned char)*e->p)) {
        num x = 0;
        while (isdigit((unsigned char)*e->p)) x = x * 10 + (*e->p++ - '0');
        v = checked(e, x);
    } else if (isalpha((unsigned char)*e->p) || *e->p == '_') {
        const char *s = e->p;
        while (isalnum((unsigned char)*e->p) || *e->p == '_') e->p++;
        size_t n = (size_t)(e->p - s);
        skip(e);
        if (*e->p == '(') {
            e->p++;
            v = call(e, s, n);
        } else {
            v = name_value(e, s, n);
        }
    } else {
        v = efail(e, "expected a number, a name or '('");
    }
    e->depth--;
    return v;
}

static num product(expr *e)
{
    num v = atom(e);
    for (;;) {
        skip(e);
        char op = *e->p;
        if (op != '*' && op != '/') return v;
        e->p++;
        num r = atom(e);
        if (v < 0 || r < 0) return efail(e, "a negative value outside min and max");
        if (op == '*') v = checked(e, v * r);
        else v = r > 0 ? floorl(v / r) : efail(e, divisor_fault(r));
    }
}

static num sum(expr *e)
{
    num v = product(e);
    for (;;) {
        skip(e);
        char op = *e->p;
        if (op != '+' && op != '-') return v;
        e->p++;
        num r = product(e);
        if (v < 0 || r < 0) return efail(e, "a negative value outside min and max");
        v = checked(e, op == '+' ? v + r : v - r);
    }
}

static sptune_status run(expr *e, long long *out)
{
    num v = sum(e);
    skip(e);
    if (*e->p) efail(e, "unexpected text");
    if (v < 0) efail(e, "a negative extent");
    if (e->failed) return sp_fail(SPTUNE_ERR_INVALID, "extent '%s': %s", e->text, e->why);
    if (out) *out = (long long)floorl(v);
    return SPTUNE_OK;
}

sptune_status sp_expr_eval(const char *text, const sp_vars *vars, long long *out)
{
    static const sp_vars none;
    if (strcmp(text, "?") == 0) return sp_fail(SPTUNE_ERR_INVALID, "extent '?': set by the data, not by the problem");
    expr e = {.text = text, .p = text, .vars = vars ? vars : &none};
    return run(&e, out);
}

sptune_status sp_expr_check(const char *text, const char *const *names, int nnames)
{
    if (strcmp(text, "?") == 0) return SPTUNE_OK;
    expr e = {.text = text, .p = text, .names = names, .nnames = nnames};
    return run(&e, NULL);
}

sptune_status sp_arg_elements(const sp_arg *a, const sp_vars *vars, long long *out)
{
    if (!sp_arg_is_pointer(a) || a->nshape < 1)
        return sp_fail(SPTUNE_ERR_INVALID, "argument %s is passed by value: it has no elements", a->name);
    long double n = 1;
    for (int i = 0; i < a->nshape; i++) {
        long long x;
        sptune_status st = sp_expr_eval(a->shape[i], vars, &x);
        if (st != SPTUNE_OK) return sp_wrap(st, "argument %s", a->name);
        n *= x;
    }
    if (n > (long double)LLONG_MAX / 16) return sp_fail(SPTUNE_ERR_INVALID, "argument %s: too many elements", a->name);
    *out = (long long)n;
    return SPTUNE_OK;
}

/* An extent in a product: parenthesised when it is a sum ("(slots + 1)"). */
static void extent_text(const char *s, sp_buf *b)
{
    int depth = 0, bare_sum = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '(') depth++;
        else if (*p == ')') depth--;
        else if (depth == 0 && (*p == '+' || *p == '-')) bare_sum = 1;
    }
    sp_buf_printf(b, bare_sum ? "(%s)" : "%s", s);
}

void sp_arg_shape_text(const sp_arg *a, sp_buf *b)
{
    if (a->nshape == 1 && strcmp(a->shape[0], "?") == 0) {
        sp_buf_puts(b, "set by the data");
        return;
    }
    for (int i = 0; i < a->nshape; i++) {
        if (i) sp_buf_puts(b, " x ");
        extent_text(a->shape[i], b);
    }
}

void sp_arg_describe(const sp_arg *a, sp_buf *b)
{
    if (sp_arg_is_pointer(a)) {
        sp_buf_printf(b, "%s%s *%s (", a->role == SP_ROLE_INPUT ? "const " : "", sp_arg_type_name(a->type), a->name);
        sp_arg_shape_text(a, b);
        if (a->role == SP_ROLE_WORKSPACE) sp_buf_puts(b, ", workspace");
        sp_buf_printf(b, "%s%s)", *a->doc ? ": " : "", a->doc);
    } else {
        sp_buf_printf(b, "%s %s", sp_arg_type_name(a->type), a->name);
        if (*a->doc) sp_buf_printf(b, " (%s)", a->doc);
    }
}

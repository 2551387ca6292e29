/* Templates, part 2: the module table a template returns, read and validated field by field (name, dims,
 * params, args, ranges, tokens, constraints, functions); every error names the template file. */
#include "sp_template_internal.h"

#include "sp_str.h"
#include "sp_status.h"

#include <lauxlib.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 65536 /* a parameter's values, at most */

/* ---- small helpers ----------------------------------------------------------------------- */


static int is_ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

static int is_op_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-')) return 0;
    return 1;
}

static const char *kind_name(sp_value_kind k)
{
    return k == SP_VAL_INT ? "integer" : k == SP_VAL_STR ? "string" : "boolean";
}

/* Raises "<path>: <message>" (a validation error: no line, the table as a whole is wrong). */
static int vfail(lua_State *L, const sp_template *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int vfail(lua_State *L, const sp_template *t, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sp_sandbox_error(L, "%s: %s", t->where, msg);
}

/* A short description of the value at idx for messages: 1.5, 'a b', true, a table. */
static const char *describe(lua_State *L, int idx, char *buf, size_t n)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) snprintf(buf, n, "%lld", (long long)lua_tointeger(L, idx));
        else snprintf(buf, n, "%.17g", (double)lua_tonumber(L, idx));
        break;
    case LUA_TSTRING: snprintf(buf, n, "'%.60s'", lua_tostring(L, idx)); break;
    case LUA_TBOOLEAN: snprintf(buf, n, "%s", lua_toboolean(L, idx) ? "true" : "false"); break;
    default: snprintf(buf, n, "a %s", luaL_typename(L, idx));
    }
    return buf;
}

/* Pushes tbl[key] without metamethods; returns its type. tbl is an absolute index. */
static int rawfield(lua_State *L, int tbl, const char *key)
{
    lua_pushstring(L, key);
    return lua_rawget(L, tbl);
}

static char *dup_or_raise(lua_State *L, const char *s)
{
    char *d = sp_strdup(s);
    if (!d) sp_sandbox_nomem(L);
    return d;
}

/* Optional string field: NULL when absent. */
static const char *opt_string(lua_State *L, const sp_template *t, int tbl, const char *key, const char *what)
{
    int ty = rawfield(L, tbl, key);
    if (ty == LUA_TNIL) { lua_pop(L, 1); return NULL; }
    if (ty != LUA_TSTRING) vfail(L, t, "%s must be a string (got %s)", what, luaL_typename(L, -1));
    const char *s = lua_tostring(L, -1);
    lua_pop(L, 1); /* still referenced by the module table */
    return s;
}

/* ---- validation of the module table ------------------------------------------------------ */


static void read_meta(lua_State *L, load_ctx *x, int m)
{
    sp_template *t = x->t;
    if (rawfield(L, m, "name") != LUA_TSTRING)
        vfail(L, t, "name must be a string (got %s)", luaL_typename(L, -1));
    const char *name = lua_tostring(L, -1);
    if (!is_op_name(name)) vfail(L, t, "name '%s' must be a plain name (letters, digits, '_', '-')", name);
    if (x->stem && strcmp(name, x->stem) != 0)
        vfail(L, t, "name '%s' must be the file name '%s'", name, x->stem);
    t->name = dup_or_raise(L, name);
    lua_pop(L, 1);
    const char *family = opt_string(L, t, m, "family", "family");
    if (family && x->stem && strcmp(family, x->folder) != 0)
        vfail(L, t, "family '%s' must be the folder '%s'", family, x->folder);
    t->family = dup_or_raise(L, family ? family : x->folder);
    const char *desc = opt_string(L, t, m, "description", "description");
    t->description = dup_or_raise(L, desc ? desc : "");
}

/* dims: names ("M"), or {name, default} for a dimension a problem may leave out (the data's
 * distribution, say), which then takes the default. */
static void read_dims(lua_State *L, sp_template *t, int m)
{
    int ty = rawfield(L, m, "dims"), d = lua_gettop(L);
    if (ty == LUA_TNIL) { lua_pop(L, 1); return; }
    if (ty != LUA_TTABLE) vfail(L, t, "dims must be a list of dimension names (got %s)", luaL_typename(L, d));
    lua_Integer n = (lua_Integer)lua_rawlen(L, d);
    if (n > SP_MAX_DIMS) vfail(L, t, "dims has %lld names (at most %d)", (long long)n, SP_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        char buf[80];
        lua_rawgeti(L, d, i + 1);
        int opt = lua_type(L, -1) == LUA_TTABLE;
        if (opt) {
            int e = lua_gettop(L);
            lua_rawgeti(L, e, 2);
            if (lua_type(L, -1) != LUA_TNUMBER || lua_rawlen(L, e) != 2 || !isfinite(lua_tonumber(L, -1)))
                vfail(L, t, "dims[%d] must be a name or {name, default number}", i + 1);
            t->dim_default[i] = lua_tonumber(L, -1);
            t->dim_optional[i] = 1;
            lua_pop(L, 1);
            lua_rawgeti(L, e, 1);
            lua_remove(L, e);
        }
        if (lua_type(L, -1) != LUA_TSTRING || !is_ident(lua_tostring(L, -1), 23))
            vfail(L, t, "dims[%d] must be an identifier of at most 23 characters (got %s)", i + 1,
                  describe(L, -1, buf, sizeof buf));
        const char *s = lua_tostring(L, -1);
        for (int j = 0; j < i; j++)
            if (strcmp(t->dims[j], s) == 0) vfail(L, t, "dims[%d]: dimension '%s' is declared twice", i + 1, s);
        if (!opt && i > 0 && t->dim_optional[i - 1])
            vfail(L, t, "dims[%d]: '%s' follows a dimension with a default (those come last)", i + 1, s);
        snprintf(t->dims[i], sizeof t->dims[i], "%s", s);
        t->ndims = i + 1;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Converts the Lua value at idx into v (text malloc'd); returns 0 with *err set when it is not
 * an allowed value. */
static int to_value(lua_State *L, int idx, sp_value *v, const char **err)
{
    char buf[32];
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: {
        int isnum;
        lua_Integer i = lua_tointegerx(L, idx, &isnum); /* integral floats (2^6) are accepted */
        if (!isnum) { *err = "is not an integer (values are integers, strings or booleans)"; return 0; }
        v->kind = SP_VAL_INT;
        v->i = (long long)i;
        snprintf(buf, sizeof buf, "%lld", v->i);
        v->text = sp_strdup(buf);
        break;
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        int ok = n > 0 && n < 256 && strlen(s) == n;
        for (size_t k = 0; ok && k < n; k++)
            if (s[k] == ',' || s[k] == '=' || (unsigned char)s[k] <= ' ' || s[k] == 0x7f) ok = 0;
        if (!ok) { *err = "must be a non-empty string without ',', '=', spaces or control characters"; return 0; }
        v->kind = SP_VAL_STR;
        v->i = 0;
        v->text = sp_strdup(s);
        break;
    }
    case LUA_TBOOLEAN:
        v->kind = SP_VAL_BOOL;
        v->i = lua_toboolean(L, idx);
        v->text = sp_strdup(v->i ? "true" : "false");
        break;
    default:
        *err = "is not an integer, a string or a boolean";
        return 0;
    }
    if (!v->text) sp_sandbox_nomem(L);
    return 1;
}

static void push_value(lua_State *L, const sp_value *v)
{
    if (v->kind == SP_VAL_INT) lua_pushinteger(L, (lua_Integer)v->i);
    else if (v->kind == SP_VAL_BOOL) lua_pushboolean(L, (int)v->i);
    else lua_pushstring(L, v->text);
}

static int cmp_value_ptr(const void *a, const void *b)
{
    const sp_value *x = *(const sp_value *const *)a, *y = *(const sp_value *const *)b;
    return strcmp(x->text, y->text);
}

static void read_param(lua_State *L, sp_template *t, int i, int e, int values_tbl, int names_tbl)
{
    char buf[80];
    sp_param *p = &t->params[i];
    if (rawfield(L, e, "name") != LUA_TSTRING || !is_ident(lua_tostring(L, -1), 63))
        vfail(L, t, "params[%d].name must be an identifier (got %s)", i + 1, describe(L, -1, buf, sizeof buf));
    const char *name = lua_tostring(L, -1);
    for (int j = 0; j < i; j++)
        if (strcmp(t->params[j].name, name) == 0)
            vfail(L, t, "params[%d]: parameter '%s' is declared twice", i + 1, name);
    p->name = dup_or_raise(L, name);
    t->nparams = i + 1; /* from here on sp_template_free releases this parameter */
    lua_pop(L, 1);
    char what[48];
    snprintf(what, sizeof what, "params[%d].doc", i + 1);
    const char *doc = opt_string(L, t, e, "doc", what);
    p->doc = dup_or_raise(L, doc ? doc : "");

    if (rawfield(L, e, "values") != LUA_TTABLE || lua_rawlen(L, -1) == 0)
        vfail(L, t, "params[%d].values must be a non-empty list", i + 1);
    int vals = lua_gettop(L);
    size_t nv = lua_rawlen(L, vals);
    if (nv > MAX_VALUES) vfail(L, t, "params[%d].values has %zu entries (at most %d)", i + 1, nv, MAX_VALUES);
    p->values = calloc(nv, sizeof *p->values);
    if (!p->values) sp_sandbox_nomem(L);
    lua_createtable(L, (int)nv, 0); /* the canonical Lua values */
    int lv = lua_gettop(L);
    for (size_t j = 0; j < nv; j++) {
        const char *err = NULL;
        lua_rawgeti(L, vals, (lua_Integer)j + 1);
        if (lua_isnil(L, -1))
            vfail(L, t, "params[%d].values[%zu] is nil (values must be a list without holes)", i + 1, j + 1);
        if (!to_value(L, -1, &p->values[j], &err))
            vfail(L, t, "params[%d].values[%zu] = %s %s", i + 1, j + 1, describe(L, -1, buf, sizeof buf), err);
        p->nvalues = (int)j + 1;
        if (p->values[j].kind != p->values[0].kind)
            vfail(L, t, "params[%d].values[%zu] is a %s but values[1] is a %s (one type per parameter)", i + 1,
                  j + 1, kind_name(p->values[j].kind), kind_name(p->values[0].kind));
        lua_pop(L, 1);
        push_value(L, &p->values[j]);
        lua_rawseti(L, lv, (lua_Integer)j + 1);
    }
    /* Each value once (sorted copy: lists may be long). */
    const sp_value **sorted = lua_newuserdatauv(L, nv * sizeof *sorted, 0);
    for (size_t j = 0; j < nv; j++) sorted[j] = &p->values[j];
    qsort(sorted, nv, sizeof *sorted, cmp_value_ptr);
    for (size_t j = 1; j < nv; j++)
        if (strcmp(sorted[j - 1]->text, sorted[j]->text) == 0)
            vfail(L, t, "params[%d].values has %s twice", i + 1, sorted[j]->text);
    lua_pop(L, 1);

    int same = rawfield(L, e, "same_cost");
    if (same != LUA_TNIL && same != LUA_TBOOLEAN)
        vfail(L, t, "params[%d].same_cost must be a boolean (got %s)", i + 1, luaL_typename(L, -1));
    p->same_cost = lua_toboolean(L, -1);
    lua_pop(L, 1);

    p->default_index = 0;
    if (rawfield(L, e, "default") != LUA_TNIL) {
        sp_value d = {0};
        const char *err = NULL;
        int found = -1;
        if (to_value(L, -1, &d, &err)) {
            for (int j = 0; j < p->nvalues && found < 0; j++)
                if (p->values[j].kind == d.kind && strcmp(p->values[j].text, d.text) == 0) found = j;
            free(d.text);
        }
        if (found < 0)
            vfail(L, t, "params[%d].default = %s is not one of its values", i + 1, describe(L, -1, buf, sizeof buf));
        p->default_index = found;
    }
    lua_pop(L, 1);
    lua_pushvalue(L, lv);
    lua_rawseti(L, values_tbl, i + 1);
    lua_pushstring(L, p->name);
    lua_rawseti(L, names_tbl, i + 1);
    lua_settop(L, vals - 1);
}

static void read_params(lua_State *L, sp_template *t, int m, int T)
{
    int ty = rawfield(L, m, "params"), ps = lua_gettop(L);
    if (ty != LUA_TTABLE || lua_rawlen(L, ps) == 0)
        vfail(L, t, "params must be a non-empty list of parameters (got %s)",
              ty == LUA_TTABLE ? "an empty table" : luaL_typename(L, ps));
    size_t n = lua_rawlen(L, ps);
    if (n > SP_MAX_PARAMS) vfail(L, t, "params has %zu entries (at most %d)", n, SP_MAX_PARAMS);
    lua_createtable(L, (int)n, 0);
    int values_tbl = lua_gettop(L);
    lua_createtable(L, (int)n, 0);
    int names_tbl = lua_gettop(L);
    for (int i = 0; i < (int)n; i++) {
        if (lua_rawgeti(L, ps, i + 1) != LUA_TTABLE)
            vfail(L, t, "params[%d] must be a table {name = ..., values = {...}} (got %s)", i + 1,
                  luaL_typename(L, -1));
        read_param(L, t, i, lua_gettop(L), values_tbl, names_tbl);
        lua_pop(L, 1);
    }
    lua_pushvalue(L, values_tbl);
    lua_rawseti(L, T, SP_T_VALUES);
    lua_pushvalue(L, names_tbl);
    lua_rawseti(L, T, SP_T_NAMES);
    lua_settop(L, ps - 1);
}

/* ranges: what a problem's dimensions may be. A dimension passed to the kernels as an i32 or u32 is an
 * integer from 1 to the type's limit; `ranges = {name = {min, max, int = true}}` bounds the others (the
 * data's: percentages, categories). Needs dims and args read. */
static void read_ranges(lua_State *L, sp_template *t, int m)
{
    for (int d = 0; d < t->ndims; d++) {
        t->dim_min[d] = -HUGE_VAL;
        t->dim_max[d] = HUGE_VAL;
        t->dim_int[d] = 0;
        t->dim_category[d] = 0;
        t->dim_as_before[d] = 0;
        t->dim_across[d] = 0;
        t->dim_own[d] = NAN;
        for (int a = 0; a < t->nargs; a++)
            if (t->args[a].role == SP_ROLE_DIM && strcmp(t->args[a].name, t->dims[d]) == 0 &&
                (t->args[a].type == SP_ARG_I32 || t->args[a].type == SP_ARG_U32)) {
                t->dim_min[d] = 1;
                t->dim_max[d] = t->args[a].type == SP_ARG_I32 ? 2147483647.0 : 4294967295.0;
                t->dim_int[d] = 1;
            }
    }
    int ty = rawfield(L, m, "ranges"), r = lua_gettop(L);
    if (ty != LUA_TNIL && ty != LUA_TTABLE) vfail(L, t, "ranges must be a table of name = {min, max} (got %s)", luaL_typename(L, r));
    for (int d = 0; ty == LUA_TTABLE && d < t->ndims; d++) {
        int e = rawfield(L, r, t->dims[d]);
        if (e != LUA_TNIL) {
            int x = lua_gettop(L);
            lua_rawgeti(L, x, 1);
            lua_rawgeti(L, x, 2);
            if (e != LUA_TTABLE || lua_type(L, -2) != LUA_TNUMBER || lua_type(L, -1) != LUA_TNUMBER ||
                !(lua_tonumber(L, -2) <= lua_tonumber(L, -1)))
                vfail(L, t, "ranges.%s must be {min, max} with min <= max", t->dims[d]);
            t->dim_min[d] = lua_tonumber(L, -2);
            t->dim_max[d] = lua_tonumber(L, -1);
            rawfield(L, x, "int");
            t->dim_int[d] = lua_toboolean(L, -1);
            rawfield(L, x, "category");
            t->dim_category[d] = lua_toboolean(L, -1);
            if (t->dim_category[d] && !t->dim_int[d])
                vfail(L, t, "ranges.%s: a category is numbered by integers (int = true)", t->dims[d]);
            rawfield(L, x, "as_before");
            t->dim_as_before[d] = lua_toboolean(L, -1);
            if (t->dim_as_before[d] && !t->dim_optional[d])
                vfail(L, t, "ranges.%s: as_before needs a default (the data of the keys without it)", t->dims[d]);
            rawfield(L, x, "across");
            t->dim_across[d] = lua_toboolean(L, -1);
            if (t->dim_across[d] && !t->dim_optional[d])
                vfail(L, t, "ranges.%s: across needs a default (a problem need not say how its data was made)", t->dims[d]);
            if (rawfield(L, x, "own") != LUA_TNIL) {
                t->dim_own[d] = lua_tonumber(L, -1);
                if (lua_type(L, -1) != LUA_TNUMBER || !t->dim_across[d] || !t->dim_category[d] ||
                    !(t->dim_own[d] >= t->dim_min[d] && t->dim_own[d] <= t->dim_max[d]) ||
                    t->dim_own[d] != floor(t->dim_own[d]))
                    vfail(L, t, "ranges.%s: own is the value, within the range, of an across category that marks "
                          "results measured on the caller's own tensors", t->dims[d]);
            }
            lua_pop(L, 7);
        }
        lua_pop(L, 1);
    }
    if (ty == LUA_TTABLE) { /* every entry names a dimension */
        lua_pushnil(L);
        while (lua_next(L, r)) {
            int found = 0;
            for (int d = 0; d < t->ndims && lua_type(L, -2) == LUA_TSTRING && !found; d++)
                found = strcmp(lua_tostring(L, -2), t->dims[d]) == 0;
            if (!found) vfail(L, t, "ranges names %s, which is not a dimension", lua_type(L, -2) == LUA_TSTRING ?
                              lua_tostring(L, -2) : "a non-name");
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
}

/* args: the kernels' argument list, declared once (gen/sp_args.h). Needs dims and params read. */
/* A scalar's typical or bound size: an expression of dimensions and integer parameters (the first
 * nbase names), or nothing. */
static char *read_size(lua_State *L, sp_template *t, int i, int e, const char *field, const char *const *names,
                       int nbase)
{
    sp_arg *a = &t->args[i];
    int ty = rawfield(L, e, field);
    char *out = NULL;
    if (ty != LUA_TNIL) {
        if (a->role != SP_ROLE_SCALAR || (ty != LUA_TSTRING && !lua_isinteger(L, -1)))
            vfail(L, t, "args[%d] (%s): %s is an expression string, for scalar arguments only", i + 1, a->name, field);
        out = dup_or_raise(L, lua_tostring(L, -1));
        if (sp_expr_check(out, names, nbase) != SPTUNE_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", sptune_last_error());
            free(out);
            vfail(L, t, "args[%d] (%s).%s: %s", i + 1, a->name, field, msg);
        }
    }
    lua_pop(L, 1);
    return out;
}

static void read_arg(lua_State *L, sp_template *t, int i, int e, const char *const *names, int nnames, int nbase)
{
    char buf[80];
    sp_arg *a = &t->args[i];
    t->nargs = i + 1; /* from here on sp_template_free releases this argument */
    if (rawfield(L, e, "name") != LUA_TSTRING || !is_ident(lua_tostring(L, -1), sizeof a->name - 1))
        vfail(L, t, "args[%d].name must be a C identifier of at most %zu characters (got %s)", i + 1,
              sizeof a->name - 1, describe(L, -1, buf, sizeof buf));
    snprintf(a->name, sizeof a->name, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    for (int j = 0; j < i; j++)
        if (strcmp(t->args[j].name, a->name) == 0) vfail(L, t, "args[%d]: argument '%s' is declared twice", i + 1, a->name);
    if (rawfield(L, e, "type") != LUA_TSTRING || !sp_arg_type_parse(lua_tostring(L, -1), &a->type))
        vfail(L, t, "args[%d] (%s): type must be one of bf16, f16, x16, u8, u32, u64, i32, f32 (got %s)", i + 1, a->name,
              describe(L, -1, buf, sizeof buf));
    lua_pop(L, 1);
    if (rawfield(L, e, "role") != LUA_TSTRING || !sp_arg_role_parse(lua_tostring(L, -1), &a->role))
        vfail(L, t, "args[%d] (%s): role must be input, output, workspace, dim or scalar (got %s)", i + 1, a->name,
              describe(L, -1, buf, sizeof buf));
    lua_pop(L, 1);
    char what[64];
    snprintf(what, sizeof what, "args[%d].doc", i + 1);
    const char *doc = opt_string(L, t, e, "doc", what);
    a->doc = dup_or_raise(L, doc ? doc : "");
    if (a->role == SP_ROLE_DIM) {
        int found = 0;
        for (int d = 0; d < t->ndims && !found; d++) found = strcmp(t->dims[d], a->name) == 0;
        if (!found) vfail(L, t, "args[%d] (%s): a dim argument must name a problem dimension", i + 1, a->name);
    }
    a->typical = read_size(L, t, i, e, "typical", names, nbase);
    a->bound = read_size(L, t, i, e, "bound", names, nbase);
    int ty = rawfield(L, e, "shape");
    if (!sp_arg_is_pointer(a)) {
        if (ty != LUA_TNIL) vfail(L, t, "args[%d] (%s): a %s argument is passed by value and has no shape", i + 1,
                                  a->name, sp_arg_role_name(a->role));
        lua_pop(L, 1);
        return;
    }
    int sh = lua_gettop(L);
    if (ty != LUA_TTABLE || lua_rawlen(L, sh) < 1 || lua_rawlen(L, sh) > SP_MAX_SHAPE)
        vfail(L, t, "args[%d] (%s): shape must be a list of 1 to %d extents (\"M\", \"cdiv(F, bn)\", 4)", i + 1, a->name,
              SP_MAX_SHAPE);
    for (int k = 0; k < (int)lua_rawlen(L, sh); k++) {
        lua_rawgeti(L, sh, k + 1);
        if (lua_type(L, -1) != LUA_TSTRING && !lua_isinteger(L, -1))
            vfail(L, t, "args[%d] (%s): shape[%d] must be an expression string or an integer", i + 1, a->name, k + 1);
        a->shape[k] = dup_or_raise(L, lua_tostring(L, -1));
        a->nshape = k + 1;
        lua_pop(L, 1);
        if (sp_expr_check(a->shape[k], names, nnames) != SPTUNE_OK)
            vfail(L, t, "args[%d] (%s): %s", i + 1, a->name, sptune_last_error());
    }
    lua_pop(L, 1);
}

static void read_args(lua_State *L, sp_template *t, int m)
{
    int ty = rawfield(L, m, "args"), as = lua_gettop(L);
    if (ty == LUA_TNIL) { lua_pop(L, 1); return; }
    if (ty != LUA_TTABLE)
        vfail(L, t, "args must be a list of {name = ..., type = ..., role = ..., shape = {...}} (got %s)",
              luaL_typename(L, as));
    size_t n = lua_rawlen(L, as);
    if (n > SP_MAX_ARGS) vfail(L, t, "args has %zu entries (at most %d)", n, SP_MAX_ARGS);
    /* names shape expressions may use: dimensions, integer parameters, scalar arguments */
    const char *names[SP_MAX_DIMS + SP_MAX_PARAMS + SP_MAX_ARGS];
    int nnames = 0;
    for (int d = 0; d < t->ndims; d++) names[nnames++] = t->dims[d];
    for (int p = 0; p < t->nparams; p++)
        if (t->params[p].values[0].kind == SP_VAL_INT) names[nnames++] = t->params[p].name;
    const int nbase = nnames;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < (int)n; i++) {
            if (lua_rawgeti(L, as, i + 1) != LUA_TTABLE)
                vfail(L, t, "args[%d] must be a table {name = ..., type = ..., role = ...} (got %s)", i + 1,
                      luaL_typename(L, -1));
            if (pass == 0) {
                /* the scalar arguments' names first, so that any shape may use them */
                int e = lua_gettop(L);
                if (rawfield(L, e, "role") == LUA_TSTRING && strcmp(lua_tostring(L, -1), "scalar") == 0 &&
                    rawfield(L, e, "name") == LUA_TSTRING && is_ident(lua_tostring(L, -1), 31))
                    names[nnames++] = lua_tostring(L, -1); /* held by the module table */
                lua_settop(L, as);
                continue;
            }
            read_arg(L, t, i, lua_gettop(L), names, nnames, nbase);
            lua_pop(L, 1);
        }
    }
    sp_buf b = {0};
    for (int i = 0; i < t->nargs; i++) {
        if (i) sp_buf_puts(&b, ", ");
        sp_arg_describe(&t->args[i], &b);
    }
    if (b.oom) { sp_buf_free(&b); sp_sandbox_nomem(L); }
    t->args_text = b.data;
    lua_pop(L, 1);
}

/* tokens: the dimension a launch may lower below the problem's (the token count), so that one compiled
 * kernel serves every batch up to the problem's; a dimension passed as a `dim` argument. The source
 * must not depend on it: emit does not see it (run_emit). */
static void read_tokens(lua_State *L, sp_template *t, int m)
{
    t->tokens = -1;
    const char *s = opt_string(L, t, m, "tokens", "tokens");
    if (!s) return;
    for (int d = 0; d < t->ndims; d++)
        if (strcmp(t->dims[d], s) == 0) t->tokens = d;
    int a = sp_template_arg_index(t, s);
    if (t->tokens < 0 || t->dim_optional[t->tokens] || a < 0 || t->args[a].role != SP_ROLE_DIM)
        vfail(L, t, "tokens '%.40s' must name a dimension without a default that is passed as a dim argument", s);
}

static void read_constraints(lua_State *L, sp_template *t, int m, int T)
{
    int ty = rawfield(L, m, "constraints"), cs = lua_gettop(L);
    lua_newtable(L);
    int fns = lua_gettop(L);
    size_t n = 0;
    if (ty != LUA_TNIL) {
        if (ty != LUA_TTABLE)
            vfail(L, t, "constraints must be a list of {why = ..., check = function} (got %s)", luaL_typename(L, cs));
        n = lua_rawlen(L, cs);
    }
    if (n > SP_MAX_CONSTRAINTS) vfail(L, t, "constraints has %zu entries (at most %d)", n, SP_MAX_CONSTRAINTS);
    if (n) {
        t->why = calloc(n, sizeof *t->why);
        if (!t->why) sp_sandbox_nomem(L);
    }
    for (int i = 0; i < (int)n; i++) {
        if (lua_rawgeti(L, cs, i + 1) != LUA_TTABLE)
            vfail(L, t, "constraints[%d] must be a table {why = \"...\", check = function(c, gpu, p)} (got %s)",
                  i + 1, luaL_typename(L, -1));
        int e = lua_gettop(L);
        if (rawfield(L, e, "why") != LUA_TSTRING || lua_rawlen(L, -1) == 0)
            vfail(L, t, "constraints[%d].why must be a non-empty string", i + 1);
        t->why[i] = dup_or_raise(L, lua_tostring(L, -1));
        t->nconstraints = i + 1;
        lua_pop(L, 1);
        if (rawfield(L, e, "check") != LUA_TFUNCTION)
            vfail(L, t, "constraints[%d].check must be a function(c, gpu, p) (got %s)", i + 1, luaL_typename(L, -1));
        lua_rawseti(L, fns, i + 1);
        lua_pop(L, 1);
    }
    lua_pushvalue(L, fns);
    lua_rawseti(L, T, SP_T_CONSTRAINTS);
    lua_settop(L, cs - 1);
}

static void read_functions(lua_State *L, sp_template *t, int m, int T)
{
    int ty = rawfield(L, m, "kernel");
    if (ty == LUA_TSTRING) {
        if (!is_ident(lua_tostring(L, -1), 127))
            vfail(L, t, "kernel '%.60s' must be a C identifier of at most 127 characters", lua_tostring(L, -1));
    } else if (ty != LUA_TFUNCTION) {
        vfail(L, t, "kernel must be a function(c, gpu) or a string naming the entry point (got %s)",
              luaL_typename(L, -1));
    }
    lua_rawseti(L, T, SP_T_KERNEL);
    if (rawfield(L, m, "launch") != LUA_TFUNCTION)
        vfail(L, t, "launch must be a function(c, p, gpu) returning {grid = ..., block = ..., smem = ...} (got %s)",
              luaL_typename(L, -1));
    lua_rawseti(L, T, SP_T_LAUNCH);
    if (rawfield(L, m, "emit") != LUA_TFUNCTION)
        vfail(L, t, "emit must be a function(c, p, gpu) returning CUDA C source (got %s)", luaL_typename(L, -1));
    lua_rawseti(L, T, SP_T_EMIT);
    ty = rawfield(L, m, "options");
    if (ty == LUA_TTABLE) {
        int o = lua_gettop(L);
        size_t n = lua_rawlen(L, o);
        if (n > SP_MAX_OPTIONS) vfail(L, t, "options has %zu entries (at most %d)", n, SP_MAX_OPTIONS);
        for (size_t i = 1; i <= n; i++) {
            if (lua_rawgeti(L, o, (lua_Integer)i) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
                vfail(L, t, "options[%zu] must be a non-empty string", i);
            lua_pop(L, 1);
        }
    } else if (ty != LUA_TNIL && ty != LUA_TFUNCTION) {
        vfail(L, t, "options must be a function(c, gpu) or a list of strings (got %s)", luaL_typename(L, -1));
    }
    lua_rawseti(L, T, SP_T_OPTIONS);
    ty = rawfield(L, m, "defaults");
    if (ty != LUA_TNIL && ty != LUA_TFUNCTION)
        vfail(L, t, "defaults must be a function(gpu) returning parameter values (got %s)", luaL_typename(L, -1));
    lua_rawseti(L, T, SP_T_DEFAULTS);
}

int sp_template_read_module(lua_State *L)
{
    load_ctx *x = lua_touserdata(L, 1);
    sp_template *t = x->t;
    luaL_checkstack(L, 40, NULL);
    /* the chunk named by the file it came from (Lua shows the tail of a long name) */
    const char *chunk = lua_pushfstring(L, "@%s", t->where);
    if (luaL_loadbufferx(L, x->src, x->len, chunk, "t") != LUA_OK) return lua_error(L);
    lua_remove(L, -2);
    lua_call(L, 0, 1);
    int m = lua_gettop(L);
    if (!lua_istable(L, m)) vfail(L, t, "must return a table (got %s)", luaL_typename(L, m));
    lua_createtable(L, 8, 0);
    int T = lua_gettop(L);
    read_meta(L, x, m);
    read_dims(L, t, m);
    read_params(L, t, m, T);
    read_args(L, t, m);
    read_ranges(L, t, m);
    read_tokens(L, t, m);
    read_constraints(L, t, m, T);
    read_functions(L, t, m, T);
    lua_pushvalue(L, T);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &sp_template_key);
    return 0;
}


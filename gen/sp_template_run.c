/* Running a loaded template: constraints, the space walk, rendering. */
#include "sp_template_internal.h"

#include "sp_status.h"
#include "sp_str.h"

#include <lauxlib.h>

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_ctx {
    sp_template *t;
    const sp_config *c;
    const sp_gpu_profile *gpu;
    const sp_problem *p;
    int constraint;       /* the constraint running (for messages), -1 when none */
    const char *stage;    /* "kernel", "launch", "emit", "options" (for messages) */
    /* check */
    int failed;
    /* space */
    sp_space_cb cb;
    void *ud;
    long long count;
    sp_config cur;
    int fixed;            /* the walk's first `fixed` parameters stay at cur's values (a subtree of the space) */
    int maxread;          /* the last parameter (position) the running constraint read; -1: none */
    int wrote;            /* a check wrote to the configuration (the walk then skips nothing after it) */
    /* emit */
    sp_kernel_src *out;
    int geometry_only;    /* kernel and launch, no source */
} run_ctx;

/* ---- what templates see: c, gpu, p ------------------------------------------------------- */

static int push_internal(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &sp_template_key);
    return lua_gettop(L);
}

static void set_int(lua_State *L, const char *k, long long v)
{
    lua_pushinteger(L, (lua_Integer)v);
    lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, int v)
{
    lua_pushboolean(L, v != 0);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *s, size_t max)
{
    lua_pushlstring(L, s, strnlen(s, max));
    lua_setfield(L, -2, k);
}

static int push_gpu(lua_State *L, const sp_gpu_profile *g)
{
    const sptune_gpu_info *i = &g->info;
    lua_createtable(L, 0, 24);
    set_str(L, "name", i->profile, sizeof i->profile);
    set_str(L, "display", i->name, sizeof i->name);
    set_str(L, "arch", i->arch, sizeof i->arch);
    set_int(L, "cc", i->cc_major * 10 + i->cc_minor);
    set_int(L, "cc_major", i->cc_major);
    set_int(L, "cc_minor", i->cc_minor);
    set_int(L, "sm_count", i->sm_count);
    set_int(L, "smem_per_block", i->smem_per_block_optin);
    set_int(L, "smem_per_sm", i->smem_per_sm);
    set_int(L, "regs_per_sm", i->regs_per_sm);
    set_int(L, "max_threads_per_sm", i->max_threads_per_sm);
    set_int(L, "l2_bytes", i->l2_bytes);
    set_int(L, "mem_bytes", (long long)i->total_mem_bytes);
    lua_pushnumber(L, i->mem_bandwidth_gbs);
    lua_setfield(L, -2, "mem_bandwidth_gbs");
    set_bool(L, "wgmma", g->has_wgmma);
    set_bool(L, "tma", g->has_tma);
    set_bool(L, "cluster", g->has_cluster);
    set_bool(L, "mma_sp", g->has_mma_sp);
    set_bool(L, "cp_async", g->has_cp_async);
    return lua_gettop(L);
}

static int push_problem(lua_State *L, const sp_problem *p)
{
    if (!p) {
        lua_pushnil(L);
        return lua_gettop(L);
    }
    lua_createtable(L, 0, p->n);
    for (int i = 0; i < p->n; i++) {
        double v = p->v[i];
        lua_pushlstring(L, p->name[i], strnlen(p->name[i], sizeof p->name[i]));
        if (v == floor(v) && fabs(v) < 9.2e18) lua_pushinteger(L, (lua_Integer)v);
        else lua_pushnumber(L, v);
        lua_rawset(L, -3);
    }
    return lua_gettop(L);
}

/* Sets every field of the config table at cfg (absolute) from idx; names/values are the first
 * stack slots of the parameter names and value lists. */
static void fill_config(lua_State *L, const sp_template *t, int cfg, int names, int values, const int *idx)
{
    for (int i = 0; i < t->nparams; i++) {
        lua_pushvalue(L, names + i);
        lua_rawgeti(L, values + i, idx[i] + 1);
        lua_rawset(L, cfg);
    }
}

/* Pushes the parameter names then the value lists (2 * nparams slots); returns the first. */
static int push_param_slots(lua_State *L, const sp_template *t, int T)
{
    luaL_checkstack(L, 2 * t->nparams + 20, NULL);
    lua_rawgeti(L, T, SP_T_NAMES);
    lua_rawgeti(L, T, SP_T_VALUES);
    int nt = lua_gettop(L) - 1, vt = nt + 1;
    int first = lua_gettop(L) + 1;
    for (int i = 0; i < t->nparams; i++) lua_rawgeti(L, nt, i + 1);
    for (int i = 0; i < t->nparams; i++) lua_rawgeti(L, vt, i + 1);
    return first;
}

static int push_config(lua_State *L, const sp_template *t, int T, const sp_config *c)
{
    int slots = push_param_slots(L, t, T);
    lua_createtable(L, 0, t->nparams);
    int cfg = lua_gettop(L);
    fill_config(L, t, cfg, slots, slots + t->nparams, c->idx);
    lua_replace(L, slots - 2); /* keep only the table */
    lua_settop(L, slots - 2);
    return slots - 2;
}

/* ---- constraints ------------------------------------------------------------------------- */

/* Runs the constraints in order; returns the index of the first that fails (leaving its reason,
 * a string or nil, on the stack when want_reason) or -1 when all pass. */
static int run_constraints(lua_State *L, run_ctx *x, int fns, int c, int g, int p, int want_reason)
{
    sp_template *t = x->t;
    for (int i = 0; i < t->nconstraints; i++) {
        x->constraint = i;
        x->maxread = -1;
        lua_rawgeti(L, fns, i + 1);
        lua_pushvalue(L, c);
        lua_pushvalue(L, g);
        lua_pushvalue(L, p);
        sp_sandbox_reset(&t->sb);
        lua_call(L, 3, 2);
        if (lua_type(L, -2) != LUA_TBOOLEAN)
            sp_sandbox_error(L, "%s: the check returned %s, not a boolean", t->where, luaL_typename(L, -2));
        if (lua_toboolean(L, -2)) {
            lua_pop(L, 2);
            continue;
        }
        x->constraint = -1;
        if (want_reason) {
            if (lua_type(L, -1) != LUA_TSTRING) {
                lua_pop(L, 1);
                lua_pushnil(L);
            }
            lua_remove(L, -2);
        } else {
            lua_pop(L, 2);
        }
        return i;
    }
    x->constraint = -1;
    return -1;
}

static int run_check(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, 1);
    luaL_checkstack(L, 20, NULL);
    int T = push_internal(L);
    lua_rawgeti(L, T, SP_T_CONSTRAINTS);
    int fns = lua_gettop(L);
    int c = push_config(L, x->t, T, x->c);
    int g = push_gpu(L, x->gpu);
    int p = push_problem(L, x->p);
    x->failed = run_constraints(L, x, fns, c, g, p, 1);
    if (x->failed < 0) lua_pushnil(L);
    return 1;
}

/* The template's defaults(gpu, problem): nil or a string of parameter values (problem nil when there is none). */
static int run_defaults(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, 1);
    luaL_checkstack(L, 10, NULL);
    int T = push_internal(L);
    if (lua_rawgeti(L, T, SP_T_DEFAULTS) != LUA_TFUNCTION) {
        lua_pushnil(L);
        return 1;
    }
    push_gpu(L, x->gpu);
    push_problem(L, x->p);
    sp_sandbox_reset(&x->t->sb);
    lua_call(L, 2, 1);
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
        sp_sandbox_error(L, "%s: defaults returned %s (must be nil or \"name=value,...\")", x->t->where,
                         luaL_typename(L, -1));
    return 1;
}

sptune_status sp_config_default_for(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_config *out)
{
    sp_config_default(t, out);
    if (!gpu) return SPTUNE_OK;
    run_ctx x = {.t = t, .gpu = gpu, .p = p, .constraint = -1};
    sptune_status st = sp_sandbox_pcall(&t->sb, run_defaults, &x, 1);
    if (st != SPTUNE_OK) return sp_wrap(st, "%s: the defaults for %s", t->where, gpu->info.profile);
    lua_State *L = t->sb.L;
    /* the string stays valid while on the stack; parsing runs no Lua */
    if (lua_type(L, -1) == LUA_TSTRING && (st = sp_config_parse(t, lua_tostring(L, -1), out)) != SPTUNE_OK) {
        sp_config_default(t, out);
        st = sp_fail(SPTUNE_ERR_TEMPLATE, "%s: the defaults for %s: %s", t->where, gpu->info.profile,
                     sptune_last_error());
    }
    lua_pop(L, 1);
    return st;
}

/* The space walk shows the constraints a watched configuration: reads go through __index, which notes
 * the last parameter (in declaration order) the running constraint read. A check is a function of
 * what it reads, so when it fails, every configuration that differs only in later parameters fails it
 * too, and the walk skips them (on twell-ffn's space, most of the raw product). Reading a key that is
 * not a parameter or iterating the configuration (in the sandbox's fixed order) counts as reading
 * everything; a write turns skipping off for that configuration (a later check may read what an
 * earlier one derived). rawget, next and # see an empty table here, and a check that would raise an
 * error only on skipped configurations is not run on them. Upvalues: the values, name -> position,
 * the run_ctx. */
static int watched_index(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, lua_upvalueindex(3));
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNUMBER) {
        int i = (int)lua_tointeger(L, -1);
        if (i > x->maxread) x->maxread = i;
    } else {
        x->maxread = x->t->nparams - 1;
    }
    lua_pop(L, 1);
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

static int watched_newindex(lua_State *L)
{
    ((run_ctx *)lua_touserdata(L, lua_upvalueindex(2)))->wrote = 1;   /* the walk skips nothing after it */
    lua_settop(L, 3);
    lua_rawset(L, lua_upvalueindex(1));
    return 0;
}

static int watched_pairs(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, lua_upvalueindex(2));
    x->maxread = x->t->nparams - 1;
    lua_settop(L, 0);
    lua_pushvalue(L, lua_upvalueindex(1));
    return sp_sandbox_pairs(L);
}

/* Pushes a watched view of the table at vals (absolute) for the walk x; returns its position. */
static int push_watched(lua_State *L, run_ctx *x, int vals, int names)
{
    const sp_template *t = x->t;
    lua_createtable(L, 0, t->nparams);   /* name -> position */
    for (int i = 0; i < t->nparams; i++) {
        lua_pushvalue(L, names + i);
        lua_pushinteger(L, i);
        lua_rawset(L, -3);
    }
    int pos = lua_gettop(L);
    lua_createtable(L, 0, 0);
    int view = lua_gettop(L);
    lua_createtable(L, 0, 3);
    lua_pushvalue(L, vals);
    lua_pushvalue(L, pos);
    lua_pushlightuserdata(L, x);
    lua_pushcclosure(L, watched_index, 3);
    lua_setfield(L, -2, "__index");
    lua_pushvalue(L, vals);
    lua_pushlightuserdata(L, x);
    lua_pushcclosure(L, watched_newindex, 2);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, vals);
    lua_pushlightuserdata(L, x);
    lua_pushcclosure(L, watched_pairs, 2);
    lua_setfield(L, -2, "__pairs");
    lua_setmetatable(L, view);
    return view;
}

static int run_space(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, 1);
    const sp_template *t = x->t;
    int T = push_internal(L);
    lua_rawgeti(L, T, SP_T_CONSTRAINTS);
    int fns = lua_gettop(L);
    int slots = push_param_slots(L, t, T);
    int g = push_gpu(L, x->gpu);
    int p = push_problem(L, x->p);
    lua_createtable(L, 0, t->nparams);
    int c = lua_gettop(L);
    int view = push_watched(L, x, c, slots);
    sp_config *cur = &x->cur;   /* set by the caller: zeros, or the fixed parameters' values */
    cur->nparams = t->nparams;
    for (;;) {
        /* Every field is written each time, so that a check that changes c changes nothing. */
        fill_config(L, t, c, slots, slots + t->nparams, cur->idx);
        x->wrote = 0;
        if (run_constraints(L, x, fns, view, g, p, 0) < 0) {
            x->count++;
            if (x->cb && x->cb(cur, x->ud)) break;
        } else if (!x->wrote) {
            if (x->maxread < x->fixed) break;   /* it fails whatever the parameters walked */
            for (int k = x->maxread + 1; k < t->nparams; k++) cur->idx[k] = t->params[k].nvalues - 1;
        }
        int k = t->nparams - 1; /* the odometer: the last parameter changes fastest */
        while (k >= x->fixed && ++cur->idx[k] == t->params[k].nvalues) cur->idx[k--] = 0;
        if (k < x->fixed) break;
    }
    return 0;
}

/* Appends " (in <what> for <config>)" to the thread's message. */
static sptune_status annotate(sptune_status st, const sp_template *t, const sp_config *c, const char *what)
{
    if (st != SPTUNE_ERR_TEMPLATE) return st;
    char old[3072];
    snprintf(old, sizeof old, "%s", sptune_last_error());
    char *cfg = sp_config_format(t, c);
    sp_fail(st, "%s (in %s for %s)", old, what, cfg ? cfg : "?");
    free(cfg);
    return st;
}

static sptune_status check_args(const sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p)
{
    if (!t || !gpu) return sp_fail(SPTUNE_ERR_INVALID, "no template or GPU profile given");
    if (!p) return SPTUNE_OK;
    if (p->n < 0 || p->n > SP_MAX_DIMS) return sp_fail(SPTUNE_ERR_INVALID, "bad problem (%d dimensions)", p->n);
    for (int i = 0; i < t->ndims; i++) {
        int found = 0;
        for (int j = 0; j < p->n && !found; j++) found = strncmp(p->name[j], t->dims[i], sizeof p->name[j]) == 0;
        if (!found) return sp_fail(SPTUNE_ERR_INVALID, "the problem has no dimension '%s' (%s needs it)", t->dims[i], t->name);
    }
    for (int j = 0; j < p->n; j++)
        if (!isfinite(p->v[j])) return sp_fail(SPTUNE_ERR_INVALID, "problem dimension %.23s is not finite", p->name[j]);
    return SPTUNE_OK;
}

sptune_status sp_template_check(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                                const sp_problem *problem, int *ok, char **why)
{
    if (ok) *ok = 0;
    if (why) *why = NULL;
    sptune_status st = check_args(t, gpu, problem);
    if (st == SPTUNE_OK) st = sp_config_validate(t, c);
    if (st != SPTUNE_OK) return st;
    run_ctx x = {.t = t, .c = c, .gpu = gpu, .p = problem, .constraint = -1, .failed = -1};
    st = sp_sandbox_pcall(&t->sb, run_check, &x, 1);
    if (st != SPTUNE_OK) {
        if (x.constraint < 0) return annotate(st, t, c, "the constraints");
        char what[600];
        snprintf(what, sizeof what, "constraint '%.500s'", t->why[x.constraint]);
        return annotate(st, t, c, what);
    }
    lua_State *L = t->sb.L;
    if (x.failed >= 0 && why) {
        const char *reason = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        *why = reason ? sp_asprintf("%s: %s", t->why[x.failed], reason) : sp_strdup(t->why[x.failed]);
        if (!*why) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    lua_pop(L, 1);
    if (ok && st == SPTUNE_OK) *ok = x.failed < 0;
    return st;
}

sptune_status sp_template_space(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *problem,
                                sp_space_cb cb, void *ud, long long *count)
{
    return sp_template_subspace(t, gpu, problem, NULL, 0, cb, ud, count);
}

sptune_status sp_template_subspace(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *problem,
                                   const int *prefix, int fixed, sp_space_cb cb, void *ud, long long *count)
{
    if (count) *count = 0;
    sptune_status st = check_args(t, gpu, problem);
    if (st != SPTUNE_OK) return st;
    if (fixed < 0 || fixed > t->nparams || (fixed > 0 && !prefix))
        return sp_fail(SPTUNE_ERR_INVALID, "a subspace of %d fixed parameters (of %d)", fixed, t->nparams);
    for (int k = 0; k < fixed; k++)
        if (prefix[k] < 0 || prefix[k] >= t->params[k].nvalues)
            return sp_fail(SPTUNE_ERR_INVALID, "value index %d of %s is out of range", prefix[k], t->params[k].name);
    run_ctx x = {.t = t, .gpu = gpu, .p = problem, .constraint = -1, .cb = cb, .ud = ud, .fixed = fixed};
    for (int k = 0; k < fixed; k++) x.cur.idx[k] = prefix[k];
    st = sp_sandbox_pcall(&t->sb, run_space, &x, 0);
    if (count) *count = x.count;
    if (st != SPTUNE_OK) {
        if (x.constraint < 0) return annotate(st, t, &x.cur, "the space walk");
        char what[600];
        snprintf(what, sizeof what, "constraint '%.500s'", t->why[x.constraint]);
        return annotate(st, t, &x.cur, what);
    }
    return SPTUNE_OK;
}

/* ---- rendering --------------------------------------------------------------------------- */

static int is_c_ident(const char *s, size_t n)
{
    if (n == 0 || n > 127 || strlen(s) != n || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

static const char *describe(lua_State *L, int idx, char *buf, size_t n)
{
    if (lua_type(L, idx) == LUA_TNUMBER) {
        if (lua_isinteger(L, idx)) snprintf(buf, n, "%lld", (long long)lua_tointeger(L, idx));
        else snprintf(buf, n, "%.17g", (double)lua_tonumber(L, idx));
    } else if (lua_type(L, idx) == LUA_TSTRING) {
        snprintf(buf, n, "'%.40s'", lua_tostring(L, idx));
    } else {
        snprintf(buf, n, "a %s", luaL_typename(L, idx));
    }
    return buf;
}

/* launch's grid/block/cluster: a list of 1 to 3 positive integers (missing entries are 1). generic (the
 * grid's): the target's name when it names no GPU model (sm_count 0: a grid sized by the SM count is 0). */
static void read_dim3(lua_State *L, const sp_template *t, int r, const char *field, int required, const char *generic,
                      unsigned out[3])
{
    char buf[64];
    lua_pushstring(L, field);
    int ty = lua_rawget(L, r);
    out[0] = out[1] = out[2] = 1;
    if (ty == LUA_TNIL && !required) { lua_pop(L, 1); return; }
    if (ty != LUA_TTABLE || lua_rawlen(L, -1) > 3)
        sp_sandbox_error(L, "%s: launch returned %s = %s (must be a list of 1 to 3 positive integers)", t->where,
                         field, ty == LUA_TNIL ? "nil" : describe(L, -1, buf, sizeof buf));
    for (int k = 0; k < 3; k++) {
        if (lua_rawgeti(L, -1, k + 1) != LUA_TNIL) {
            int isnum;
            lua_Integer v = lua_tointegerx(L, -1, &isnum);
            if (isnum && v == 0 && generic)
                sp_sandbox_error(L, "%s: launch returned %s[%d] = 0: its grid follows the SM count, which the target "
                                 "%s leaves unknown (name a GPU: --gpu auto, h100, h200 or rtx-pro-6000)", t->where,
                                 field, k + 1, generic);
            if (!isnum || v < 1 || v > INT_MAX)
                sp_sandbox_error(L, "%s: launch returned %s[%d] = %s (must be a positive integer)", t->where, field,
                                 k + 1, describe(L, -1, buf, sizeof buf));
            out[k] = (unsigned)v;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* Integer field `name` of the table at idx, in [lo, hi]. */
static lua_Integer int_field(lua_State *L, const sp_template *t, int idx, const char *what, const char *name,
                             lua_Integer lo, lua_Integer hi)
{
    char buf[64];
    int isnum = 0;
    lua_pushstring(L, name);
    lua_rawget(L, idx);
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    if (!isnum || v < lo || v > hi)
        sp_sandbox_error(L, "%s: launch returned %s.%s = %s (must be an integer from %lld to %lld)", t->where, what, name,
                         describe(L, -1, buf, sizeof buf), (long long)lo, (long long)hi);
    lua_pop(L, 1);
    return v;
}

/* launch's tmaps: {{arg = "X", rows =, cols =, box_rows =, box_cols =, swizzle =, rows_arg = (optional)}, ...}
 * (runtime/sp_kernel_src.h): each map describes the argument it names; the launcher passes the maps
 * after the template's declared arguments. The limits are the copy engine's. */
static void read_tmaps(lua_State *L, const sp_template *t, int r, sp_tmaps *out)
{
    char buf[64];
    lua_pushliteral(L, "tmaps");
    if (lua_rawget(L, r) == LUA_TNIL) { lua_pop(L, 1); return; }
    int m = lua_gettop(L);
    if (!lua_istable(L, m) || lua_rawlen(L, m) < 1 || lua_rawlen(L, m) > SP_MAX_TMAPS)
        sp_sandbox_error(L, "%s: launch returned tmaps that is not a list of 1 to %d tensor maps", t->where, SP_MAX_TMAPS);
    out->nargs = t->nargs;
    out->n = (int)lua_rawlen(L, m);
    for (int i = 0; i < out->n; i++) {
        sp_tmap_spec *s = &out->v[i];
        if (lua_rawgeti(L, m, i + 1) != LUA_TTABLE) sp_sandbox_error(L, "%s: launch returned tmaps[%d], not a table", t->where, i + 1);
        int e = lua_gettop(L);
        lua_pushliteral(L, "arg");
        lua_rawget(L, e);
        s->arg = lua_type(L, -1) == LUA_TSTRING ? sp_template_arg_index(t, lua_tostring(L, -1)) : -1;
        if (s->arg < 0 || !sp_arg_is_pointer(&t->args[s->arg]))
            sp_sandbox_error(L, "%s: launch returned tmaps[%d].arg = %s, not the name of a pointer argument the template declares",
                             t->where, i + 1, describe(L, -1, buf, sizeof buf));
        lua_pop(L, 1);
        s->rows = (unsigned long long)int_field(L, t, e, "tmaps[i]", "rows", 1, (lua_Integer)1 << 32);
        s->cols = (unsigned long long)int_field(L, t, e, "tmaps[i]", "cols", 1, (lua_Integer)1 << 32);
        s->box_rows = (unsigned)int_field(L, t, e, "tmaps[i]", "box_rows", 1, 256);
        s->box_cols = (unsigned)int_field(L, t, e, "tmaps[i]", "box_cols", 1, 256);
        s->swizzle = (unsigned)int_field(L, t, e, "tmaps[i]", "swizzle", 0, 128);
        if (s->swizzle != 0 && s->swizzle != 32 && s->swizzle != 64 && s->swizzle != 128)
            sp_sandbox_error(L, "%s: launch returned tmaps[%d].swizzle = %u (0, 32, 64 or 128)", t->where, i + 1, s->swizzle);
        if (s->swizzle && s->box_cols * 2 > s->swizzle)
            sp_sandbox_error(L, "%s: launch returned tmaps[%d]: a box row of %u bytes is wider than its %u-byte swizzle",
                             t->where, i + 1, s->box_cols * 2, s->swizzle);
        s->rows_arg = -1;
        s->rows_arg_u64 = 0;
        lua_pushliteral(L, "rows_arg");
        if (lua_rawget(L, e) != LUA_TNIL) {
            s->rows_arg = lua_type(L, -1) == LUA_TSTRING ? sp_template_arg_index(t, lua_tostring(L, -1)) : -1;
            const sp_arg *a = s->rows_arg >= 0 ? &t->args[s->rows_arg] : NULL;
            if (!a || sp_arg_is_pointer(a) || (a->type != SP_ARG_I32 && a->type != SP_ARG_U64))
                sp_sandbox_error(L, "%s: launch returned tmaps[%d].rows_arg = %s, not the name of an i32 or u64 argument "
                                 "passed by value", t->where, i + 1, describe(L, -1, buf, sizeof buf));
            s->rows_arg_u64 = a->type == SP_ARG_U64;
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
}

static void read_launch(lua_State *L, const sp_template *t, int r, const char *generic, sp_kernel_stage *out)
{
    char buf[64];
    if (!lua_istable(L, r))
        sp_sandbox_error(L, "%s: launch returned %s, not a table {grid = {x, y, z}, block = {x, y, z}, smem = bytes}",
                         t->where, describe(L, r, buf, sizeof buf));
    read_dim3(L, t, r, "grid", 1, generic, out->grid);
    read_dim3(L, t, r, "block", 1, NULL, out->block);
    read_dim3(L, t, r, "cluster", 0, NULL, out->cluster);
    lua_pushliteral(L, "smem");
    if (lua_rawget(L, r) != LUA_TNIL) {
        int isnum;
        lua_Integer v = lua_tointegerx(L, -1, &isnum);
        if (!isnum || v < 0 || v > (lua_Integer)UINT_MAX)
            sp_sandbox_error(L, "%s: launch returned smem = %s (must be a non-negative integer of bytes)", t->where,
                             describe(L, -1, buf, sizeof buf));
        out->smem = (unsigned)v;
    }
    lua_pop(L, 1);
    read_tmaps(L, t, r, &out->tmaps);
    /* args = n: the kernel takes the first n declared arguments (the rest are other kernels' of the pipeline, or
       of other configurations): its tensor maps come right after them */
    lua_pushliteral(L, "args");
    if (lua_rawget(L, r) != LUA_TNIL) {
        int isnum;
        lua_Integer v = lua_tointegerx(L, -1, &isnum);
        if (!isnum || v < 1 || v > t->nargs)
            sp_sandbox_error(L, "%s: launch returned args = %s (must be an integer from 1 to the %d declared arguments)",
                             t->where, describe(L, -1, buf, sizeof buf), t->nargs);
        out->tmaps.nargs = (int)v;
    }
    lua_pop(L, 1);
    /* pdl = true: the template vouches that the kernel waits for the stream's previous kernel before it
       touches memory (griddepcontrol.wait first): a kernel without it would race, so only a boolean */
    lua_pushliteral(L, "pdl");
    int ty = lua_rawget(L, r);
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
        sp_sandbox_error(L, "%s: launch returned pdl = %s (must be true or false)", t->where, describe(L, -1, buf, sizeof buf));
    out->pdl = lua_toboolean(L, -1);
    lua_pop(L, 1);
}

/* p without the token dimension (what emit sees and the source's opening comment names). */
static const sp_problem *without_tokens(const sp_template *t, const sp_problem *p, sp_problem *out)
{
    out->n = 0;
    for (int i = 0; i < p->n; i++)
        if (i != t->tokens) {
            memcpy(out->name[out->n], p->name[i], sizeof out->name[0]);
            out->v[out->n++] = p->v[i];
        }
    return out;
}

static int run_emit(lua_State *L)
{
    run_ctx *x = lua_touserdata(L, 1);
    sp_template *t = x->t;
    sp_kernel_src *out = x->out;
    char buf[64];
    luaL_checkstack(L, 30, NULL);
    int T = push_internal(L);
    int c = push_config(L, t, T, x->c);
    int g = push_gpu(L, x->gpu);
    int p = push_problem(L, x->p);
    /* emit sees the problem without the token count: one source serves every batch up to the problem's */
    sp_problem fixed;
    int pe = p;
    if (x->p && t->tokens >= 0) pe = push_problem(L, without_tokens(t, x->p, &fixed));

    x->stage = "kernel";
    if (lua_rawgeti(L, T, SP_T_KERNEL) == LUA_TFUNCTION) {
        lua_pushvalue(L, c);
        lua_pushvalue(L, g);
        sp_sandbox_reset(&t->sb);
        lua_call(L, 2, 1);
    }
    /* A name, or a list of names: a pipeline of kernels launched in order. */
    int nk = 1, list = lua_istable(L, -1);
    if (list) {
        nk = (int)lua_rawlen(L, -1);
        if (nk < 1 || nk > SP_MAX_KERNELS)
            sp_sandbox_error(L, "%s: kernel returned a list of %d names (1 to %d)", t->where, nk, SP_MAX_KERNELS);
    }
    sp_kernel_stage *st = out->stage; /* zeroed: no problem, no geometry */
    for (int i = 0; i < nk; i++) {
        size_t n = 0;
        if (list) lua_rawgeti(L, -1, i + 1);
        const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
        if (!name || !is_c_ident(name, n))
            sp_sandbox_error(L, "%s: kernel returned %s (must be a C identifier of at most 127 characters)", t->where,
                             describe(L, -1, buf, sizeof buf));
        for (int j = 0; j < i; j++)
            if (strcmp(st[j].kernel, name) == 0) sp_sandbox_error(L, "%s: kernel %s named twice", t->where, name);
        memcpy(st[i].kernel, name, n + 1);
        if (list) lua_pop(L, 1);
    }
    lua_pop(L, 1);

    if (x->p) {
        x->stage = "launch";
        lua_rawgeti(L, T, SP_T_LAUNCH);
        lua_pushvalue(L, c);
        lua_pushvalue(L, p);
        lua_pushvalue(L, g);
        sp_sandbox_reset(&t->sb);
        lua_call(L, 3, 1);
        int r = lua_gettop(L);
        const char *generic = x->gpu->info.sm_count > 0 ? NULL : x->gpu->info.arch;
        if (!list) {
            read_launch(L, t, r, generic, &st[0]);
        } else {
            if (!lua_istable(L, r) || (int)lua_rawlen(L, r) != nk)
                sp_sandbox_error(L, "%s: launch must return a list of %d launch tables, one per kernel", t->where, nk);
            for (int i = 0; i < nk; i++) {
                lua_rawgeti(L, r, i + 1);
                read_launch(L, t, lua_gettop(L), generic, &st[i]);
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
    out->nkernels = nk;
    if (x->geometry_only) {
        x->stage = NULL;
        return 0;
    }

    x->stage = "emit";
    lua_rawgeti(L, T, SP_T_EMIT);
    lua_pushvalue(L, c);
    lua_pushvalue(L, pe);
    lua_pushvalue(L, g);
    sp_sandbox_reset(&t->sb);
    lua_call(L, 3, 1);
    if (lua_type(L, -1) != LUA_TSTRING)
        sp_sandbox_error(L, "%s: emit returned %s, not a string of CUDA C source", t->where, describe(L, -1, buf, sizeof buf));
    size_t n = 0;
    const char *src = lua_tolstring(L, -1, &n);
    if (strlen(src) != n) sp_sandbox_error(L, "%s: emit returned source with a NUL byte", t->where);
    int s = lua_gettop(L);

    x->stage = "options";
    if (lua_rawgeti(L, T, SP_T_OPTIONS) == LUA_TFUNCTION) {
        lua_pushvalue(L, c);
        lua_pushvalue(L, g);
        sp_sandbox_reset(&t->sb);
        lua_call(L, 2, 1);
        int o = lua_gettop(L);
        if (!lua_isnil(L, o)) {
            if (!lua_istable(L, o) || lua_rawlen(L, o) > SP_MAX_OPTIONS)
                sp_sandbox_error(L, "%s: options returned %s (must be a list of at most %d strings)", t->where,
                                 describe(L, o, buf, sizeof buf), SP_MAX_OPTIONS);
            for (size_t i = 1; i <= lua_rawlen(L, o); i++) {
                if (lua_rawgeti(L, o, (lua_Integer)i) != LUA_TSTRING || lua_rawlen(L, -1) == 0 ||
                    strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))
                    sp_sandbox_error(L, "%s: options[%zu] must be a non-empty string (got %s)", t->where, i,
                                     describe(L, -1, buf, sizeof buf));
                lua_pop(L, 1);
            }
        }
    }
    x->stage = NULL;
    lua_pushvalue(L, s);
    lua_insert(L, -2);
    return 2; /* source, options (nil or a list of strings) */
}

/* Runs kernel, launch and (unless geometry_only) emit and options for c on problem into out; on success
 * with the source, the source and options are left on the Lua stack. */
static sptune_status render(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu, const sp_problem *problem,
                            sp_kernel_src *out, int geometry_only)
{
    memset(out, 0, sizeof *out);
    sptune_status st = check_args(t, gpu, problem);
    if (st == SPTUNE_OK) st = sp_config_validate(t, c);
    if (st != SPTUNE_OK) return st;
    run_ctx x = {.t = t, .c = c, .gpu = gpu, .p = problem, .constraint = -1, .out = out,
                 .geometry_only = geometry_only};
    st = sp_sandbox_pcall(&t->sb, run_emit, &x, geometry_only ? 0 : 2);
    if (st != SPTUNE_OK) {
        memset(out, 0, sizeof *out);
        return annotate(st, t, c, x.stage ? x.stage : geometry_only ? "launch" : "emit");
    }
    return SPTUNE_OK;
}

sptune_status sp_template_geometry(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                                   const sp_problem *problem, sp_kernel_src *out)
{
    if (!out || !problem) return sp_fail(SPTUNE_ERR_INVALID, "sp_template_geometry: no problem or no output");
    return render(t, c, gpu, problem, out, 1);
}

sptune_status sp_template_emit(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                               const sp_problem *problem, sp_kernel_src *out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sp_template_emit: no output");
    sptune_status st = render(t, c, gpu, problem, out, 0);
    if (st != SPTUNE_OK) return st;
    lua_State *L = t->sb.L;
    size_t n;
    const char *src = lua_tolstring(L, -2, &n);
    /* Every generated source opens with where it comes from: the op, its kernels, the
     * configuration and problem, the template's content hash and the sptune version. */
    sp_problem fixed;
    char *cfg = sp_config_format(t, c);
    char *prob = !problem ? NULL : sp_problem_format(t->tokens >= 0 ? without_tokens(t, problem, &fixed) : problem);
    sp_buf head = {0};
    sp_buf_printf(&head, "/* sptune %s %s: %s", SPTUNE_VERSION_STRING, t->name, out->stage[0].kernel);
    for (int i = 1; i < out->nkernels; i++) sp_buf_printf(&head, ", %s", out->stage[i].kernel);
    sp_buf_printf(&head, "\n * generated from %s (content %s) for %s\n * configuration %s\n * problem %s%s%s%s\n"
                  " * Do not edit: change the template. */\n",
                  t->path, t->hash, gpu->info.arch, cfg ? cfg : "?", prob ? prob : "(none: no launch geometry)",
                  prob && t->tokens >= 0 ? " (" : "", prob && t->tokens >= 0 ? t->dims[t->tokens] : "",
                  prob && t->tokens >= 0 ? " at launch)" : "");
    free(cfg);
    free(prob);
    sp_buf_append(&head, src, n);
    out->source = head.oom ? NULL : head.data;
    if (!out->source) sp_buf_free(&head);
    size_t nopt = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
    out->options = calloc(nopt + 1, sizeof *out->options);
    int oom = !out->source || !out->options;
    for (size_t i = 0; !oom && i < nopt; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        out->options[i] = sp_strdup(lua_tostring(L, -1));
        lua_pop(L, 1);
        if (!out->options[i]) oom = 1;
        else out->noptions = (int)i + 1;
    }
    lua_pop(L, 2);
    if (oom) {
        sp_kernel_src_free(out);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory rendering %s", t->where);
    }
    return SPTUNE_OK;
}

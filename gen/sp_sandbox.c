/* The Lua sandbox: limited memory and instructions, a safe subset of the standard library. */
#include "sp_sandbox.h"

#include "sp_status.h"

#include <lauxlib.h>
#include <lualib.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The count hook runs every HOOK_STEP VM instructions. */
#define HOOK_STEP 1000
/* Finalizers still get this many instructions when the state closes. */
#define CLOSE_BUDGET 10000000LL

static const char loaded_key = 'L';   /* registry: lib modules loaded by require() */
static const char loading_key = 'l';  /* marks a module whose chunk is running */

sp_sandbox *sp_sandbox_of(lua_State *L) { return *(sp_sandbox **)lua_getextraspace(L); }

int sp_sandbox_error(lua_State *L, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lua_pushstring(L, msg);
    return lua_error(L);
}

int sp_sandbox_nomem(lua_State *L)
{
    sp_sandbox_of(L)->sys_oom = 1;
    lua_pushliteral(L, "out of memory");
    return lua_error(L);
}

/* ---- limits ----------------------------------------------------------------------------- */

static void *sb_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sp_sandbox *sb = ud;
    size_t old = ptr ? osize : 0; /* for a new block, osize is a type tag */
    if (nsize == 0) {
        free(ptr);
        sb->mem_used -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > sb->mem_limit - sb->mem_used) return NULL; /* the limit */
    void *p = realloc(ptr, nsize);
    if (!p) {
        sb->sys_oom = 1;
        return NULL;
    }
    sb->mem_used = sb->mem_used - old + nsize;
    return p;
}

static void sb_hook(lua_State *L, lua_Debug *ar)
{
    sp_sandbox *sb = sp_sandbox_of(L);
    (void)ar;
    if (!sb->tripped) {
        sb->count += HOOK_STEP;
        if (sb->count <= sb->max_instructions) return;
        /* From now on every instruction fails, so that a pcall in the template cannot go on. */
        sb->tripped = 1;
        lua_sethook(L, sb_hook, LUA_MASKCOUNT, 1);
    }
    luaL_where(L, 0);
    lua_pushfstring(L, "instruction limit exceeded (%I)", (lua_Integer)sb->max_instructions);
    lua_concat(L, 2);
    lua_error(L);
}

void sp_sandbox_reset(sp_sandbox *sb)
{
    sb->count = 0;
    if (sb->tripped) {
        sb->tripped = 0;
        lua_sethook(sb->L, sb_hook, LUA_MASKCOUNT, HOOK_STEP);
    }
}

static int sb_panic(lua_State *L)
{
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
    fprintf(stderr, "sptune: unprotected Lua error (a bug in sptune): %s\n", msg);
    abort();
}

/* ---- error messages ---------------------------------------------------------------------- */

/* Does msg start with a "chunk:line:" position? */
static int has_position(const char *msg)
{
    const char *colon = strchr(msg, ':');
    if (!colon || colon == msg) return 0;
    for (const char *p = msg; p < colon; p++)
        if (isspace((unsigned char)*p)) return 0;
    const char *p = colon + 1;
    if (!isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p)) p++;
    return *p == ':';
}

/* Message handler: makes the error a string and makes sure it says where ("file:line: msg"). */
static int sb_msgh(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING) {
        if (!(luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING))
            lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    } else {
        lua_pushvalue(L, 1);
    }
    if (has_position(lua_tostring(L, -1))) return 1;
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
        lua_insert(L, -2);
        lua_concat(L, 2);
        break;
    }
    return 1;
}

/* ---- the library ------------------------------------------------------------------------- */

static int lib_name(const char *name, const char **ident)
{
    if (strncmp(name, "lib.", 4) != 0) return 0;
    const char *s = name + 4;
    if (!(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
    if (strlen(s) > 48) return 0;
    *ident = s;
    return 1;
}

/* require("lib.<name>"): templates/lib/<name>.lua, loaded once per state, as text only. */
static int sb_require(lua_State *L)
{
    sp_sandbox *sb = sp_sandbox_of(L);
    const char *name = luaL_checkstring(L, 1), *ident;
    if (!lib_name(name, &ident))
        return luaL_error(L, "require: only lib.* modules from templates/lib may be loaded (got '%s')", name);
    lua_settop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &loaded_key); /* 2 */
    lua_pushvalue(L, 1);
    if (lua_rawget(L, 2) != LUA_TNIL) {
        if (lua_touserdata(L, -1) == (void *)&loading_key)
            return luaL_error(L, "require: '%s' requires itself (circular require)", name);
        return 1;
    }
    lua_pop(L, 1);
    char path[96];
    snprintf(path, sizeof path, "templates/lib/%s.lua", ident);
    const sp_tfile *f = NULL;
    for (int i = 0; i < sb->nlibs && !f; i++)
        if (strcmp(sb->libs[i].path, path) == 0) f = &sb->libs[i];
    if (!f) return luaL_error(L, "require: module '%s' not found (no %s)", name, path);

    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, (void *)&loading_key);
    lua_rawset(L, 2);
    /* the chunk named by the file it came from (Lua shows the tail of a long name) */
    int rc = luaL_loadbufferx(L, f->data, f->len, lua_pushfstring(L, "@%s", f->where ? f->where : path), "t");
    lua_remove(L, -2);
    if (rc == LUA_OK) {
        lua_pushvalue(L, 1);
        rc = lua_pcall(L, 1, 1, 0);
    }
    if (rc != LUA_OK) { /* forget the marker, then pass the error on */
        if (rc == LUA_ERRMEM) sb->mem_hit = 1;
        lua_pushvalue(L, 1);
        lua_pushnil(L);
        lua_rawset(L, 2);
        return lua_error(L);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, 2);
    return 1;
}

/* cuda_file("<name>"): the text of templates/lib/<name>.cuh less its final newline, for CUDA that no placeholder
 * touches (the file stays CUDA an editor and a reviewer read as such; Lua only places it). */
static int sb_cuda_file(lua_State *L)
{
    sp_sandbox *sb = sp_sandbox_of(L);
    const char *name = luaL_checkstring(L, 1);
    int ok = *name && strlen(name) <= 48;
    for (const char *p = name; *p && ok; p++) ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok) return luaL_error(L, "cuda_file: a name of letters, digits and _ (templates/lib/<name>.cuh; got '%s')", name);
    char path[96];
    snprintf(path, sizeof path, "templates/lib/%s.cuh", name);
    for (int i = 0; i < sb->nlibs; i++) {
        if (strcmp(sb->libs[i].path, path) != 0) continue;
        size_t n = sb->libs[i].len;
        if (n > 0 && sb->libs[i].data[n - 1] == '\n') n--;
        lua_pushlstring(L, sb->libs[i].data, n);
        return 1;
    }
    return luaL_error(L, "cuda_file: no %s", path);
}

/* pairs() in a fixed order: numbers (ascending), then strings (bytewise), then false, true,
 * then any other keys (in table order: those cannot be ordered). __pairs is honoured. */
typedef struct sb_key {
    int rank;
    int isint;
    lua_Integer i;
    lua_Number n;
    const char *s;
    size_t len;
    lua_Integer pos;
} sb_key;

static int cmp_key(const void *pa, const void *pb)
{
    const sb_key *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    int c = 0;
    if (a->rank == 0) {
        if (a->isint && b->isint) c = a->i < b->i ? -1 : a->i > b->i;
        else {
            lua_Number x = a->isint ? (lua_Number)a->i : a->n, y = b->isint ? (lua_Number)b->i : b->n;
            c = x < y ? -1 : x > y ? 1 : (a->isint ? -1 : 1) * (a->isint != b->isint);
        }
    } else if (a->rank == 1) {
        size_t m = a->len < b->len ? a->len : b->len;
        c = memcmp(a->s, b->s, m);
        if (c == 0) c = a->len < b->len ? -1 : a->len > b->len;
    } else if (a->rank == 2) {
        c = a->i < b->i ? -1 : a->i > b->i;
    }
    if (c == 0) c = a->pos < b->pos ? -1 : a->pos > b->pos;
    return c;
}

static int sb_pairs_next(lua_State *L)
{
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(3)) + 1;
    if (lua_rawgeti(L, lua_upvalueindex(1), i) == LUA_TNIL) return 1;
    lua_pushinteger(L, i);
    lua_replace(L, lua_upvalueindex(3));
    lua_pushvalue(L, -1);
    lua_rawget(L, lua_upvalueindex(2));
    return 2;
}

int sp_sandbox_pairs(lua_State *L)
{
    luaL_checkany(L, 1);
    if (luaL_getmetafield(L, 1, "__pairs") != LUA_TNIL) {
        lua_pushvalue(L, 1);
        lua_call(L, 1, 3);
        return 3;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_newtable(L); /* 2: the keys, in table order */
    lua_Integer n = 0;
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawseti(L, 2, ++n);
    }
    sb_key *k = lua_newuserdatauv(L, (size_t)n * sizeof *k + 1, 0); /* 3 */
    for (lua_Integer j = 0; j < n; j++) {
        sb_key *e = &k[j];
        memset(e, 0, sizeof *e);
        e->pos = j + 1;
        switch (lua_rawgeti(L, 2, j + 1)) {
        case LUA_TNUMBER:
            e->rank = 0;
            e->isint = lua_isinteger(L, -1);
            if (e->isint) e->i = lua_tointeger(L, -1);
            else e->n = lua_tonumber(L, -1);
            break;
        case LUA_TSTRING:
            e->rank = 1;
            e->s = lua_tolstring(L, -1, &e->len); /* kept alive by the keys table */
            break;
        case LUA_TBOOLEAN:
            e->rank = 2;
            e->i = lua_toboolean(L, -1);
            break;
        default:
            e->rank = 3;
        }
        lua_pop(L, 1);
    }
    qsort(k, (size_t)n, sizeof *k, cmp_key);
    lua_createtable(L, (int)n, 0); /* 4: the keys, sorted */
    for (lua_Integer j = 0; j < n; j++) {
        lua_rawgeti(L, 2, k[j].pos);
        lua_rawseti(L, 4, j + 1);
    }
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, sb_pairs_next, 3);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* setmetatable without __gc: finalizers run with hooks off (no instruction limit), and a metatable
 * with a __gc field (any value) at this point is the only way to get one. */
static int sb_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed in templates");
        lua_pop(L, 1);
    }
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, 1);
    return 1;
}

static void remove_field(lua_State *L, const char *table, const char *field)
{
    if (lua_getglobal(L, table) == LUA_TTABLE) {
        lua_pushnil(L);
        lua_setfield(L, -2, field);
    }
    lua_pop(L, 1);
}

/* ---- C library calls the instruction count does not see ------------------------------------ */

/* Work done inside a C function, charged to the instruction budget (one unit per byte or matcher
 * step, estimated before the call): over the budget, the call is refused as an instruction limit. */
static void sb_charge(lua_State *L, double work, const char *what)
{
    sp_sandbox *sb = sp_sandbox_of(L);
    if (work < (double)(sb->max_instructions - sb->count)) {
        sb->count += (long long)work;
        return;
    }
    luaL_where(L, 1);
    lua_pushfstring(L, "instruction limit exceeded (%I) by %s", (lua_Integer)sb->max_instructions, what);
    lua_concat(L, 2);
    lua_error(L);
}

/* The wrapped library function (upvalue 1) on the caller's arguments, with all its results. */
static int call_original(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* string.rep: the result's length, and the count itself (an empty string repeated 2^60 times is
 * a 2^60-step loop in C). */
static int sb_rep(lua_State *L)
{
    size_t l = 0, lsep = 0;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n > 0) sb_charge(L, (double)n * (double)(l + lsep) + (double)n / 8, "string.rep");
    return call_original(L);
}

/* Lua's single-character classes (lstrlib.c semantics), for the cost estimate below. */
static int class_match(int c, int cl)
{
    int r;
    switch (tolower(cl)) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    default: return cl == c;
    }
    return isupper(cl) ? !r : r != 0;
}

/* c in the set p[0] = '[' .. ep[-1] = ']'. */
static int set_match(int c, const char *p, const char *ep)
{
    int yes = 1;
    p++;
    if (*p == '^') { yes = 0; p++; }
    for (const char *end = ep - 1; p < end; p++) {
        if (*p == '%' && p + 1 < end) {
            if (class_match(c, (unsigned char)*++p)) return yes;
        } else if (p + 2 < end && p[1] == '-') {
            if ((unsigned char)*p <= c && c <= (unsigned char)p[2]) return yes;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return yes;
        }
    }
    return !yes;
}

static int single_match(int c, const char *p, const char *ep)
{
    if (*p == '.') return 1;
    if (*p == '%') return class_match(c, (unsigned char)p[1]);
    if (*p == '[') return set_match(c, p, ep);
    return (unsigned char)*p == c;
}

/* The end of the single-character item at p ('x', '%x', '[...]'). */
static const char *item_end(const char *p, const char *pe)
{
    if (*p == '%') return p + 2 <= pe ? p + 2 : pe;
    if (*p != '[') return p + 1;
    const char *q = p + 1;
    if (q < pe && *q == '^') q++;
    do {
        if (q >= pe) return pe;
        if (*q == '%' && q + 1 < pe) q++;
        q++;
    } while (q < pe && *q != ']');
    return q < pe ? q + 1 : pe;
}

/* Pattern matching backtracks: a match attempt may try, for each quantified item (*, +, -), every
 * length of the longest run of subject characters that item matches, so an attempt costs up to the
 * product of those runs; an unanchored search attempts at every position where the first item
 * matches (everywhere when it may match empty). The runs and those positions are counted on the
 * subject (one pass per item, charged too) and the estimate charged to the instruction budget before
 * the call: "a*a*a*b" on a run of a's, "a.-b" on a's or ".-b" on a string without b are refused
 * before they start, while "%${([%w_]+)}" over a source costs about its length (identifiers are
 * short). %b counts as a run over the whole subject. A plain find (4th argument true) is linear. */
static int sb_pattern(lua_State *L)
{
    size_t n = 0, lp = 0;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *p = luaL_checklstring(L, 2, &lp), *pe = p + lp;
    const char *name = lua_tostring(L, lua_upvalueindex(2));
    double work = (double)n + (double)lp + 1;
    if (!(strcmp(name, "string.find") == 0 && lua_toboolean(L, 4))) {
        /* gmatch takes a leading '^' as a plain character, not as an anchor */
        int anchored = lp > 0 && *p == '^' && strcmp(name, "string.gmatch") != 0;
        double attempt = (double)lp + 1, starts = anchored ? 1 : (double)n + 1;
        int first = 1;
        for (const char *q = p + anchored; q < pe;) {
            if (*q == '(' || *q == ')') { q++; continue; }
            if (*q == '%' && q + 1 < pe && (q[1] == 'b' || q[1] == 'f')) {
                if (q[1] == 'b') attempt *= (double)n + 1;
                q = q[1] == 'b' ? (q + 4 <= pe ? q + 4 : pe) : item_end(q + 2 < pe ? q + 2 : pe, pe);
                first = 0;
                continue;
            }
            const char *e = item_end(q, pe);
            char quant = e < pe ? *e : 0;
            int multi = quant == '*' || quant == '+' || quant == '-';
            if (multi) {
                size_t run = 0, best = 0;
                for (size_t i = 0; i < n; i++) {
                    run = single_match((unsigned char)s[i], q, e) ? run + 1 : 0;
                    if (run > best) best = run;
                }
                attempt *= (double)best + 1;
                work += (double)n;
            }
            /* attempts start only where a first item that cannot match empty matches */
            if (first && !anchored && quant != '*' && quant != '-' && quant != '?') {
                double hits = 0;
                for (size_t i = 0; i < n; i++) hits += single_match((unsigned char)s[i], q, e);
                starts = hits + 1;
                work += (double)n;
            }
            first = 0;
            q = e + (quant == '*' || quant == '+' || quant == '-' || quant == '?');
        }
        work += starts * attempt;
    }
    sb_charge(L, work, name);
    return call_original(L);
}

/* Replaces string[name] by f with the original (and the name) as upvalues. */
static void wrap_string(lua_State *L, const char *name, lua_CFunction f)
{
    lua_getglobal(L, "string");
    lua_getfield(L, -1, name);
    lua_pushfstring(L, "string.%s", name);
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

static int sb_setup(lua_State *L)
{
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string},
        {LUA_TABLIBNAME, luaopen_table},   {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},   {NULL, NULL}};
    for (const luaL_Reg *l = libs; l->name; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
    static const char *const globals[] = {"dofile", "loadfile", "load", "loadstring", "print",
                                          "collectgarbage", "require", "module", NULL};
    for (const char *const *g = globals; *g; g++) {
        lua_pushnil(L);
        lua_setglobal(L, *g);
    }
    remove_field(L, "string", "dump");
    /* string.format needs no wrapper: Lua refuses widths and precisions over two digits */
    wrap_string(L, "rep", sb_rep);
    static const char *const matchers[] = {"find", "match", "gmatch", "gsub", NULL};
    for (const char *const *m = matchers; *m; m++) wrap_string(L, *m, sb_pattern);
    remove_field(L, "math", "random");
    remove_field(L, "math", "randomseed");
    lua_getglobal(L, "setmetatable");
    lua_pushcclosure(L, sb_setmetatable, 1);
    lua_setglobal(L, "setmetatable");
    lua_pushcfunction(L, sb_require);
    lua_setglobal(L, "require");
    lua_pushcfunction(L, sb_cuda_file);
    lua_setglobal(L, "cuda_file");
    lua_pushcfunction(L, sp_sandbox_pairs);
    lua_setglobal(L, "pairs");
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &loaded_key);
    return 0;
}

/* ---- life cycle and calls ---------------------------------------------------------------- */

sptune_status sp_sandbox_pcall(sp_sandbox *sb, lua_CFunction f, void *ud, int nresults)
{
    lua_State *L = sb->L;
    if (!lua_checkstack(L, 4)) return sp_fail(SPTUNE_ERR_NOMEM, "%s: out of memory (Lua stack)", sb->chunk);
    int base = lua_gettop(L);
    lua_pushcfunction(L, sb_msgh);
    lua_pushcfunction(L, f);
    lua_pushlightuserdata(L, ud);
    sp_sandbox_reset(sb);
    sb->sys_oom = 0;
    sb->mem_hit = 0;
    int rc = lua_pcall(L, 1, nresults, base + 1);
    if (rc == LUA_OK) {
        lua_remove(L, base + 1);
        return SPTUNE_OK;
    }
    sptune_status st;
    if (sb->sys_oom)
        st = sp_fail(SPTUNE_ERR_NOMEM, "%s: out of memory", sb->chunk);
    else if (rc == LUA_ERRMEM || sb->mem_hit)
        st = sp_fail(SPTUNE_ERR_TEMPLATE, "%s: not enough memory (the template memory limit is %zu bytes)",
                     sb->chunk, sb->mem_limit);
    else
        st = sp_fail(SPTUNE_ERR_TEMPLATE, "%s",
                     lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(error object is not a string)");
    lua_settop(L, base);
    return st;
}

sptune_status sp_sandbox_open(sp_sandbox *sb, const sp_sandbox_limits *limits, const char *chunk,
                              const sp_tfile *libs, int nlibs)
{
    memset(sb, 0, sizeof *sb);
    sb->chunk = chunk;
    sb->libs = libs;
    sb->nlibs = nlibs;
    sb->max_instructions = limits && limits->max_instructions > 0 ? limits->max_instructions
                                                                   : SP_SANDBOX_DEFAULT_INSTRUCTIONS;
    sb->mem_limit = limits && limits->max_memory > 0 ? limits->max_memory : SP_SANDBOX_DEFAULT_MEMORY;
    sb->L = lua_newstate(sb_alloc, sb);
    if (!sb->L) {
        if (sb->sys_oom) return sp_fail(SPTUNE_ERR_NOMEM, "%s: out of memory creating a Lua state", chunk);
        return sp_fail(SPTUNE_ERR_TEMPLATE, "%s: the template memory limit (%zu bytes) is too small for a Lua state",
                       chunk, sb->mem_limit);
    }
    *(sp_sandbox **)lua_getextraspace(sb->L) = sb;
    lua_atpanic(sb->L, sb_panic);
    lua_sethook(sb->L, sb_hook, LUA_MASKCOUNT, HOOK_STEP);
    sptune_status st = sp_sandbox_pcall(sb, sb_setup, NULL, 0);
    if (st != SPTUNE_OK) {
        sp_sandbox_close(sb);
        return sp_wrap(st, "cannot set up the template sandbox");
    }
    return SPTUNE_OK;
}

void sp_sandbox_close(sp_sandbox *sb)
{
    if (!sb->L) return;
    /* Finalizers the template set run now: give them a bounded budget. */
    sp_sandbox_reset(sb);
    if (sb->max_instructions > CLOSE_BUDGET) sb->count = sb->max_instructions - CLOSE_BUDGET;
    lua_close(sb->L);
    sb->L = NULL;
}

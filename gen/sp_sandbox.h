/* The Lua sandbox templates run in: a state with a memory limit (its own allocator), an
 * instruction limit (a count hook), only the base, string, table, math and utf8 libraries minus
 * everything that reaches outside (no io, os, debug, package, load, dofile, string.dump,
 * math.random), a require() that loads only templates/lib/<name>.lua as text, and a pairs()
 * that visits keys in a sorted order so that rendering cannot depend on hash order, and a
 * setmetatable() that refuses __gc (finalizers run with hooks off, out of the instruction limit).
 *
 * Every call from C into Lua goes through sp_sandbox_pcall: no Lua error ever unwinds past a C
 * frame of the caller. */
#ifndef SP_SANDBOX_H
#define SP_SANDBOX_H

#include "sp_template.h"
#include "sp_tsource.h"

#include <lua.h>

#define SP_SANDBOX_DEFAULT_INSTRUCTIONS 200000000LL
#define SP_SANDBOX_DEFAULT_MEMORY ((size_t)256 << 20)

typedef struct sp_sandbox {
    lua_State *L;
    const char *chunk;        /* template path, for messages ("templates/dense/gemm.lua") */
    size_t mem_used, mem_limit;
    long long max_instructions;
    long long count;          /* instructions since the last reset (in steps of the hook) */
    int tripped;              /* the instruction limit was hit: every instruction now fails */
    int sys_oom;              /* the system allocator failed (below the limit) */
    int mem_hit;              /* a memory error was re-raised as a plain error (require) */
    const sp_tfile *libs;     /* what require() may load (not owned) */
    int nlibs;
} sp_sandbox;

/* Opens the state. limits may be NULL; zero fields take the defaults. chunk and libs must outlive
 * the sandbox. The sandbox must not move in memory once open. */
sptune_status sp_sandbox_open(sp_sandbox *sb, const sp_sandbox_limits *limits, const char *chunk,
                              const sp_tfile *libs, int nlibs);
void sp_sandbox_close(sp_sandbox *sb);

/* Gives the next call into the template a full instruction budget. sp_sandbox_pcall does this;
 * protected functions that call into the template several times do it before each call. */
void sp_sandbox_reset(sp_sandbox *sb);

/* Runs f protected, with ud as a light userdata at index 1. On success f's nresults results are
 * on the stack (the caller pops them). On failure the stack is as before, the thread's error
 * message is set ("templates/x.lua:12: message") and the status is SPTUNE_ERR_TEMPLATE, or
 * SPTUNE_ERR_NOMEM when the system (not the template's limit) ran out of memory. */
sptune_status sp_sandbox_pcall(sp_sandbox *sb, lua_CFunction f, void *ud, int nresults);

/* The sandbox of a state (from inside a protected function). */
sp_sandbox *sp_sandbox_of(lua_State *L);
/* Raises a Lua error with a printf-formatted message (no position added). */
int sp_sandbox_error(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raises "out of memory" for a failed C allocation inside a protected function (SPTUNE_ERR_NOMEM). */
int sp_sandbox_nomem(lua_State *L);
/* The sandbox's pairs(t) (a lua_CFunction: t at index 1): keys in a fixed order (numbers, strings,
 * booleans, others), __pairs honoured. */
int sp_sandbox_pairs(lua_State *L);

#endif

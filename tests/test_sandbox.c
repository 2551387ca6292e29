/* The template sandbox: escapes are refused with clear errors, limits hold, errors name the line. */
#include "sp_template.h"
#include "sp_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define CHUNK "templates/test/x.lua"

/* A small valid template; `pre` runs at load time (line 1), `check` is the body of the one
 * constraint (line 3) and `emit` the body of emit (line 5). */
static char *make_src(const char *pre, const char *check, const char *emit)
{
    static const char *fmt =
        "%s\n"
        "return { name = 'x', dims = {'M'}, params = {{name = 'a', values = {1, 2, 3}}},\n"
        "  constraints = {{why = 'w', check = function(c, gpu, p) %s end}},\n"
        "  kernel = 'k', launch = function(c, p, gpu) return {grid = {1}, block = {32}} end,\n"
        "  emit = function(c, p, gpu) %s end }\n";
    size_t n = strlen(fmt) + strlen(pre) + strlen(check) + strlen(emit) + 1;
    char *s = malloc(n);
    snprintf(s, n, fmt, pre, check, emit);
    return s;
}

static sp_sandbox_limits small_limits(void)
{
    sp_sandbox_limits l = {.max_instructions = 200000, .max_memory = 8u << 20};
    return l;
}

/* Loads; returns the status and leaves the template (or NULL) in *out. */
static sp_sandbox_limits g_limits;

static sptune_status load3(const char *pre, const char *check, const char *emit, sp_template **out)
{
    char *src = make_src(pre, check, emit);
    sptune_status st = sp_template_load_source(CHUNK, src, &g_limits, out);
    free(src);
    return st;
}

/* Loading `pre` must fail with a message holding each of the given parts. */
static void refused_at_load(const char *pre, const char *part1, const char *part2)
{
    sp_template *t = NULL;
    sptune_status st = load3(pre, "return true", "return ''", &t);
    const char *msg = sptune_last_error();
    CHECK_MSG(st == SPTUNE_ERR_TEMPLATE, "%s: status %s", pre, sptune_status_name(st));
    CHECK_MSG(t == NULL, "%s: got a template", pre);
    CHECK_MSG(sp_test_has(msg, part1), "%s: message '%s' lacks '%s'", pre, msg, part1);
    if (part2) CHECK_MSG(sp_test_has(msg, part2), "%s: message '%s' lacks '%s'", pre, msg, part2);
    sp_template_free(t);
}

static void loads_fine(const char *pre)
{
    sp_template *t = NULL;
    sptune_status st = load3(pre, "return true", "return ''", &t);
    CHECK_MSG(st == SPTUNE_OK, "%s: %s", pre, sptune_last_error());
    sp_template_free(t);
}

static sp_gpu_profile gpu(void) { return sp_test_profile("h100"); }

static void test_escapes(void)
{
    refused_at_load("os.execute('touch /tmp/sptune_pwned')", CHUNK ":1:", "'os'");
    refused_at_load("local f = io.open('/etc/passwd')", CHUNK ":1:", "'io'");
    refused_at_load("local os = require('os')", CHUNK ":1:",
                    "require: only lib.* modules from templates/lib may be loaded (got 'os')");
    refused_at_load("require('../x')", CHUNK ":1:", "(got '../x')");
    refused_at_load("require('lib.../x')", CHUNK ":1:", "(got 'lib.../x')");
    refused_at_load("require('lib.nope')", CHUNK ":1:", "no templates/lib/nope.lua");
    refused_at_load("require(nil)", CHUNK ":1:", "bad argument #1 to 'require'");
    refused_at_load("local s = string.dump(function() end)", CHUNK ":1:", "'dump'");
    refused_at_load("local s = ('').dump(function() end)", CHUNK ":1:", "'dump'");
    refused_at_load("local f = load('\\27Lua\\84\\0')", CHUNK ":1:", "'load'");
    refused_at_load("local f = load('return 1')", CHUNK ":1:", "'load'");
    refused_at_load("dofile('/etc/passwd')", CHUNK ":1:", "'dofile'");
    refused_at_load("loadfile('/etc/passwd')", CHUNK ":1:", "'loadfile'");
    refused_at_load("print('hi')", CHUNK ":1:", "'print'");
    refused_at_load("collectgarbage()", CHUNK ":1:", "'collectgarbage'");
    refused_at_load("local x = math.random()", CHUNK ":1:", "'random'");
    refused_at_load("math.randomseed(1)", CHUNK ":1:", "'randomseed'");
    refused_at_load("debug.getinfo(1)", CHUNK ":1:", "'debug'");
    refused_at_load("package.loadlib('x', 'y')", CHUNK ":1:", "'package'");
    refused_at_load("local x = getmetatable('').__index.dump(print)", CHUNK ":1:", "'dump'");
    /* What stays: the safe subset. */
    loads_fine("assert(string.format('%d', 3) == '3' and table.concat({1, 2}, ',') == '1,2' and "
               "math.max(1, 2) == 2 and utf8.char(72) == 'H' and select('#', 1, 2) == 2)");
    loads_fine("assert(type(pcall) == 'function' and type(setmetatable) == 'function' and rawequal(1, 1))");
    loads_fine("assert(os == nil and io == nil and debug == nil and package == nil and load == nil)");

    /* A template given as bytecode is refused: text only. */
    sp_template *t = NULL;
    sp_sandbox_limits l = small_limits();
    CHECK_ST(sp_template_load_source(CHUNK, "\x1bLua\x54", &l, &t), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), "binary chunk"), "%s", sptune_last_error());
    CHECK(t == NULL);
}

static void test_instruction_limit(void)
{
    refused_at_load("while true do end", CHUNK ":1:", "instruction limit exceeded (200000)");
    refused_at_load("local function f() while true do end end f()", CHUNK ":1:", "instruction limit exceeded");
    /* A pcall in the template cannot swallow the limit. */
    refused_at_load("while true do pcall(function() while true do end end) end", "instruction limit exceeded", NULL);
    refused_at_load("for i = 1, 10 do pcall(function() while true do end end) end", "instruction limit exceeded", NULL);

    /* In a constraint and in emit; the budget is per call, so the template keeps working. */
    sp_template *t = NULL;
    CHECK_ST(load3("", "if c.a == 2 then while true do end end return true",
                   "if p and p.M == 7 then while true do end end return 'ok'", &t), SPTUNE_OK);
    if (!t) return;
    sp_gpu_profile g = gpu();
    sp_config c;
    int ok = -1;
    char *why = NULL;
    CHECK_ST(sp_config_parse(t, "a=2", &c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_ERR_TEMPLATE);
    const char *msg = sptune_last_error();
    CHECK_MSG(sp_test_has(msg, CHUNK ":3: instruction limit exceeded (200000)"), "%s", msg);
    CHECK_MSG(sp_test_has(msg, "constraint 'w'") && sp_test_has(msg, "a=2"), "%s", msg);
    long long n = -1;
    CHECK_ST(sp_template_space(t, &g, NULL, NULL, NULL, &n), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), "instruction limit exceeded"), "%s", sptune_last_error());
    CHECK_EQ(n, 1); /* a=1 was counted before a=2 failed */
    CHECK_ST(sp_config_parse(t, "a=1", &c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_OK);
    CHECK(ok == 1 && why == NULL);

    sp_problem p;
    sp_kernel_src k;
    CHECK_ST(sp_problem_parse(t, "M=7", &p), SPTUNE_OK);
    CHECK_ST(sp_template_emit(t, &c, &g, &p, &k), SPTUNE_ERR_TEMPLATE);
    msg = sptune_last_error();
    CHECK_MSG(sp_test_has(msg, CHUNK ":5: instruction limit exceeded") && sp_test_has(msg, "in emit"), "%s", msg);
    CHECK(k.source == NULL);
    CHECK_ST(sp_problem_parse(t, "M=8", &p), SPTUNE_OK);
    CHECK_ST(sp_template_emit(t, &c, &g, &p, &k), SPTUNE_OK);
    CHECK(k.source && strlen(k.source) > 3 && strcmp(k.source + strlen(k.source) - 3, "\nok") == 0);
    sp_kernel_src_free(&k);
    sp_template_free(t);

    /* Finalizers run without hooks (a loop there could not be stopped): __gc is refused. */
    refused_at_load("X = setmetatable({}, {__gc = function() while true do end end})", CHUNK ":1:",
                    "__gc metamethods are not allowed");
    refused_at_load("local mt = {__gc = true} X = setmetatable({}, mt) mt.__gc = function() while true do end end",
                    "__gc metamethods are not allowed", NULL);
    /* __gc added later does not make a finalizer (Lua 5.4 marks objects in setmetatable). */
    loads_fine("local mt = {} X = setmetatable({}, mt) mt.__gc = function() while true do end end X = nil");
    loads_fine("local t = setmetatable({}, {__index = function(t, k) return k end}) assert(t.q == 'q')");
}

static void test_memory_limit(void)
{
    g_limits.max_instructions = 100000000; /* the memory limit comes first */
    refused_at_load("local s = string.rep('x', 64 * 1024 * 1024)", "not enough memory", "8388608 bytes");
    refused_at_load("local t = {} for i = 1, 100000000 do t[i] = i end", "not enough memory", CHUNK);
    refused_at_load("local s = 'x' while true do s = s .. s end", "not enough memory", NULL);
    refused_at_load("local t = {} for i = 1, 1e9 do t[#t + 1] = tostring(i) .. 'abcdefgh' end", "not enough memory", NULL);
    refused_at_load("local s = string.rep('x', 1 << 50)", CHUNK, NULL);
    /* A template that catches the error still fails later or succeeds within the limit. */
    loads_fine("local ok = pcall(string.rep, 'x', 64 * 1024 * 1024) assert(not ok)");
    /* Deep recursion: a stack overflow error, no crash. */
    g_limits.max_memory = 256u << 20;
    refused_at_load("local function f() return 1 + f() end f()", "stack overflow", NULL);
    g_limits = small_limits();

    /* A limit too small for a Lua state is an error, not a crash. */
    sp_sandbox_limits tiny = {.max_instructions = 1000, .max_memory = 1024};
    sp_template *t = NULL;
    char *src = make_src("", "return true", "return ''");
    CHECK_ST(sp_template_load_source(CHUNK, src, &tiny, &t), SPTUNE_ERR_TEMPLATE);
    CHECK(t == NULL);
    free(src);
}

static void test_messages(void)
{
    refused_at_load("\n\nerror('boom')", CHUNK ":3: boom", NULL);
    refused_at_load("local x = nil; local y = x.field", CHUNK ":1: attempt to index a nil value", NULL);
    refused_at_load("error({})", CHUNK ":1: (error object is a table value)", NULL);
    refused_at_load("error('no position', 0)", CHUNK ":1: no position", NULL);
    refused_at_load("error(setmetatable({}, {__tostring = function() return 'custom' end}))", "custom", NULL);
    refused_at_load("local x = = 1", CHUNK ":1:", "unexpected symbol");

    sp_template *t = NULL;
    CHECK_ST(load3("", "return true", "error('emit failed')", &t), SPTUNE_OK);
    if (!t) return;
    sp_gpu_profile g = gpu();
    sp_config c;
    sp_kernel_src k;
    sp_config_default(t, &c);
    CHECK_ST(sp_template_emit(t, &c, &g, NULL, &k), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), CHUNK ":5: emit failed (in emit for a=1)"), "%s", sptune_last_error());
    sp_template_free(t);
}

/* Work inside C library calls is charged to the instruction budget: calls that would run for
 * minutes (or forever) are refused at once, ordinary ones pass. */
static void test_c_calls(void)
{
    sp_sandbox_limits saved = g_limits;
    g_limits.max_instructions = 100000000;
    g_limits.max_memory = 64u << 20;
    clock_t t0 = clock();
    refused_at_load("local s = string.rep('', 1 << 60)", "instruction limit exceeded", "by string.rep");
    refused_at_load("local s = ('ab'):rep(1 << 40, ',')", "instruction limit exceeded", "by string.rep");
    refused_at_load("local s = ('a'):rep(100000) local i = s:find('a*a*a*b')", "by string.find", CHUNK ":1:");
    refused_at_load("local s = ('a'):rep(1000000) local i = s:find('.-b')", "by string.find", NULL);
    refused_at_load("local s = ('x'):rep(200000) for a, b in s:gmatch('(x*)(x*)y') do end", "by string.gmatch", NULL);
    refused_at_load("local s = ('x'):rep(200000) local r = s:gsub('(.*)(.*)(.*)z', '')", "by string.gsub", NULL);
    refused_at_load("local s = ('a'):rep(40000) local i = s:find('a.-b')", "by string.find", NULL);
    refused_at_load("local s = ('^'):rep(20000) for x in s:gmatch('^.-b') do end", "by string.gmatch", NULL);
    refused_at_load("local s = ('a'):rep(30000) local i = s:find('a?.-b')", "by string.find", NULL);
    refused_at_load("local s = string.format('%99999d', 1)", "invalid conversion", NULL);
    double spent = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK_MSG(spent < 2.0, "refusals took %.2f s", spent);
    loads_fine("assert(('ab'):rep(3, '-') == 'ab-ab-ab' and ('x'):rep(0) == '' and ('x'):rep(-1) == '')\n"
               "local big = ('word ${name} '):rep(20000)\n"
               "local out, n = big:gsub('%${(%w+)}', {name = 'v'})\n"
               "assert(n == 20000 and not out:find('%$'))\n"
               "assert(('k=v,a=b'):gsub('(%w+)=(%w+)', '%2=%1') == 'v=k,b=a')\n"
               "assert(('  trim  '):match('^%s*(.-)%s*$') == 'trim' and ('a.b'):find('.', 1, true) == 2)\n"
               "assert(string.format('%5.2f|%-3d|%s', 1.5, 7, 'x') == ' 1.50|7  |x')\n"
               "assert(('x'):rep(100000):find('a*b*c', 1, true) == nil)\n"
               "assert(('%b()'):len() == 4 and ('f(a(b)c)'):match('%b()') == '(a(b)c)')");
    g_limits = saved;
}

static void test_sorted_pairs(void)
{
    loads_fine("local t = {zeta = 1, alpha = 2, [3] = 1, [1] = 1, mid = 3, [2.5] = 0, [true] = 1, [false] = 0}\n"
               "local o = {} for k in pairs(t) do o[#o + 1] = tostring(k) end\n"
               "assert(table.concat(o, ',') == '1,2.5,3,alpha,mid,zeta,false,true', table.concat(o, ','))");
    loads_fine("local t = setmetatable({}, {__pairs = function(t) return function(_, k) if not k then return 1, 'x' end end, t, nil end})\n"
               "local n = 0 for k, v in pairs(t) do n = n + 1 assert(k == 1 and v == 'x') end assert(n == 1)");
    loads_fine("local t = {a = 1, b = 2} local s = 0 for k, v in pairs(t) do t[k] = nil s = s + v end assert(s == 3)");
    refused_at_load("for k in pairs(nil) do end", "bad argument #1 to 'pairs'", NULL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void write_lib(const char *lib, const char *name, const char *text)
{
    char path[1400];
    snprintf(path, sizeof path, "%.1200s/%s.lua", lib, name);
    write_file(path, text);
}

static void test_require(void)
{
    const char *dir = sp_test_tmpdir("test_sandbox");
    char lib[1200];
    snprintf(lib, sizeof lib, "%.1100s/lib", dir);
    mkdir(lib, 0755);
    write_lib(lib, "helper", "local M = {}\nfunction M.twice(x) return 2 * x end\nM.loads = (M.loads or 0) + 1\nreturn M\n");
    write_lib(lib, "bad", "local M = {}\nerror('bad module')\nreturn M\n");
    write_lib(lib, "escape", "return os.getenv('HOME')\n");
    write_lib(lib, "self", "return require('lib.self')\n");
    write_lib(lib, "spin", "while true do end\n");
    write_lib(lib, "nothing", "local x = 1\n");
    write_lib(lib, "binary", "\x1bLua\x54");
    setenv("SPTUNE_TEMPLATES", dir, 1);

    loads_fine("local h = require('lib.helper') assert(h.twice(4) == 8)\n"
               "assert(require('lib.helper') == h) assert(h.loads == 1)");
    loads_fine("assert(require('lib.nothing') == true)");
    /* Errors name the file read (under SPTUNE_TEMPLATES), not its embedded-form path; Lua keeps the tail of a long
     * name, so the check is on the tail. */
    refused_at_load("require('lib.bad')", "/lib/bad.lua:2: bad module", NULL);
    CHECK_MSG(!sp_test_has(sptune_last_error(), "templates/lib/bad.lua"), "%s", sptune_last_error());
    refused_at_load("require('lib.escape')", "/lib/escape.lua:1:", "'os'");
    refused_at_load("require('lib.self')", "/lib/self.lua:1:", "circular require");
    refused_at_load("require('lib.spin')", "/lib/spin.lua:1: instruction limit exceeded", NULL);
    refused_at_load("require('lib.binary')", "binary chunk", NULL);
    /* A module that failed is not left half-loaded. */
    refused_at_load("local ok = pcall(require, 'lib.bad') require('lib.bad')", "/lib/bad.lua:2: bad module",
                    NULL);

    /* cuda_file: templates/lib/<name>.cuh less its final newline, by a plain name only */
    char cuh[1400];
    snprintf(cuh, sizeof cuh, "%.1200s/part.cuh", lib);
    write_file(cuh, "__device__ int sp_one(void) { return 1; }\n\n");
    loads_fine("assert(cuda_file('part') == '__device__ int sp_one(void) { return 1; }\\n')");
    refused_at_load("cuda_file('nope')", CHUNK ":1:", "cuda_file: no templates/lib/nope.cuh");
    refused_at_load("cuda_file('../part')", CHUNK ":1:", "cuda_file: a name of letters, digits and _");
    refused_at_load("cuda_file('part.cuh')", CHUNK ":1:", "(templates/lib/<name>.cuh; got 'part.cuh')");
    refused_at_load("cuda_file('helper')", CHUNK ":1:", "no templates/lib/helper.cuh");

    /* A lib module is part of the template's hash, and so is a .cuh file. */
    sp_template *t1 = NULL, *t2 = NULL;
    CHECK_ST(load3("", "return true", "return ''", &t1), SPTUNE_OK);
    write_lib(lib, "helper", "return {}\n");
    CHECK_ST(load3("", "return true", "return ''", &t2), SPTUNE_OK);
    if (t1 && t2) CHECK(strcmp(sp_template_hash(t1), sp_template_hash(t2)) != 0);
    if (t1) CHECK(strlen(sp_template_hash(t1)) == 64);
    sp_template *t3 = NULL;
    write_file(cuh, "__device__ int sp_two(void) { return 2; }\n");
    CHECK_ST(load3("", "return true", "return ''", &t3), SPTUNE_OK);
    if (t2 && t3) CHECK(strcmp(sp_template_hash(t2), sp_template_hash(t3)) != 0);
    sp_template_free(t3);
    sp_template_free(t1);
    sp_template_free(t2);

    setenv("SPTUNE_TEMPLATES", "/nonexistent/sptune/templates", 1);
    sp_template *t = NULL;
    CHECK_ST(load3("", "return true", "return ''", &t), SPTUNE_ERR_NOT_FOUND);
    CHECK_MSG(sp_test_has(sptune_last_error(), "SPTUNE_TEMPLATES"), "%s", sptune_last_error());
    unsetenv("SPTUNE_TEMPLATES");
}

int main(void)
{
    unsetenv("SPTUNE_TEMPLATES");
    g_limits = small_limits();
    clock_t t0 = clock();
    test_escapes();
    test_instruction_limit();
    test_memory_limit();
    test_messages();
    test_c_calls();
    test_sorted_pairs();
    test_require();
    printf("test_sandbox: %.2f s CPU\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return sp_test_done("test_sandbox");
}

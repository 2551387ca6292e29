/* Templates: validation, the space walk, checks, configurations, problems, rendering, and every
 * template of the embedded set against two GPU profiles. */
#include "sp_clock.h"
#include "sp_space.h"
#include "sp_template.h"
#include "sp_test.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHUNK "templates/test/cnt.lua"


static sp_gpu_profile named(const char *name) { return sp_test_profile(name); }
static sp_gpu_profile h100(void) { return named("h100"); }
static sp_gpu_profile h100_profile;
static sp_gpu_profile rtx_pro_6000(void) { return named("rtx-pro-6000"); }

static const char *CNT =
    "local util = {}\n"                                                          /* 1 */
    "return {\n"                                                                 /* 2 */
    "  name = 'cnt', family = 'test', description = 'counting',\n"               /* 3 */
    "  dims = {'M', 'N', 'K'},\n"                                                /* 4 */
    "  params = {\n"                                                             /* 5 */
    "    {name = 'a', values = {1, 2, 3}, default = 2, doc = 'a'},\n"            /* 6 */
    "    {name = 'b', values = {1, 2, 3, 2^2}},\n"                               /* 7 */
    "    {name = 'flag', values = {true, false}, default = false},\n"            /* 8 */
    "  },\n"                                                                     /* 9 */
    "  constraints = {\n"                                                        /* 10 */
    "    {why = 'product is even', check = function(c) return (c.a * c.b) % 2 == 0 end},\n"
    "    {why = 'a divides M', check = function(c, gpu, p) return p == nil or p.M % c.a == 0 end},\n"
    "    {why = 'flag needs b < 4', check = function(c, gpu, p)\n"               /* 13 */
    "       if c.flag and c.b >= 4 then return false, 'b=' .. c.b end\n"
    "       c.a = 99 -- a check that writes to c changes nothing\n"
    "       return true end},\n"
    "  },\n"
    "  kernel = function(c, gpu) return string.format('sp_cnt_a%d_b%d_%s', c.a, c.b, gpu.arch) end,\n"
    "  launch = function(c, p, gpu)\n"
    "    return {grid = {(p.M + 63) // 64, p.N}, block = {32 * c.a}, smem = c.b * 1024}\n"
    "  end,\n"
    "  emit = function(c, p, gpu)\n"
    "    local keys = {zeta = 1, alpha = 2, mid = 3, beta = 4, omega = 5, gamma = 6, delta = 7}\n"
    "    local out = {}\n"
    "    for k, v in pairs(keys) do out[#out + 1] = k .. '=' .. v end\n"
    "    for k, v in pairs(c) do out[#out + 1] = k .. '=' .. tostring(v) end\n"
    "    out[#out + 1] = 'gpu=' .. gpu.name .. ',' .. gpu.display .. ',' .. gpu.cc .. ',' .. tostring(gpu.wgmma)\n"
    "    out[#out + 1] = 'p=' .. (p and (p.M .. 'x' .. p.N .. 'x' .. p.K) or 'nil')\n"
    "    out[#out + 1] = 'types=' .. math.type(c.a) .. ',' .. math.type(c.b) .. ',' .. (p and math.type(p.M) or '-')\n"
    "    return table.concat(out, ';')\n"
    "  end,\n"
    "  options = function(c, gpu) return {'-DA=' .. c.a, '--use_fast_math'} end,\n"
    "}\n";

static int cnt_valid(int a, int b, int flag, const double *M)
{
    if ((a * b) % 2) return 0;
    if (M && (long long)*M % a) return 0;
    if (flag && b >= 4) return 0;
    return 1;
}

typedef struct walk {
    const sp_template *t;
    char text[4096];
    int stop_after;
    int seen;
} walk;

static int on_config(const sp_config *c, void *ud)
{
    walk *w = ud;
    char *s = sp_config_format(w->t, c);
    size_t n = strlen(w->text);
    snprintf(w->text + n, sizeof w->text - n, "%s;", s ? s : "?");
    free(s);
    w->seen++;
    return w->stop_after && w->seen >= w->stop_after;
}

static void expected_walk(char *out, size_t cap, const double *M)
{
    static const int as[] = {1, 2, 3}, bs[] = {1, 2, 3, 4}, fs[] = {1, 0};
    out[0] = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++)
                if (cnt_valid(as[i], bs[j], fs[k], M)) {
                    size_t n = strlen(out);
                    snprintf(out + n, cap - n, "a=%d,b=%d,flag=%s;", as[i], bs[j], fs[k] ? "true" : "false");
                }
}

/* A callback may render each configuration it is given (the walk is re-entrant). */
typedef struct render_walk {
    sp_template *t;
    const sp_gpu_profile *g;
    int rendered, failed;
} render_walk;

static int render_each(const sp_config *c, void *ud)
{
    render_walk *w = ud;
    sp_kernel_src k;
    int ok = 0;
    if (sp_template_emit(w->t, c, w->g, NULL, &k) != SPTUNE_OK ||
        sp_template_check(w->t, c, w->g, NULL, &ok, NULL) != SPTUNE_OK || !ok)
        w->failed++;
    else
        w->rendered++;
    sp_kernel_src_free(&k);
    return 0;
}

static void test_space(sp_template *t)
{
    sp_gpu_profile g = h100();
    long long n = -1;
    walk w = {.t = t};
    char want[4096];

    CHECK_ST(sp_template_space(t, &g, NULL, on_config, &w, &n), SPTUNE_OK);
    CHECK_MSG(n == 13, "count %lld", n); /* by hand: 8 even products, 5 of them with b < 4 */
    expected_walk(want, sizeof want, NULL);
    CHECK_MSG(strcmp(w.text, want) == 0, "walk\n got %s\nwant %s", w.text, want);

    sp_problem p;
    CHECK_ST(sp_problem_parse(t, "M=4,N=1,K=1", &p), SPTUNE_OK);
    memset(&w, 0, sizeof w);
    w.t = t;
    CHECK_ST(sp_template_space(t, &g, &p, on_config, &w, &n), SPTUNE_OK);
    CHECK_MSG(n == 10, "count %lld", n); /* a=3 does not divide M=4: 2 + 4 + 2 + 2 */
    double M = 4;
    expected_walk(want, sizeof want, &M);
    CHECK_MSG(strcmp(w.text, want) == 0, "walk\n got %s\nwant %s", w.text, want);

    /* Count only, and a callback that stops the walk. */
    CHECK_ST(sp_template_space(t, &g, NULL, NULL, NULL, &n), SPTUNE_OK);
    CHECK_EQ(n, 13);
    memset(&w, 0, sizeof w);
    w.t = t;
    w.stop_after = 3;
    CHECK_ST(sp_template_space(t, &g, NULL, on_config, &w, &n), SPTUNE_OK);
    CHECK(n == 3 && w.seen == 3);
    CHECK(strcmp(w.text, "a=1,b=2,flag=true;a=1,b=2,flag=false;a=1,b=4,flag=false;") == 0);

    render_walk rw = {.t = t, .g = &g};
    CHECK_ST(sp_template_space(t, &g, NULL, render_each, &rw, &n), SPTUNE_OK);
    CHECK(n == 13 && rw.rendered == 13 && rw.failed == 0);

    /* sp_template_check: ok, why, why with a reason, problem-dependent. */
    sp_config c;
    int ok = -1;
    char *why = NULL;
    CHECK_ST(sp_config_parse(t, "a=1,b=1", &c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_OK);
    CHECK(ok == 0 && why && strcmp(why, "product is even") == 0);
    free(why);
    CHECK_ST(sp_config_parse(t, "a=2,b=4,flag=true", &c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_OK);
    CHECK_MSG(ok == 0 && why && strcmp(why, "flag needs b < 4: b=4") == 0, "%s", why ? why : "(null)");
    free(why);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, NULL), SPTUNE_OK);
    CHECK_EQ(ok, 0);
    CHECK_ST(sp_config_parse(t, "a=3,b=2", &c), SPTUNE_OK);
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_OK);
    CHECK(ok == 1 && why == NULL);
    CHECK_ST(sp_template_check(t, &c, &g, &p, &ok, &why), SPTUNE_OK);
    CHECK(ok == 0 && why && strcmp(why, "a divides M") == 0);
    free(why);
    CHECK_ST(sp_template_check(t, &c, NULL, NULL, &ok, &why), SPTUNE_ERR_INVALID);
    c.idx[0] = 7;
    CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, &why), SPTUNE_ERR_INVALID);
}

static void test_emit(sp_template *t)
{
    sp_gpu_profile g = h100();
    sp_config c;
    sp_problem p;
    sp_kernel_src k1, k2;
    CHECK_ST(sp_config_parse(t, "a=2,b=3", &c), SPTUNE_OK);
    CHECK_ST(sp_problem_parse(t, "M=200,N=3,K=5", &p), SPTUNE_OK);
    CHECK_ST(sp_template_emit(t, &c, &g, &p, &k1), SPTUNE_OK);
    CHECK_ST(sp_template_emit(t, &c, &g, &p, &k2), SPTUNE_OK);
    if (!k1.source || !k2.source) return;
    CHECK_EQ(strcmp(k1.source, k2.source), 0);
    /* the header comment, then what emit returned */
    const char *body = strstr(k1.source, "change the template. */\n");
    CHECK_MSG(body && strcmp(body + strlen("change the template. */\n"),
                             "alpha=2;beta=4;delta=7;gamma=6;mid=3;omega=5;zeta=1;a=2;b=3;flag=false;"
                             "gpu=h100,NVIDIA H100 SXM,90,true;p=200x3x5;types=integer,integer,integer") == 0,
              "%s", k1.source);
    CHECK(strcmp(k1.stage[0].kernel, "sp_cnt_a2_b3_sm_90a") == 0);
    CHECK(k1.stage[0].grid[0] == 4 && k1.stage[0].grid[1] == 3 && k1.stage[0].grid[2] == 1);
    CHECK(k1.stage[0].block[0] == 64 && k1.stage[0].block[1] == 1 && k1.stage[0].block[2] == 1);
    CHECK(k1.stage[0].cluster[0] == 1 && k1.stage[0].cluster[1] == 1 && k1.stage[0].cluster[2] == 1);
    CHECK_EQ(k1.stage[0].smem, 3072);
    CHECK(k1.stage[0].tmaps.n == 0); /* no tensor maps unless the launch names them */
    CHECK(k1.stage[0].pdl == 0);     /* nor an early launch */
    CHECK(k1.noptions == 2 && k1.options && strcmp(k1.options[0], "-DA=2") == 0 &&
          strcmp(k1.options[1], "--use_fast_math") == 0 && k1.options[2] == NULL);
    sp_kernel_src_free(&k2);

    /* A second state (another hash seed) renders the same bytes: pairs() is ordered. */
    sp_template *t2 = NULL;
    CHECK_ST(sp_template_load_source(CHUNK, CNT, NULL, &t2), SPTUNE_OK);
    if (t2) {
        CHECK_ST(sp_template_emit(t2, &c, &g, &p, &k2), SPTUNE_OK);
        CHECK(k2.source && strcmp(k1.source, k2.source) == 0);
        CHECK(strcmp(sp_template_hash(t), sp_template_hash(t2)) == 0);
        sp_kernel_src_free(&k2);
        sp_template_free(t2);
    }
    sp_kernel_src_free(&k1);
    CHECK(k1.source == NULL && k1.options == NULL);

    /* Without a problem: no launch, p is nil. */
    CHECK_ST(sp_template_emit(t, &c, &g, NULL, &k1), SPTUNE_OK);
    CHECK(k1.source && sp_test_has(k1.source, "p=nil;types=integer,integer,-"));
    CHECK(k1.stage[0].grid[0] == 0 && k1.stage[0].block[0] == 0 && k1.stage[0].smem == 0);
    sp_kernel_src_free(&k1);

    /* Decimal problem values reach Lua as floats. */
    CHECK_ST(sp_problem_parse(t, "M=64,N=1.5,K=2", &p), SPTUNE_OK);
    CHECK_ST(sp_template_emit(t, &c, &g, &p, &k1), SPTUNE_ERR_TEMPLATE); /* grid.y = 1.5 */
    CHECK_MSG(sp_test_has(sptune_last_error(), "grid[2] = 1.5 (must be a positive integer)"), "%s", sptune_last_error());
    CHECK(k1.source == NULL);
}

/* Loads src as a one-parameter template and renders its default for problem `dims`: the status. */
static sptune_status render(const char *path, const char *src, const char *dims, sp_kernel_src *k)
{
    sp_template *t = NULL;
    memset(k, 0, sizeof *k);
    CHECK_ST(sp_template_load_source(path, src, NULL, &t), SPTUNE_OK);
    if (!t) return SPTUNE_ERR_TEMPLATE;
    sp_gpu_profile g = rtx_pro_6000();
    sp_config c;
    sp_problem p;
    sp_config_default(t, &c);
    CHECK_ST(sp_problem_parse(t, dims, &p), SPTUNE_OK);
    sptune_status st = sp_template_emit(t, &c, &g, &p, k);
    sp_template_free(t);
    return st;
}

/* A template whose kernel/launch/emit/options return `ret_*`. */
static void bad_render(const char *kernel, const char *launch, const char *emit, const char *options,
                       const char *want)
{
    char src[2048];
    snprintf(src, sizeof src,
             "return {name = 'r', dims = {'M'}, params = {{name = 'a', values = {1}}},\n"
             "  args = {{name = 'A', type = 'bf16', role = 'input', shape = {'M', 8}}, {name = 'M', type = 'i32', role = 'dim'}},\n"
             "  kernel = %s, launch = function(c, p, gpu) return %s end,\n"
             "  emit = function(c, p, gpu) return %s end, options = %s}\n",
             kernel, launch, emit, options);
    sp_kernel_src k;
    CHECK_ST(render("templates/test/r.lua", src, "64", &k), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), want), "want '%s' in '%s'", want, sptune_last_error());
    CHECK_MSG(sp_test_has(sptune_last_error(), "templates/test/r.lua"), "%s", sptune_last_error());
    CHECK(k.source == NULL);
}

static void test_bad_render(void)
{
    const char *L = "{grid = {1}, block = {32}}";
    bad_render("'k'", "{grid = {0}, block = {32}}", "'x'", "nil", "launch returned grid[1] = 0 (must be a positive integer)");
    bad_render("'k'", "{grid = {1}}", "'x'", "nil", "launch returned block = nil");
    bad_render("'k'", "{grid = {1, 2, 3, 4}, block = {1}}", "'x'", "nil", "grid = a table (must be a list of 1 to 3");
    bad_render("'k'", "{grid = {1}, block = {32}, smem = -1}", "'x'", "nil", "smem = -1");
    bad_render("'k'", "{grid = {1}, block = {32}, cluster = {2, 'x'}}", "'x'", "nil", "cluster[2] = 'x'");
    bad_render("'k'", "42", "'x'", "nil", "launch returned 42, not a table");
    bad_render("'k'", "{grid = {1}, block = {32}, pdl = 1}", "'x'", "nil", "launch returned pdl = 1 (must be true or false)");
    /* tensor maps (sp_tmaps): each field checked, the copy engine's limits named */
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = 3}", "'x'", "nil", "tmaps that is not a list of 1 to 4");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 0, rows = 8, cols = 8, box_rows = 8, box_cols = 8, swizzle = 0}}}",
               "'x'", "nil", "tmaps[1].arg = 0, not the name of a pointer argument");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'M', rows = 8, cols = 8, box_rows = 8, box_cols = 8, swizzle = 0}}}",
               "'x'", "nil", "tmaps[1].arg = 'M', not the name of a pointer argument");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'B', rows = 8, cols = 8, box_rows = 8, box_cols = 8, swizzle = 0}}}",
               "'x'", "nil", "tmaps[1].arg = 'B', not the name");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'A', rows = 8, cols = 8, box_rows = 300, box_cols = 8, swizzle = 0}}}",
               "'x'", "nil", "box_rows = 300");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'A', rows = 8, cols = 8, box_rows = 8, box_cols = 8, swizzle = 48}}}",
               "'x'", "nil", "swizzle = 48 (0, 32, 64 or 128)");
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'A', rows = 8, cols = 8, box_rows = 8, box_cols = 128, swizzle = 128}}}",
               "'x'", "nil", "a box row of 256 bytes is wider than its 128-byte swizzle");
    bad_render("'k'", L, "42", "nil", "emit returned 42, not a string");
    bad_render("'k'", L, "nil", "nil", "emit returned a nil, not a string");
    bad_render("function() return 'not an ident' end", L, "'x'", "nil", "kernel returned 'not an ident'");
    bad_render("function() return 7 end", L, "'x'", "nil", "kernel returned 7");
    bad_render("'k'", L, "'x'", "function() return {1} end", "options[1] must be a non-empty string");
    bad_render("'k'", L, "'x'", "function() return 'x' end", "options returned 'x'");
    bad_render("'k'", L, "p.nothing.x", "nil", "templates/test/r.lua:4: attempt to index a nil value (field 'nothing') (in emit for a=1)");
    bad_render("'k'", "error('launch broke')", "'x'", "nil", "templates/test/r.lua:3: launch broke (in launch for a=1)");
    /* Pipelines: a list of kernel names with one launch table each. */
    bad_render("function() return {'k1', 'k2'} end", L, "'x'", "nil", "launch must return a list of 2 launch tables");
    bad_render("function() return {'k1', 'k2'} end", "{" "{grid = {1}, block = {32}}" "}", "'x'", "nil", "launch must return a list of 2");
    bad_render("function() return {'k1', 'k1'} end", "{" "{grid = {1}, block = {32}}, {grid = {1}, block = {32}}" "}", "'x'", "nil",
               "kernel k1 named twice");
    bad_render("function() return {} end", L, "'x'", "nil", "kernel returned a list of 0 names");
    bad_render("function() return {'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9', 'k10', 'k11', 'k12', 'k13'} end", L,
               "'x'", "nil", "kernel returned a list of 13 names");
    bad_render("function() return {'k1', 7} end", "{" "{grid = {1}, block = {32}}, {grid = {1}, block = {32}}" "}", "'x'", "nil",
               "kernel returned 7");
}

/* Argument declarations (gen/sp_args.h): parsed, described, their extents evaluated. */
static void test_args(void)
{
    const char *src =
        "return {name = 'ar', dims = {'M', 'F'}, params = {{name = 'bn', values = {64, 128}}, {name = 's', values = {'x'}}},\n"
        "  args = {{name = 'X', type = 'bf16', role = 'input', shape = {'M', 'F'}, doc = 'in'},\n"
        "          {name = 'P', type = 'u32', role = 'workspace', shape = {'M', 'cdiv(F, bn)', 'bn + 1'}},\n"
        "          {name = 'Q', type = 'u32', role = 'workspace', shape = {'cap'}},\n"
        "          {name = 'R', type = 'u32', role = 'input', shape = {'?'}},\n"
        "          {name = 'cap', type = 'u64', role = 'scalar'}, {name = 'M', type = 'i32', role = 'dim'}},\n"
        "  kernel = 'k', launch = function(c, p) return {grid = {1}, block = {32}, tmaps = {{arg = 'X', rows = p.M,\n"
        "    cols = p.F, box_rows = 8, box_cols = 8, swizzle = 0}}} end, emit = function() return 'x' end}\n";
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/ar.lua", src, NULL, &t), SPTUNE_OK);
    if (!t) return;
    CHECK(sp_template_nargs(t) == 6 && sp_template_arg_index(t, "cap") == 4 && sp_template_arg_index(t, "no") == -1);
    CHECK_MSG(strcmp(sp_template_args(t), "const bf16 *X (M x F: in), u32 *P (M x cdiv(F, bn) x (bn + 1), workspace), "
                     "u32 *Q (cap, workspace), const u32 *R (set by the data), u64 cap, i32 M") == 0, "%s", sp_template_args(t));
    sp_vars v = {0};
    sp_vars_set(&v, "M", 10);
    sp_vars_set(&v, "F", 300);
    sp_vars_set(&v, "bn", 128);
    long long n = 0;
    CHECK_ST(sp_arg_elements(sp_template_arg(t, 1), &v, &n), SPTUNE_OK);
    CHECK_EQ(n, 10 * 3 * 129);
    CHECK_ST(sp_arg_elements(sp_template_arg(t, 2), &v, &n), SPTUNE_ERR_INVALID);
    CHECK(sp_test_has(sptune_last_error(), "argument Q") && sp_test_has(sptune_last_error(), "no value for this name"));
    sp_vars_set(&v, "cap", 77);
    CHECK_ST(sp_arg_elements(sp_template_arg(t, 2), &v, &n), SPTUNE_OK);
    CHECK_EQ(n, 77);
    CHECK_ST(sp_arg_elements(sp_template_arg(t, 3), &v, &n), SPTUNE_ERR_INVALID);
    CHECK(sp_test_has(sptune_last_error(), "set by the data"));
    CHECK_ST(sp_arg_elements(sp_template_arg(t, 4), &v, &n), SPTUNE_ERR_INVALID); /* by value */
    sp_config c;
    sp_config_default(t, &c);
    sp_problem p;
    CHECK_ST(sp_problem_parse(t, "M=5,F=7", &p), SPTUNE_OK);
    sp_kernel_src k;
    CHECK_ST(sp_template_emit(t, &c, &h100_profile, &p, &k), SPTUNE_OK);
    CHECK(k.stage[0].tmaps.n == 1 && k.stage[0].tmaps.nargs == 6 && k.stage[0].tmaps.v[0].arg == 0);
    /* every generated source opens with where it comes from */
    CHECK(k.source && sp_test_has(k.source, "/* sptune " SPTUNE_VERSION_STRING " ar: k") && sp_test_has(k.source, "configuration bn=64,s=x") &&
          sp_test_has(k.source, "problem M=5,F=7") && sp_test_has(k.source, sp_template_hash(t)));
    sp_kernel_src_free(&k);
    sp_template_free(t);

    /* extents */
    static const struct { const char *e; long long want; } ok[] = {
        {"3", 3}, {"M", 10}, {"M + 2 * F", 610}, {"(M + 2) * 3", 36}, {"cdiv(F, 128)", 3}, {"F / 128", 2},
        {"max(M, 4) - min(2, M)", 8}, {"cdiv(M*F, 7) + 1", 430}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CHECK_ST(sp_expr_eval(ok[i].e, &v, &n), SPTUNE_OK);
        CHECK_MSG(n == ok[i].want, "%s = %lld, want %lld", ok[i].e, n, ok[i].want);
    }
    static const struct { const char *e, *why; } bad[] = {
        {"M +", "expected a number"}, {"F / 0", "division by zero"}, {"cdiv(F, 0)", "division by zero"},
        {"nope", "no value for this name"}, {"2 - M", "out of range"}, {"pow(2, 3)", "unknown function"},
        {"M)", "unexpected text"}, {"((((((((((((((((((((((((((((((((((M))))))))))))))))))))))))))))))))))", "nested too deeply"},
        {"99999999999999999999 * 99999", "out of range"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(sp_expr_eval(bad[i].e, &v, &n), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), bad[i].why), "%s: %s", bad[i].e, sptune_last_error());
    }
}

/* A pipeline of two kernels renders both names and launches, in order. */
static void test_pipeline(void)
{
    const char *src =
        "return {name = 'pipe', dims = {'M'}, params = {{name = 'a', values = {1}}},\n"
        "  kernel = function() return {'first', 'second'} end,\n"
        "  launch = function(c, p) return {{grid = {p.M}, block = {64}, smem = 128}, {grid = {2, 3}, block = {32}}} end,\n"
        "  emit = function() return 'extern \"C\" __global__ void first() {} extern \"C\" __global__ void second() {}' end}\n";
    sp_kernel_src k;
    CHECK_ST(render("templates/test/pipe.lua", src, "5", &k), SPTUNE_OK);
    CHECK(strcmp(k.stage[0].kernel, "first") == 0 && k.stage[0].grid[0] == 5 && k.stage[0].block[0] == 64 &&
          k.stage[0].smem == 128);
    CHECK(k.nkernels == 2 && strcmp(k.stage[1].kernel, "second") == 0 && k.stage[1].grid[0] == 2 &&
          k.stage[1].grid[1] == 3 && k.stage[1].grid[2] == 1 && k.stage[1].block[0] == 32 && k.stage[1].smem == 0);
    sp_kernel_src_free(&k);
}

static void test_config(sp_template *t)
{
    sp_config c, d;
    char *s;
    CHECK_EQ(sp_template_nparams(t), 3);
    const sp_param *a = sp_template_param(t, 0), *b = sp_template_param(t, 1), *f = sp_template_param(t, 2);
    CHECK(a && b && f && sp_template_param(t, 3) == NULL && sp_template_param(t, -1) == NULL);
    if (!a || !b || !f) return;
    CHECK(strcmp(a->name, "a") == 0 && a->nvalues == 3 && a->default_index == 1 && strcmp(a->doc, "a") == 0);
    CHECK(b->nvalues == 4 && b->values[3].kind == SP_VAL_INT && b->values[3].i == 4 && strcmp(b->values[3].text, "4") == 0);
    CHECK(f->values[0].kind == SP_VAL_BOOL && f->values[0].i == 1 && strcmp(f->values[1].text, "false") == 0);
    CHECK(f->default_index == 1 && b->default_index == 0 && strcmp(b->doc, "") == 0);

    sp_config_default(t, &c);
    s = sp_config_format(t, &c);
    CHECK(s && strcmp(s, "a=2,b=1,flag=false") == 0);
    free(s);
    CHECK_ST(sp_config_parse(t, "", &c), SPTUNE_OK);
    CHECK(c.nparams == 3 && c.idx[0] == 1 && c.idx[1] == 0 && c.idx[2] == 1);
    CHECK_ST(sp_config_parse(t, "  flag = true , b=4,a=3 ", &c), SPTUNE_OK);
    s = sp_config_format(t, &c);
    CHECK(s && strcmp(s, "a=3,b=4,flag=true") == 0);
    CHECK_ST(sp_config_parse(t, s, &d), SPTUNE_OK);
    CHECK_EQ(memcmp(&c, &d, sizeof c), 0);
    free(s);
    CHECK_ST(sp_config_parse(t, "b=3", &c), SPTUNE_OK);
    CHECK(c.idx[0] == 1 && c.idx[1] == 2 && c.idx[2] == 1);

    /* Every configuration survives format -> parse. */
    int all = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++) {
                c.idx[0] = i, c.idx[1] = j, c.idx[2] = k;
                s = sp_config_format(t, &c);
                if (!s || sp_config_parse(t, s, &d) != SPTUNE_OK || memcmp(&c, &d, sizeof c) != 0) all = 0;
                free(s);
            }
    CHECK(all);

    CHECK_ST(sp_config_parse(t, "bx=1", &c), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "unknown parameter 'bx' for cnt (parameters: a, b, flag)"), "%s", sptune_last_error());
    CHECK_ST(sp_config_parse(t, "a=5", &c), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "a=5 is not allowed (values: 1, 2, 3)"), "%s", sptune_last_error());
    CHECK_ST(sp_config_parse(t, "flag=yes", &c), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "flag=yes is not allowed (values: true, false)"), "%s", sptune_last_error());
    CHECK_ST(sp_config_parse(t, "a=1,b=2,a=2", &c), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "parameter 'a' is given twice"), "%s", sptune_last_error());
    CHECK_ST(sp_config_parse(t, "a", &c), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "expected name=value"), "%s", sptune_last_error());
    CHECK_ST(sp_config_parse(t, "a=1,", &c), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_config_parse(t, "a=", &c), SPTUNE_ERR_INVALID);
    CHECK_ST(sp_config_parse(t, "a=1.0", &c), SPTUNE_ERR_INVALID);
    c.nparams = 2;
    CHECK(sp_config_format(t, &c) == NULL);
}

static void test_problem(sp_template *t)
{
    sp_problem p, q;
    char *s;
    CHECK(sp_template_ndims(t) == 3 && strcmp(sp_template_dim(t, 2), "K") == 0 && sp_template_dim(t, 3) == NULL);
    CHECK_ST(sp_problem_parse(t, "K=3, M=4096 ,N=2", &p), SPTUNE_OK);
    CHECK_ST(sp_problem_parse(t, "4096x2x3", &q), SPTUNE_OK);
    CHECK(p.n == 3 && memcmp(&p, &q, sizeof p) == 0);
    s = sp_problem_format(&p);
    CHECK(s && strcmp(s, "M=4096,N=2,K=3") == 0);
    free(s);
    CHECK_ST(sp_problem_parse(t, "M=0.5,N=1e3,K=-2", &p), SPTUNE_OK);
    s = sp_problem_format(&p);
    CHECK_MSG(s && strcmp(s, "M=0.5,N=1000,K=-2") == 0, "%s", s);
    if (s) {
        CHECK_ST(sp_problem_parse(t, s, &q), SPTUNE_OK);
        CHECK_EQ(memcmp(&p, &q, sizeof p), 0);
    }
    free(s);
    CHECK_ST(sp_problem_parse(t, "M=0.1,N=1,K=1", &p), SPTUNE_OK);
    s = sp_problem_format(&p);
    CHECK(s && strcmp(s, "M=0.1,N=1,K=1") == 0);   /* the shortest text that reads back as the value */
    free(s);

    static const struct { const char *text, *want; } bad[] = {
        {"M=1,N=2", "missing dimension 'K'"},
        {"M=1,N=2,K=3,Q=4", "unknown dimension 'Q'"},
        {"M=1,M=2,N=1,K=1", "dimension 'M' given twice"},
        {"M=inf,N=1,K=1", "M=inf in problem 'M=inf,N=1,K=1' is not a finite number"},
        {"M=nan,N=1,K=1", "not a finite number"},
        {"M=1e999,N=1,K=1", "not a finite number"},
        {"M=0x10,N=1,K=1", "not a finite number"},
        {"M=abc,N=1,K=1", "not a finite number"},
        {"M=,N=1,K=1", "not a finite number"},
        {"1x2", "missing dimension 'K'"},
        {"1x2x3x4", "too many sizes"},
        {"1xx3", "not a finite number"},
        {"", "empty problem"},
        {"M=1;N=2", "not a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(sp_problem_parse(t, bad[i].text, &p), SPTUNE_ERR_INVALID);
        CHECK_MSG(sp_test_has(sptune_last_error(), bad[i].want), "'%s': want '%s' in '%s'", bad[i].text, bad[i].want,
                  sptune_last_error());
    }
    CHECK_ST(sp_problem_parse(t, "M=1,N=2", &p), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "(cnt takes M, N, K)"), "%s", sptune_last_error());
}

/* ---- a large space ----------------------------------------------------------------------- */

/* A test template (templates/test/<name>.lua) of nparams parameters p1, p2, ... each taking the Lua list
 * `values`, with the given constraint entries (Lua table fields, one per line); NULL after a failed check. */
static sp_template *load_space(const char *name, const char *values, int nparams, const char *checks)
{
    char src[2048];
    snprintf(src, sizeof src,
             "local params = {}\n"
             "for i = 1, %d do params[i] = {name = 'p' .. i, values = %s} end\n"
             "return {name = '%s', params = params, kernel = 'k', launch = function() end, emit = function() end,\n"
             "  constraints = {\n%s  }}\n",
             nparams, values, name, checks);
    char path[128];
    snprintf(path, sizeof path, "templates/test/%s.lua", name);
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source(path, src, NULL, &t), SPTUNE_OK);
    return t;
}

/* The valid configurations the walk counts on the h100 profile, and the seconds it took (seconds may
 * be NULL). */
static long long walk_count(sp_template *t, double *seconds)
{
    sp_gpu_profile g = h100();
    long long n = 0;
    const double t0 = sp_now_s();
    CHECK_ST(sp_template_space(t, &g, NULL, NULL, NULL, &n), SPTUNE_OK);
    if (seconds) *seconds = sp_now_s() - t0;
    return n;
}

static void test_large_space(void)
{
    sp_template *t = load_space(
        "big", "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}", 6,
        "    {why = 'sum', check = function(c) return (c.p1 + c.p2 + c.p3 + c.p4 + c.p5 + c.p6) % 7 == 0 end},\n"
        "    {why = 'p1', check = function(c, gpu) return c.p1 < 9 and gpu.sm_count > 0 end},\n");
    if (!t) return;
    long long want = 0;
    for (int i = 0; i < 1000000; i++) {
        int s = 0, x = i;
        for (int k = 0; k < 6; k++) s += x % 10, x /= 10;
        if (s % 7 == 0 && i / 100000 < 9) want++;
    }
    double s;
    long long n = walk_count(t, &s);
    CHECK_MSG(n == want, "%lld != %lld", n, want);
    printf("test_template: 10^6 raw configurations, %lld valid, in %.2f s\n", n, s);
    CHECK_MSG(s < 20.0, "the walk took %.1f s", s);
    sp_template_free(t);
}

/* The walk skips the configurations a failed check cannot tell apart (it read only earlier
 * parameters): the count stays the brute force's with checks that read parameters conditionally,
 * iterate the configuration or write to it. */
static void test_pruned_space(void)
{
    sp_template *t = load_space(
        "pruned", "{0, 1, 2, 3, 4, 5}", 5,
        "    {why = 'a', check = function(c) if c.p1 == 0 then return c.p4 ~= 3 end return c.p2 ~= 1 end},\n"
        "    {why = 'b', check = function(c) local s = 0 for _, x in pairs(c) do s = s + x end return s % 3 ~= 0 end},\n"
        "    {why = 'c', check = function(c) c.p3 = c.p3 return c.p3 ~= 2 end},\n");
    if (!t) return;
    long long want = 0;
    for (int i = 0; i < 7776; i++) {
        int p[5], x = i, sum = 0;
        for (int k = 4; k >= 0; k--) p[k] = x % 6, x /= 6, sum += p[k];
        want += (p[0] == 0 ? p[3] != 3 : p[1] != 1) && sum % 3 != 0 && p[2] != 2;
    }
    long long n = walk_count(t, NULL);
    CHECK_MSG(n == want, "%lld != %lld", n, want);
    sp_template_free(t);

    /* A check that derives a key from a later parameter for the next one, and one that looks only at
     * the first key pairs() gives (the sandbox's fixed order): the walk agrees with checking each
     * configuration on its own. */
    t = load_space("derived", "{0, 1, 2}", 3,
                   "    {why = 'w', check = function(c) c.big = c.p3 == 2 return true end},\n"
                   "    {why = 'r', check = function(c) return c.p1 ~= 0 or c.big end},\n"
                   "    {why = 'first', check = function(c) for k in pairs(c) do return k == 'big' end end},\n");
    if (!t) return;
    sp_gpu_profile g = h100();
    long long each = 0;
    for (int i = 0; i < 27; i++) {
        sp_config c;
        char text[64];
        snprintf(text, sizeof text, "p1=%d,p2=%d,p3=%d", i / 9, i / 3 % 3, i % 3);
        int ok = 0;
        CHECK_ST(sp_config_parse(t, text, &c), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, NULL), SPTUNE_OK);
        each += ok;
    }
    n = walk_count(t, NULL);
    CHECK_MSG(each == 21 && n == each, "walk %lld, one by one %lld (want 21)", n, each);
    sp_template_free(t);
}

/* A space too large to list (10^10 combinations): the subtrees of its walk add up to the walk, the count is estimated
 * from random subtrees with an interval holding the true count, and the candidates a tuning run searches there are
 * valid, distinct, in space order, the seed and every valid configuration one parameter from it among them. */
static void test_unlisted_space(void)
{
    sp_template *t = load_space(
        "huge", "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}", 10,
        "    {why = 'tail', check = function(c) return c.p5 < 1 and c.p6 < 1 and c.p7 < 1 and c.p8 < 1 and c.p9 < 1 "
        "and c.p10 < 1 end},\n"
        "    {why = 'head', check = function(c) return (c.p1 + c.p2 + c.p3) % 3 == 0 end},\n");
    if (!t) return;
    sp_gpu_profile g = h100();
    CHECK(sp_space_raw(t) > SP_SPACE_LIST_MAX);
    const long long want = 334 * 10;   /* (p1, p2, p3) with a sum divisible by 3, any p4, the rest 0 */
    long long sum = 0;
    for (int a = 0; a < 10; a++) {
        const int prefix[1] = {a};
        long long n = -1;
        CHECK_ST(sp_template_subspace(t, &g, NULL, prefix, 1, NULL, NULL, &n), SPTUNE_OK);
        sum += n;
    }
    CHECK_MSG(sum == want, "the subtrees add up to %lld, not %lld", sum, want);
    const int bad[1] = {10};
    long long n = 0;
    CHECK_ST(sp_template_subspace(t, &g, NULL, bad, 1, NULL, NULL, &n), SPTUNE_ERR_INVALID);
    /* no time given: the least number of subtrees, so that the draws (and this check) do not depend on the machine */
    sp_space_count c;
    CHECK_ST(sp_space_count_valid(t, &g, NULL, 0, 3, &c), SPTUNE_OK);
    CHECK_MSG(!c.exact && c.samples == 30 && c.lo <= want && want <= c.hi && c.count > want / 3 && c.count < 3 * want,
              "estimated %g (%g to %g, %lld subtrees, exact %d), true %lld", c.count, c.lo, c.hi, c.samples, c.exact, want);
    sp_config seed;
    CHECK_ST(sp_config_parse(t, "p1=0,p2=1,p3=2,p4=4,p5=0,p6=0,p7=0,p8=0,p9=0,p10=0", &seed), SPTUNE_OK);
    sp_configs cs;
    CHECK_ST(sp_space_candidates(t, &g, NULL, &seed, 1, 0.2, 5, &cs), SPTUNE_OK);
    int found_seed = 0, neighbours = 0;
    for (long long i = 0; i < cs.n; i++) {
        int ok = 0, diff = 0;
        CHECK_ST(sp_template_check(t, &cs.v[i], &g, NULL, &ok, NULL), SPTUNE_OK);
        CHECK(ok);
        for (int k = 0; k < 10; k++) diff += cs.v[i].idx[k] != seed.idx[k];
        found_seed += diff == 0;
        neighbours += diff == 1;
    }
    for (long long i = 1; i < cs.n; i++) {
        int k = 0;
        while (k < 10 && cs.v[i - 1].idx[k] == cs.v[i].idx[k]) k++;
        CHECK_MSG(k < 10 && cs.v[i - 1].idx[k] < cs.v[i].idx[k], "candidates %lld and %lld out of order or twice", i - 1, i);
    }
    /* one parameter from the seed (0, 1, 2, 4, 0, ...) and valid: p4 any of its 9 other values, p1 3, 6 or 9, p2 4 or
       7, p3 5 or 8 (the sum stays divisible by 3) */
    CHECK_MSG(found_seed == 1 && neighbours == 16, "seed %d, neighbours %d of %lld candidates", found_seed, neighbours, cs.n);
    sp_configs_free(&cs);
    sp_template_free(t);
}

/* ---- every template of the embedded set -------------------------------------------------- */

#define SAMPLE 8   /* configurations drawn per template and GPU (twell-ffn on sm_120: one valid draw in ~35,000, 1 s each) */

typedef struct first_cfg {
    sp_config c;
    int have;
} first_cfg;

/* The first valid configuration, then the walk stops (twell-ffn's whole space is 3 M configurations, 4 minutes a walk;
 * the walk's counting is test_large_space's and test_pruned_space's). */
static int take_first(const sp_config *c, void *ud)
{
    first_cfg *f = ud;
    f->c = *c;
    f->have = 1;
    return 1;
}

static void test_embedded(void)
{
    unsetenv("SPTUNE_TEMPLATES");
    h100_profile = h100();
    char **names = NULL;
    int n = 0;
    CHECK_ST(sp_template_list(&names, &n), SPTUNE_OK);
    if (!names) return;
    printf("test_template: %d embedded templates\n", n);
    for (int i = 0; i < n; i++) {
        sp_template *t = NULL;
        CHECK_ST(sp_template_load(names[i], &t), SPTUNE_OK);
        if (!t) continue;
        CHECK(strcmp(sp_template_name(t), names[i]) == 0);
        CHECK_EQ(strlen(sp_template_hash(t)), 64);
        sp_gpu_profile gpus[2] = {h100(), rtx_pro_6000()};
        for (int k = 0; k < 2; k++) {
            first_cfg f = {.have = 0};
            long long count = -1;
            const double t0 = sp_now_s();
            CHECK_ST(sp_template_space(t, &gpus[k], NULL, take_first, &f, &count), SPTUNE_OK);
            CHECK_MSG(count > 0 && f.have, "%s has no valid configuration on %s", names[i], gpus[k].info.profile);
            if (!f.have) continue;
            /* every constraint run over draws from the whole product (a check that fails on a rare configuration
               raises here), and what is drawn emits */
            sp_configs drawn;
            CHECK_ST(sp_space_draw(t, &gpus[k], NULL, SAMPLE, 42, &drawn), SPTUNE_OK);
            CHECK_MSG(drawn.n > 0, "%s: no configuration drawn on %s", names[i], gpus[k].info.profile);
            for (long long j = 0; j < drawn.n; j++) {
                sp_kernel_src ks;
                CHECK_ST(sp_template_emit(t, &drawn.v[j], &gpus[k], NULL, &ks), SPTUNE_OK);
                sp_kernel_src_free(&ks);
            }
            printf("  %-16s %-13s first valid configuration and %lld drawn, emitted (%.2f s)\n", names[i],
                   gpus[k].info.profile, drawn.n, sp_now_s() - t0);
            sp_configs_free(&drawn);
            sp_kernel_src k1, k2;
            CHECK_ST(sp_template_emit(t, &f.c, &gpus[k], NULL, &k1), SPTUNE_OK);
            CHECK_ST(sp_template_emit(t, &f.c, &gpus[k], NULL, &k2), SPTUNE_OK);
            CHECK(k1.source && k2.source && strcmp(k1.source, k2.source) == 0 && strlen(k1.source) > 0);
            CHECK(k1.stage[0].kernel[0] != 0 && strcmp(k1.stage[0].kernel, k2.stage[0].kernel) == 0);
            sp_kernel_src_free(&k1);
            sp_kernel_src_free(&k2);
            /* The default configuration is either valid or has a reason. */
            sp_config d;
            int ok = -1;
            char *why = NULL;
            sp_config_default(t, &d);
            CHECK_ST(sp_template_check(t, &d, &gpus[k], NULL, &ok, &why), SPTUNE_OK);
            CHECK(ok == 1 || (ok == 0 && why != NULL));
            free(why);
        }
        sp_template_free(t);
    }
    sp_strv_free(names);
}

/* The token count: emit does not see it, so the source is the same for every batch, and the geometry
 * alone (sp_template_geometry) is what a smaller batch's emit gives; tokens must name a dim argument. */
static void test_tokens(void)
{
    const char *src =
        "return {name = 'tok', dims = {'M', 'K'}, tokens = 'M', params = {{name = 'a', values = {1}}},\n"
        "  args = {{name = 'M', type = 'i32', role = 'dim'}, {name = 'K', type = 'i32', role = 'dim'}},\n"
        "  kernel = 'k', launch = function(c, p) return {grid = {(p.M + 63) // 64, p.K}, block = {64}} end,\n"
        "  emit = function(c, p) return 'extern \"C\" __global__ void k() {} // ' .. tostring(p and p.M) end}\n";
    sp_kernel_src a, b, g;
    CHECK_ST(render("templates/test/tok.lua", src, "1000x3", &a), SPTUNE_OK);
    CHECK_ST(render("templates/test/tok.lua", src, "65x3", &b), SPTUNE_OK);
    if (a.source && b.source) {
        CHECK_MSG(strcmp(a.source, b.source) == 0 && sp_test_has(a.source, "// nil") && sp_test_has(a.source, "problem K=3 (M at launch)"),
                  "%s", a.source);
        CHECK(a.stage[0].grid[0] == 16 && b.stage[0].grid[0] == 2 && b.stage[0].grid[1] == 3);
    }
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/tok.lua", src, NULL, &t), SPTUNE_OK);
    if (t) {
        sp_gpu_profile gp = rtx_pro_6000();
        sp_config c;
        sp_problem p;
        sp_config_default(t, &c);
        CHECK(sp_template_tokens(t) && strcmp(sp_template_tokens(t), "M") == 0);
        CHECK_ST(sp_problem_parse(t, "65x3", &p), SPTUNE_OK);
        CHECK_ST(sp_template_geometry(t, &c, &gp, &p, &g), SPTUNE_OK);
        CHECK(g.source == NULL && g.nkernels == 1 && memcmp(g.stage, b.stage, sizeof g.stage) == 0);
        CHECK_ST(sp_template_geometry(t, &c, &gp, NULL, &g), SPTUNE_ERR_INVALID);
        sp_template_free(t);
    }
    sp_kernel_src_free(&a);
    sp_kernel_src_free(&b);
    /* every shipped op with a token count renders the same source for two batches */
    const char *ops[][3] = {{"twell-ffn", "M=4096,D=2048,F=5632,nnz=40", "M=77,D=2048,F=5632,nnz=40"},
                            {"gemm", "M=4096,N=1024,K=512", "M=5,N=1024,K=512"},
                            {"slotfill-spmm", "M=1024,K=1024,N=512,sparsity=50,fp16=0,dist=1",
                             "M=1024,K=1024,N=9,sparsity=50,fp16=0,dist=1"}};
    sp_gpu_profile h200;
    CHECK_ST(sp_gpu_profile_named("h200", &h200), SPTUNE_OK);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        CHECK_ST(sp_template_load(ops[i][0], &t), SPTUNE_OK);
        if (!t) continue;
        sp_config c;
        sp_problem p, q;
        sp_config_default(t, &c);
        CHECK(sp_template_tokens(t) != NULL);
        CHECK_ST(sp_problem_parse(t, ops[i][1], &p), SPTUNE_OK);
        CHECK_ST(sp_problem_parse(t, ops[i][2], &q), SPTUNE_OK);
        CHECK_ST(sp_template_emit(t, &c, &h200, &p, &a), SPTUNE_OK);
        CHECK_ST(sp_template_emit(t, &c, &h200, &q, &b), SPTUNE_OK);
        CHECK_ST(sp_template_geometry(t, &c, &h200, &q, &g), SPTUNE_OK);
        CHECK_MSG(a.source && b.source && strcmp(a.source, b.source) == 0, "%s", ops[i][0]);
        CHECK_MSG(memcmp(g.stage, b.stage, sizeof g.stage) == 0 && memcmp(a.stage, b.stage, sizeof a.stage) != 0, "%s",
                  ops[i][0]);
        sp_kernel_src_free(&a);
        sp_kernel_src_free(&b);
        sp_template_free(t);
    }
    const char *bad[][2] = {{"'X'", "tokens 'X' must name a dimension"}, {"'K'", "tokens 'K' must name"},
                            {"3", "tokens must be a string"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char s[512];
        snprintf(s, sizeof s, "return {name = 'v', dims = {'M', {'K', 2}}, tokens = %s, params = {{name = 'a', "
                 "values = {1}}}, args = {{name = 'M', type = 'i32', role = 'dim'}}, kernel = 'k', launch = function() "
                 "return {grid = {1}, block = {1}} end, emit = function() return '' end}", bad[i][0]);
        t = NULL;
        CHECK_ST(sp_template_load_source("templates/test/v.lua", s, NULL, &t), SPTUNE_ERR_TEMPLATE);
        CHECK_MSG(sp_test_has(sptune_last_error(), bad[i][1]), "%s", sptune_last_error());
        sp_template_free(t);
    }
}

int main(void)
{
    unsetenv("SPTUNE_TEMPLATES");
    h100_profile = h100();
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source(CHUNK, CNT, NULL, &t), SPTUNE_OK);
    if (t) {
        CHECK(strcmp(sp_template_name(t), "cnt") == 0 && strcmp(sp_template_family(t), "test") == 0);
        CHECK(strcmp(sp_template_description(t), "counting") == 0);
        test_space(t);
        test_emit(t);
        test_config(t);
        test_problem(t);
        sp_template_free(t);
    }
    test_bad_render();
    test_pipeline();
    test_tokens();
    test_args();
    test_large_space();
    test_pruned_space();
    test_unlisted_space();
    test_embedded();
    return sp_test_done("test_template");
}

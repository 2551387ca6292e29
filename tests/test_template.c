/* Templates: validation, the space walk, checks, configurations, problems, rendering, and every
 * template of the embedded set against two GPU profiles (spaces too large to list: test_template_space.c). */
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
    CHECK_EQ(k1.stage[0].tmaps.n, 0); /* no tensor maps unless the launch names them */
    CHECK_EQ(k1.stage[0].pdl, 0);     /* nor an early launch */
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
    bad_render("'k'", "{grid = {1}, block = {32}, tmaps = {{arg = 'A', rows = 8, cols = 8, box_rows = 8, box_cols = 8, swizzle = 0, rows_arg = 'A'}}}",
               "'x'", "nil", "tmaps[1].rows_arg = 'A', not the name of an i32 or u64 argument passed by value");
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
        "    cols = p.F, box_rows = 8, box_cols = 8, swizzle = 0, rows_arg = 'cap'}}} end, emit = function() return 'x' end}\n";
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
    CHECK(k.stage[0].tmaps.v[0].rows_arg == 4 && k.stage[0].tmaps.v[0].rows_arg_u64); /* capped by cap at launch */
    /* every generated source opens with where it comes from */
    CHECK(k.source && sp_test_has(k.source, "/* sptune " SPTUNE_VERSION_STRING " ar: k") && sp_test_has(k.source, "configuration bn=64,s=x") &&
          sp_test_has(k.source, "problem M=5,F=7") && sp_test_has(k.source, sp_template_hash(t)));
    sp_kernel_src_free(&k);
    sp_template_free(t);

    /* extents; an integer parameter may be negative (r), which only min and max take */
    sp_vars_set(&v, "r", -1);
    static const struct { const char *e; long long want; } ok[] = {
        {"3", 3}, {"M", 10}, {"M + 2 * F", 610}, {"(M + 2) * 3", 36}, {"cdiv(F, 128)", 3}, {"F / 128", 2},
        {"max(M, 4) - min(2, M)", 8}, {"cdiv(M*F, 7) + 1", 430}, {"min(1, max(r, 0)) * M", 0},
        {"cdiv(F, max(r, 1))", 300}, {"max(r, 0) + max(min(r, 5), 2)", 2}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        CHECK_ST(sp_expr_eval(ok[i].e, &v, &n), SPTUNE_OK);
        CHECK_MSG(n == ok[i].want, "%s = %lld, want %lld", ok[i].e, n, ok[i].want);
    }
    static const struct { const char *e, *why; } bad[] = {
        {"M +", "expected a number"}, {"F / 0", "division by zero"}, {"cdiv(F, 0)", "division by zero"},
        {"nope", "no value for this name"}, {"2 - M", "out of range"}, {"pow(2, 3)", "unknown function"},
        {"M)", "unexpected text"}, {"((((((((((((((((((((((((((((((((((M))))))))))))))))))))))))))))))))))", "nested too deeply"},
        {"99999999999999999999 * 99999", "out of range"}, {"r", "a negative extent"},
        {"M * r", "negative value outside min and max"}, {"r + M", "negative value outside min and max"},
        {"cdiv(M, r)", "negative value outside min and max"}, {"M / r", "negative value outside min and max"},
        {"cdiv(r, 2)", "negative value outside min and max"}};
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
    test_embedded();
    return sp_test_done("test_template");
}

/* Spaces too large to walk quickly or to list: the walk's count against brute force (10^6 raw configurations), the
 * configurations a failed check cannot tell apart skipped, and a space of 10^10 combinations counted from its
 * subtrees, estimated, and searched from candidates (tests/test_template.c: the rest of the templates' behaviour). */
#include "sp_clock.h"
#include "sp_space.h"
#include "sp_template.h"
#include "sp_test.h"

#include <stdio.h>
#include <stdlib.h>

static sp_gpu_profile h100(void) { return sp_test_profile("h100"); }

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
    printf("test_template_space: 10^6 raw configurations, %lld valid, in %.2f s\n", n, s);
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
    /* a sample where valid configurations are too rare to draw from the product (1 in 3 M): from subtrees, never a
       listing; valid, distinct, in space order */
    const double t0 = sp_now_s();
    CHECK_ST(sp_space_draw(t, &g, NULL, 12, 9, &cs), SPTUNE_OK);
    CHECK_MSG(cs.n == 12, "%lld drawn, not 12", cs.n);
    for (long long i = 0; i < cs.n; i++) {
        int ok = 0;
        CHECK_ST(sp_template_check(t, &cs.v[i], &g, NULL, &ok, NULL), SPTUNE_OK);
        CHECK(ok);
        CHECK(i == 0 || sp_config_cmp(&cs.v[i - 1], &cs.v[i]) < 0);
    }
    printf("test_template_space: 12 drawn from 1e10 combinations in %.1f s\n", sp_now_s() - t0);
    sp_configs_free(&cs);
    sp_template_free(t);
}

int main(void)
{
    unsetenv("SPTUNE_TEMPLATES");
    test_large_space();
    test_pruned_space();
    test_unlisted_space();
    return sp_test_done("test_template_space");
}

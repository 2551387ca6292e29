/* Templates as they are loaded: the module table validated field by field (each mistake named, with the
 * file), and templates read from a folder (SPTUNE_TEMPLATES): families, lib files in the hash, names and
 * folders that disagree, an op defined twice. */
#include "sp_template.h"
#include "sp_test.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static sp_gpu_profile h100(void) { return sp_test_profile("h100"); }

/* ---- validation of the module table ------------------------------------------------------ */

static void invalid(const char *body, const char *want)
{
    char src[2048];
    snprintf(src, sizeof src, "return {name = 'v', %s}\n", body);
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/v.lua", src, NULL, &t), SPTUNE_ERR_TEMPLATE);
    CHECK(t == NULL);
    CHECK_MSG(sp_test_has(sptune_last_error(), want), "want '%s' in '%s'", want, sptune_last_error());
    CHECK_MSG(sp_test_has(sptune_last_error(), "templates/test/v.lua"), "%s", sptune_last_error());
    sp_template_free(t);
}

#define P1 "params = {{name = 'a', values = {1, 2}}}"
#define FN "kernel = 'k', launch = function() end, emit = function() end"

static void test_validation(void)
{
    invalid(P1 ", kernel = 'k', launch = function() end", "emit must be a function");
    invalid(P1 ", kernel = 'k', emit = function() end", "launch must be a function");
    invalid(P1 ", launch = function() end, emit = function() end", "kernel must be a function");
    invalid(P1 ", kernel = 'not ident', launch = function() end, emit = function() end", "must be a C identifier");
    invalid("params = {{name = 'a', values = {1, 2}, default = 3}}, " FN, "params[1].default = 3 is not one of its values");
    invalid("params = {{name = 'a', values = {'x'}, default = 'y'}}, " FN, "params[1].default = 'y' is not one of its values");
    invalid("params = {{name = 'a', values = {'x'}, same_cost = 'yes'}}, " FN, "params[1].same_cost must be a boolean");
    invalid("params = {{name = 'a', values = {1}}, {name = 'a', values = {2}}}, " FN,
            "params[2]: parameter 'a' is declared twice");
    invalid("params = {{name = 'a', values = {1}}, {name = 'b', values = {1, 1.5}}}, " FN,
            "params[2].values[2] = 1.5 is not an integer");
    invalid("params = {{name = 'a', values = {1, 'x'}}}, " FN,
            "params[1].values[2] is a string but values[1] is a integer (one type per parameter)");
    invalid("params = {{name = 'a', values = {}}}, " FN, "params[1].values must be a non-empty list");
    invalid("params = {{name = 'a'}}, " FN, "params[1].values must be a non-empty list");
    invalid("params = {{name = 'a', values = {'x,y'}}}, " FN, "params[1].values[1] = 'x,y' must be a non-empty string");
    invalid("params = {{name = 'a', values = {'x y'}}}, " FN, "without ',', '=', spaces");
    invalid("dims = {'M', 'kind'}, ranges = {kind = {0, 3, category = true}}, " P1 ", " FN,
            "ranges.kind: a category is numbered by integers (int = true)");
    invalid("dims = {'M', 'gen'}, ranges = {gen = {0, 1, int = true, across = true}}, " P1 ", " FN,
            "ranges.gen: across needs a default");
    invalid("dims = {'M', {'gen', 0}}, ranges = {gen = {0, 2, int = true, category = true, across = true, own = 3}}, " P1
            ", " FN, "ranges.gen: own is the value, within the range, of an across category");
    invalid("dims = {'M'}, ranges = {N = {0, 3}}, " P1 ", " FN, "ranges names N, which is not a dimension");
    invalid("params = {{name = 'a', values = {'k=v'}}}, " FN, "params[1].values[1] = 'k=v'");
    invalid("params = {{name = 'a', values = {''}}}, " FN, "params[1].values[1] = ''");
    /* argument declarations */
    invalid(P1 ", args = 'const bf16 *A', " FN, "args must be a list");
    invalid(P1 ", args = {{name = 'A', type = 'bf17', role = 'input', shape = {1}}}, " FN, "args[1] (A): type must be one of");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'in', shape = {1}}}, " FN, "args[1] (A): role must be input");
    invalid(P1 ", args = {{name = 'A B', type = 'bf16', role = 'input', shape = {1}}}, " FN, "args[1].name must be a C identifier");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'input', shape = {1}}, {name = 'A', type = 'i32', role = 'scalar'}}, " FN,
            "args[2]: argument 'A' is declared twice");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'input'}}, " FN, "args[1] (A): shape must be a list of 1 to 4");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'input', shape = {1, 2, 3, 4, 5}}}, " FN, "shape must be a list");
    invalid(P1 ", args = {{name = 'n', type = 'i32', role = 'scalar', shape = {1}}}, " FN, "passed by value and has no shape");
    invalid(P1 ", args = {{name = 'Z', type = 'i32', role = 'dim'}}, " FN, "a dim argument must name a problem dimension");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'input', shape = {'zz * 2'}}}, " FN, "extent 'zz * 2': unknown name");
    invalid(P1 ", args = {{name = 'A', type = 'bf16', role = 'input', shape = {'a + '}}}, " FN, "extent 'a + ': expected");
    invalid("params = {{name = 'a', values = {{}}}}, " FN, "params[1].values[1] = a table is not an integer, a string or a boolean");
    invalid("params = {{name = 'a', values = {1, 2, 1}}}, " FN, "params[1].values has 1 twice");
    invalid("params = {{name = '1a', values = {1}}}, " FN, "params[1].name must be an identifier");
    invalid("params = {{values = {1}}}, " FN, "params[1].name must be an identifier (got a nil)");
    invalid("params = {}, " FN, "params must be a non-empty list");
    invalid(FN, "params must be a non-empty list of parameters (got nil)");
    invalid("params = {1}, " FN, "params[1] must be a table");
    invalid("params = {{name = 'a', values = {1}, doc = 3}}, " FN, "params[1].doc must be a string");
    invalid(P1 ", dims = 'M', " FN, "dims must be a list");
    invalid(P1 ", dims = {'M', 'M'}, " FN, "dims[2]: dimension 'M' is declared twice");
    invalid(P1 ", dims = {'M', 3}, " FN, "dims[2] must be an identifier");
    invalid(P1 ", dims = {'a','b','c','d','e','f','g','h','i','j','k','l','m','n','o','p','q'}, " FN,
            "dims has 17 names (at most 16)");
    invalid(P1 ", constraints = {function() end}, " FN, "constraints[1] must be a table");
    invalid(P1 ", constraints = {{why = 'w'}}, " FN, "constraints[1].check must be a function");
    invalid(P1 ", constraints = {{check = function() end}}, " FN, "constraints[1].why must be a non-empty string");
    invalid(P1 ", constraints = 3, " FN, "constraints must be a list");
    invalid(P1 ", options = 3, " FN, "options must be a function(c, gpu) or a list of strings");
    invalid(P1 ", options = {'-DX', 4}, " FN, "options[2] must be a non-empty string");
    invalid(P1 ", description = {}, " FN, "description must be a string");
    invalid(P1 ", family = 3, " FN, "family must be a string");

    /* More than SP_MAX_PARAMS parameters. */
    char body[4096] = "params = {";
    for (int i = 0; i <= SP_MAX_PARAMS; i++) {
        size_t n = strlen(body);
        snprintf(body + n, sizeof body - n, "{name = 'p%d', values = {1}},", i);
    }
    strcat(body, "}, " FN);
    invalid(body, "params has 33 entries (at most 32)");

    /* Not a table at all, or no name. */
    sp_template *t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/v.lua", "return 42", NULL, &t), SPTUNE_ERR_TEMPLATE);
    CHECK(sp_test_has(sptune_last_error(), "templates/test/v.lua: must return a table (got number)"));
    CHECK_ST(sp_template_load_source("templates/test/v.lua", "return {" P1 ", " FN "}", NULL, &t), SPTUNE_ERR_TEMPLATE);
    CHECK(sp_test_has(sptune_last_error(), "name must be a string (got nil)"));
    CHECK_ST(sp_template_load_source("@templates/test/v.lua", "return {name = 'v', " P1 ", " FN "}", NULL, &t),
             SPTUNE_OK);
    if (t) {
        CHECK(strcmp(sp_template_path(t), "templates/test/v.lua") == 0);
        CHECK(strcmp(sp_template_family(t), "test") == 0 && strcmp(sp_template_description(t), "") == 0);
        CHECK_EQ(sp_template_ndims(t), 0);
        sp_problem p;
        CHECK_ST(sp_problem_parse(t, "", &p), SPTUNE_OK);
        CHECK_EQ(p.n, 0);
        CHECK_ST(sp_problem_parse(t, "4", &p), SPTUNE_ERR_INVALID);
        sp_template_free(t);
    }

    /* A check that does not return a boolean is an error (0 would otherwise pass). */
    t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/v.lua",
                                     "return {name = 'v', " P1 ", " FN ",\n"
                                     "constraints = {{why = 'mod', check = function(c) return c.a % 2 end}}}",
                                     NULL, &t), SPTUNE_OK);
    if (t) {
        sp_gpu_profile g = h100();
        long long n;
        CHECK_ST(sp_template_space(t, &g, NULL, NULL, NULL, &n), SPTUNE_ERR_TEMPLATE);
        CHECK_MSG(sp_test_has(sptune_last_error(), "the check returned number, not a boolean (in constraint 'mod' for a=1)"),
                  "%s", sptune_last_error());
        sp_template_free(t);
    }
    /* Integral floats (2^6) are integers; a check error names its constraint and config. */
    t = NULL;
    CHECK_ST(sp_template_load_source("templates/test/v.lua",
                                     "return {name = 'v', params = {{name = 'a', values = {2^6, 2^7}}}, " FN ",\n"
                                     "constraints = {{why = 'boom', check = function(c) error('x' .. c.a) end}}}",
                                     NULL, &t), SPTUNE_OK);
    if (t) {
        sp_gpu_profile g = h100();
        sp_config c;
        int ok;
        CHECK(strcmp(sp_template_param(t, 0)->values[1].text, "128") == 0);
        CHECK_ST(sp_config_parse(t, "a=128", &c), SPTUNE_OK);
        CHECK_ST(sp_template_check(t, &c, &g, NULL, &ok, NULL), SPTUNE_ERR_TEMPLATE);
        CHECK_MSG(sp_test_has(sptune_last_error(), "templates/test/v.lua:2: x128 (in constraint 'boom' for a=128)"), "%s",
                  sptune_last_error());
        sp_template_free(t);
    }
}

/* ---- templates from a folder ------------------------------------------------------------- */

static void write_file(const char *dir, const char *rel, const char *text)
{
    char path[1400];
    snprintf(path, sizeof path, "%.1200s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_folder(void)
{
    const char *dir = sp_test_tmpdir("test_template");
    char sub[1300];
    static const char *const dirs[] = {"fam", "lib", "other", ".hidden"};
    for (int i = 0; i < 4; i++) {
        snprintf(sub, sizeof sub, "%.1200s/%s", dir, dirs[i]);
        mkdir(sub, 0755);
    }
    write_file(dir, "lib/h.lua", "return {n = 5}\n");
    write_file(dir, "fam/op1.lua",
               "local h = require('lib.h')\nreturn {name = 'op1', params = {{name = 'a', values = {h.n}}},\n"
               " kernel = 'k', launch = function() end, emit = function() error('op1 emit') end}\n");
    write_file(dir, "fam/zeta.lua", "return {name = 'wrong', params = {{name = 'a', values = {1}}}, " FN "}\n");
    write_file(dir, "other/alpha.lua",
               "return {name = 'alpha', family = 'fam', params = {{name = 'a', values = {1}}}, " FN "}\n");
    write_file(dir, "other/notes.txt", "not a template\n");
    write_file(dir, ".hidden/ghost.lua", "error('never')\n");
    write_file(dir, "top.lua", "error('never')\n");
    setenv("SPTUNE_TEMPLATES", dir, 1);

    char **names = NULL;
    int n = -1;
    CHECK_ST(sp_template_list(&names, &n), SPTUNE_OK);
    CHECK_MSG(n == 3 && names && strcmp(names[0], "alpha") == 0 && strcmp(names[1], "op1") == 0 &&
              strcmp(names[2], "zeta") == 0 && names[3] == NULL, "n=%d", n);
    sp_strv_free(names);

    sp_template *t = NULL;
    CHECK_ST(sp_template_load("op1", &t), SPTUNE_OK);
    if (t) {
        CHECK(strcmp(sp_template_name(t), "op1") == 0 && strcmp(sp_template_family(t), "fam") == 0);
        CHECK(strcmp(sp_template_path(t), "templates/fam/op1.lua") == 0);
        CHECK_EQ(sp_template_param(t, 0)->values[0].i, 5);
        sp_gpu_profile g = h100();
        sp_config c;
        sp_kernel_src k;
        sp_config_default(t, &c);
        CHECK_ST(sp_template_emit(t, &c, &g, NULL, &k), SPTUNE_ERR_TEMPLATE);
        /* messages name the file read under SPTUNE_TEMPLATES (Lua keeps the tail of a long name) */
        CHECK_MSG(sp_test_has(sptune_last_error(), "/fam/op1.lua:3: op1 emit") && !sp_test_has(sptune_last_error(), "templates/fam"), "%s",
                  sptune_last_error());
        char hash[65];
        snprintf(hash, sizeof hash, "%s", sp_template_hash(t));
        sp_template_free(t);
        t = NULL;
        CHECK_ST(sp_template_load("op1", &t), SPTUNE_OK);
        if (t) CHECK(strcmp(hash, sp_template_hash(t)) == 0);
        sp_template_free(t);
        t = NULL;
        write_file(dir, "lib/h.lua", "return {n = 6}\n"); /* read at load time, part of the hash */
        CHECK_ST(sp_template_load("op1", &t), SPTUNE_OK);
        if (t) {
            CHECK_EQ(sp_template_param(t, 0)->values[0].i, 6);
            CHECK(strcmp(hash, sp_template_hash(t)) != 0);
        }
        sp_template_free(t);
    }
    t = NULL;
    CHECK_ST(sp_template_load("zeta", &t), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), dir) &&
                  sp_test_has(sptune_last_error(), "/fam/zeta.lua: name 'wrong' must be the file name 'zeta'"), "%s",
              sptune_last_error());
    CHECK_ST(sp_template_load("alpha", &t), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), "family 'fam' must be the folder 'other'"), "%s", sptune_last_error());
    CHECK_ST(sp_template_load("nope", &t), SPTUNE_ERR_NOT_FOUND);
    CHECK_MSG(sp_test_has(sptune_last_error(), "no template 'nope'") && sp_test_has(sptune_last_error(), "alpha, op1, zeta"), "%s",
              sptune_last_error());
    CHECK_ST(sp_template_load("h", &t), SPTUNE_ERR_NOT_FOUND); /* lib is not a family */
    CHECK_ST(sp_template_load("../fam/op1", &t), SPTUNE_ERR_NOT_FOUND);

    /* The same op in two families is refused. */
    write_file(dir, "other/op1.lua", "return {}\n");
    CHECK_ST(sp_template_list(&names, &n), SPTUNE_ERR_TEMPLATE);
    CHECK_MSG(sp_test_has(sptune_last_error(), "op 'op1' is defined twice"), "%s", sptune_last_error());
    CHECK_ST(sp_template_load("op1", &t), SPTUNE_ERR_TEMPLATE);
    unsetenv("SPTUNE_TEMPLATES");
}

int main(void)
{
    unsetenv("SPTUNE_TEMPLATES");
    test_validation();
    test_folder();
    return sp_test_done("test_template_load");
}

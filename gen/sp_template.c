/* Templates: find, load in the sandbox (the module table is read in sp_template_read.c), describe. */
#include "sp_template_internal.h"

#include "sp_hash.h"
#include "sp_status.h"
#include "sp_str.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

const char sp_template_key = 'T';

/* ---- small helpers ----------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- loading ----------------------------------------------------------------------------- */

static void compute_hash(sp_template *t, const char *src, size_t len)
{
    sp_sha256 s;
    uint8_t d[32];
    sp_sha256_init(&s);
    sp_sha256_field(&s, t->path, strlen(t->path));
    sp_sha256_field(&s, src, len);
    for (int i = 0; i < t->nlibs; i++) { /* sorted by path */
        sp_sha256_field(&s, t->libs[i].path, strlen(t->libs[i].path));
        sp_sha256_field(&s, t->libs[i].data, t->libs[i].len);
    }
    sp_sha256_final(&s, d);
    sp_hex(d, sizeof d, t->hash);
}

/* Takes ownership of libs. stem is NULL for a template given as a string. */
static sptune_status load_common(const char *path, const char *stem, const char *src, size_t len,
                                 const sp_sandbox_limits *limits, sp_tfile *libs, int nlibs,
                                 sp_template **out)
{
    sp_template *t = calloc(1, sizeof *t);
    if (!t || !(t->path = sp_strdup(path)) || !(t->where = stem ? sp_tsource_display(path) : sp_strdup(path))) {
        if (t) free(t->path);
        free(t);
        sp_tfiles_free(libs, nlibs);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory loading %s", path);
    }
    t->libs = libs;
    t->nlibs = nlibs;
    t->tokens = -1;
    compute_hash(t, src, len);
    load_ctx x = {.t = t, .src = src, .len = len, .stem = stem, .folder = ""};
    char folder[64] = "";
    if (sp_tsource_split(path, folder, NULL)) x.folder = folder;
    sptune_status st = sp_sandbox_open(&t->sb, limits, t->where, t->libs, t->nlibs);
    if (st == SPTUNE_OK) st = sp_sandbox_pcall(&t->sb, sp_template_read_module, &x, 0);
    if (st != SPTUNE_OK) {
        sp_template_free(t);
        return st;
    }
    *out = t;
    return SPTUNE_OK;
}

sptune_status sp_template_load_source(const char *chunkname, const char *source,
                                      const sp_sandbox_limits *limits, sp_template **out)
{
    *out = NULL;
    if (!chunkname || !source) return sp_fail(SPTUNE_ERR_INVALID, "sp_template_load_source: no chunk name or source");
    if (chunkname[0] == '@') chunkname++;
    if (strlen(chunkname) >= 140) return sp_fail(SPTUNE_ERR_INVALID, "chunk name too long: %s", chunkname);
    sp_tfile *libs;
    int nlibs;
    sptune_status st = sp_tsource_libs(&libs, &nlibs);
    if (st != SPTUNE_OK) return st;
    return load_common(chunkname, NULL, source, strlen(source), limits, libs, nlibs, out);
}

sptune_status sp_template_list(char ***names, int *count)
{
    *names = NULL;
    if (count) *count = 0;
    char **paths;
    int n;
    sptune_status st = sp_tsource_paths(&paths, &n);
    if (st != SPTUNE_OK) return st;
    char **v = calloc((size_t)n + 1, sizeof *v);
    if (!v) { sp_strv_free(paths); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    int k = 0;
    for (int i = 0; i < n && st == SPTUNE_OK; i++) {
        char dir[64], stem[64];
        if (!sp_tsource_split(paths[i], dir, stem) || strcmp(dir, "lib") == 0) continue;
        for (int j = 0; j < i; j++) {
            char d2[64], s2[64];
            if (sp_tsource_split(paths[j], d2, s2) && strcmp(d2, "lib") != 0 && strcmp(s2, stem) == 0)
                st = sp_fail(SPTUNE_ERR_TEMPLATE, "op '%s' is defined twice: %s and %s", stem, paths[j], paths[i]);
        }
        if (st == SPTUNE_OK && !(v[k++] = sp_strdup(stem))) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    sp_strv_free(paths);
    if (st != SPTUNE_OK) { sp_strv_free(v); return st; }
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *names = v;
    if (count) *count = k;
    return SPTUNE_OK;
}

sptune_status sp_template_load(const char *op, sp_template **out)
{
    *out = NULL;
    if (!op || !*op) return sp_fail(SPTUNE_ERR_INVALID, "no template name given");
    char **paths;
    int n;
    sptune_status st = sp_tsource_paths(&paths, &n);
    if (st != SPTUNE_OK) return st;
    const char *path = NULL;
    for (int i = 0; i < n; i++) {
        char dir[64], stem[64];
        if (!sp_tsource_split(paths[i], dir, stem) || strcmp(dir, "lib") == 0 || strcmp(stem, op) != 0) continue;
        if (path) {
            st = sp_fail(SPTUNE_ERR_TEMPLATE, "op '%s' is defined twice: %s and %s", op, path, paths[i]);
            break;
        }
        path = paths[i];
    }
    if (st == SPTUNE_OK && !path) {
        char **names;
        int count;
        st = sp_template_list(&names, &count);
        if (st == SPTUNE_OK) {
            sp_buf ops = {0};
            for (int i = 0; i < count; i++) sp_buf_printf(&ops, "%s%s", i ? ", " : "", names[i]);
            st = sp_fail(SPTUNE_ERR_NOT_FOUND, "no template '%s' in %s (templates: %s)", op, sp_tsource_where(),
                         ops.data ? ops.data : "none");
            sp_buf_free(&ops);
            sp_strv_free(names);
        }
    }
    char *src = NULL;
    size_t len = 0;
    if (st == SPTUNE_OK) st = sp_tsource_read(path, &src, &len);
    sp_tfile *libs = NULL;
    int nlibs = 0;
    if (st == SPTUNE_OK) st = sp_tsource_libs(&libs, &nlibs);
    if (st == SPTUNE_OK) st = load_common(path, op, src, len, NULL, libs, nlibs, out);
    free(src);
    sp_strv_free(paths);
    return st;
}

void sp_template_free(sp_template *t)
{
    if (!t) return;
    sp_sandbox_close(&t->sb); /* first: finalizers may still call require() */
    for (int i = 0; i < t->nparams; i++) {
        sp_param *p = &t->params[i];
        for (int j = 0; j < p->nvalues; j++) free(p->values[j].text);
        free(p->values);
        free(p->name);
        free(p->doc);
    }
    for (int i = 0; i < t->nconstraints; i++) free(t->why[i]);
    free(t->why);
    sp_tfiles_free(t->libs, t->nlibs);
    free(t->name);
    free(t->family);
    free(t->description);
    for (int i = 0; i < t->nargs; i++) sp_arg_free(&t->args[i]);
    free(t->args_text);
    free(t->path);
    free(t->where);
    free(t);
}

/* ---- accessors --------------------------------------------------------------------------- */

const char *sp_template_name(const sp_template *t) { return t->name; }
const char *sp_template_family(const sp_template *t) { return t->family; }
const char *sp_template_description(const sp_template *t) { return t->description; }
const char *sp_template_args(const sp_template *t) { return t->args_text ? t->args_text : ""; }
int sp_template_nargs(const sp_template *t) { return t->nargs; }
const sp_arg *sp_template_arg(const sp_template *t, int i) { return i >= 0 && i < t->nargs ? &t->args[i] : NULL; }

int sp_template_arg_index(const sp_template *t, const char *name)
{
    for (int i = 0; i < t->nargs; i++)
        if (strcmp(t->args[i].name, name) == 0) return i;
    return -1;
}
const char *sp_template_path(const sp_template *t) { return t->path; }
const char *sp_template_hash(const sp_template *t) { return t->hash; }
int sp_template_nparams(const sp_template *t) { return t->nparams; }
int sp_template_ndims(const sp_template *t) { return t->ndims; }

const sp_param *sp_template_param(const sp_template *t, int i)
{
    return i >= 0 && i < t->nparams ? &t->params[i] : NULL;
}

const char *sp_template_dim(const sp_template *t, int i)
{
    return i >= 0 && i < t->ndims ? t->dims[i] : NULL;
}

const char *sp_template_tokens(const sp_template *t) { return t->tokens >= 0 ? t->dims[t->tokens] : NULL; }

int sp_template_dim_as_before(const sp_template *t, int i)
{
    return t && i >= 0 && i < t->ndims && t->dim_as_before[i];
}

int sp_template_dim_across(const sp_template *t, int i)
{
    return t && i >= 0 && i < t->ndims && t->dim_across[i];
}

int sp_template_dim_own(const sp_template *t, int i, double *v)
{
    if (!t || i < 0 || i >= t->ndims || isnan(t->dim_own[i])) return 0;
    if (v) *v = t->dim_own[i];
    return 1;
}

int sp_template_own_dim(const sp_template *t, double *v)
{
    for (int d = 0; t && d < t->ndims; d++)
        if (sp_template_dim_own(t, d, v)) return d;
    return -1;
}

int sp_template_dim_category(const sp_template *t, int i)
{
    return t && i >= 0 && i < t->ndims && t->dim_category[i];
}

int sp_template_dim_default(const sp_template *t, int i, double *v)
{
    if (!t || i < 0 || i >= t->ndims || !t->dim_optional[i]) return 0;
    if (v) *v = t->dim_default[i];
    return 1;
}

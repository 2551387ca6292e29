/* Template files: the embedded set, or $SPTUNE_TEMPLATES/<folder>/<file>.lua (and lib/<file>.cuh). */
#include "sp_tsource.h"

#include "sp_embedded.h"
#include "sp_status.h"
#include "sp_template.h"
#include "sp_str.h"
#include "sp_file.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PREFIX "templates/"
#define PREFIX_LEN 10

/* A plain file or folder name: [A-Za-z0-9_.-], not starting with '.', under 64 bytes. */
static int plain_name(const char *s, size_t n)
{
    if (n == 0 || n >= 64 || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int sp_tsource_split(const char *path, char dir[64], char stem[64])
{
    if (!path || strncmp(path, PREFIX, PREFIX_LEN) != 0) return 0;
    const char *d = path + PREFIX_LEN;
    const char *slash = strchr(d, '/');
    if (!slash || !plain_name(d, (size_t)(slash - d))) return 0;
    const char *f = slash + 1;
    size_t fn = strlen(f);
    if (fn <= 4 || strcmp(f + fn - 4, ".lua") != 0 || !plain_name(f, fn)) return 0;
    if (dir) { memcpy(dir, d, (size_t)(slash - d)); dir[slash - d] = 0; }
    if (stem) { memcpy(stem, f, fn - 4); stem[fn - 4] = 0; }
    return 1;
}

int sp_tsource_cuda(const char *path)
{
    static const char lib[] = PREFIX "lib/";
    if (!path || strncmp(path, lib, sizeof lib - 1) != 0) return 0;
    const char *f = path + sizeof lib - 1;
    const size_t fn = strlen(f);
    return fn > 4 && strcmp(f + fn - 4, ".cuh") == 0 && plain_name(f, fn);
}

/* A file of the set: a template or lib module (.lua), or CUDA a lib module includes (lib/<name>.cuh). */
static int known_file(const char *path) { return sp_tsource_split(path, NULL, NULL) || sp_tsource_cuda(path); }

/* The folder named by SPTUNE_TEMPLATES, NULL for the embedded set; fails when it is no folder. */
static sptune_status source_root(const char **root)
{
    const char *env = getenv("SPTUNE_TEMPLATES");
    *root = NULL;
    if (!env || !*env) return SPTUNE_OK;
    struct stat st;
    if (stat(env, &st) != 0 || !S_ISDIR(st.st_mode))
        return sp_fail(SPTUNE_ERR_NOT_FOUND, "SPTUNE_TEMPLATES=%s is not a folder", env);
    *root = env;
    return SPTUNE_OK;
}

const char *sp_tsource_where(void)
{
    const char *root = NULL;
    if (source_root(&root) != SPTUNE_OK || !root) return "the embedded set";
    return root;
}

char *sp_tsource_display(const char *path)
{
    const char *root = NULL;
    if (source_root(&root) != SPTUNE_OK) sp_clear_error();
    if (root && known_file(path)) return sp_asprintf("%s/%s", root, path + PREFIX_LEN);
    return sp_strdup(path);
}

typedef struct strv {
    char **v;
    int n, cap;
    int oom;
} strv;

static void strv_push(strv *s, char *str)
{
    if (!str) { s->oom = 1; return; }
    if (s->n + 2 > s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) { free(str); s->oom = 1; return; }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static sptune_status scan_folder(const char *root, strv *out)
{
    DIR *top = opendir(root);
    if (!top) return sp_fail(SPTUNE_ERR_IO, "cannot read folder %s: %s", root, strerror(errno));
    struct dirent *de;
    while (!out->oom && (de = readdir(top)) != NULL) {
        if (!plain_name(de->d_name, strlen(de->d_name))) continue;
        char *sub = sp_asprintf("%s/%s", root, de->d_name);
        if (!sub) { out->oom = 1; break; }
        DIR *d = is_dir(sub) ? opendir(sub) : NULL;
        struct dirent *fe;
        while (d && !out->oom && (fe = readdir(d)) != NULL) {
            char *rel = sp_asprintf(PREFIX "%s/%s", de->d_name, fe->d_name);
            if (!rel) { out->oom = 1; break; }
            char *full = sp_asprintf("%s/%s", sub, fe->d_name);
            if (full && known_file(rel) && is_file(full)) {
                strv_push(out, rel);
                rel = NULL;
            } else if (!full) {
                out->oom = 1;
            }
            free(full);
            free(rel);
        }
        if (d) closedir(d);
        free(sub);
    }
    closedir(top);
    return SPTUNE_OK;
}

sptune_status sp_tsource_paths(char ***paths, int *count)
{
    *paths = NULL;
    if (count) *count = 0;
    const char *root;
    sptune_status st = source_root(&root);
    if (st != SPTUNE_OK) return st;
    strv s = {0};
    if (root) {
        st = scan_folder(root, &s);
    } else {
        for (const sp_embedded_file *f = sp_embedded_templates; f->path; f++)
            if (known_file(f->path)) strv_push(&s, sp_strdup(f->path));
    }
    if (st == SPTUNE_OK && !s.v) {
        s.v = calloc(1, sizeof *s.v);
        if (!s.v) s.oom = 1;
    }
    if (st != SPTUNE_OK || s.oom) {
        sp_strv_free(s.v);
        return st != SPTUNE_OK ? st : sp_fail(SPTUNE_ERR_NOMEM, "out of memory listing templates");
    }
    qsort(s.v, (size_t)s.n, sizeof *s.v, cmp_str);
    *paths = s.v;
    if (count) *count = s.n;
    return SPTUNE_OK;
}

sptune_status sp_tsource_read(const char *path, char **data, size_t *len)
{
    *data = NULL;
    if (len) *len = 0;
    if (!known_file(path))
        return sp_fail(SPTUNE_ERR_INVALID, "'%s' is not a template path (templates/<folder>/<name>.lua or "
                       "templates/lib/<name>.cuh)",
                       path ? path : "(null)");
    const char *root;
    sptune_status st = source_root(&root);
    if (st != SPTUNE_OK) return st;
    if (root) {
        char *full = sp_asprintf("%s/%s", root, path + PREFIX_LEN);
        if (!full) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        st = sp_read_file(full, data, len);
        free(full);
        return st;
    }
    for (const sp_embedded_file *f = sp_embedded_templates; f->path; f++) {
        if (strcmp(f->path, path) != 0) continue;
        *data = sp_strndup(f->data, f->len);
        if (!*data) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        if (len) *len = f->len;
        return SPTUNE_OK;
    }
    return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s is not in the embedded templates", path);
}

void sp_tfiles_free(sp_tfile *files, int count)
{
    if (!files) return;
    for (int i = 0; i < count; i++) {
        free(files[i].path);
        free(files[i].where);
        free(files[i].data);
    }
    free(files);
}

sptune_status sp_tsource_libs(sp_tfile **files, int *count)
{
    *files = NULL;
    *count = 0;
    char **paths;
    int n;
    sptune_status st = sp_tsource_paths(&paths, &n);
    if (st != SPTUNE_OK) return st;
    sp_tfile *out = calloc((size_t)n + 1, sizeof *out);
    if (!out) { sp_strv_free(paths); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    int k = 0;
    for (int i = 0; i < n; i++) {
        char dir[64];
        if (!sp_tsource_cuda(paths[i]) && (!sp_tsource_split(paths[i], dir, NULL) || strcmp(dir, "lib") != 0))
            continue;
        st = sp_tsource_read(paths[i], &out[k].data, &out[k].len);
        if (st != SPTUNE_OK) break;
        out[k].path = sp_strdup(paths[i]);
        out[k].where = sp_tsource_display(paths[i]);
        k++; /* counted whatever failed: sp_tfiles_free frees its parts */
        if (!out[k - 1].path || !out[k - 1].where) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); break; }
    }
    sp_strv_free(paths);
    if (st != SPTUNE_OK) { sp_tfiles_free(out, k); return st; }
    *files = out;
    *count = k;
    return SPTUNE_OK;
}

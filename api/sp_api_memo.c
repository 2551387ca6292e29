/* The runtime API's in-process memo: a repeated sptune_kernel_get costs a copy, not a lookup, a render and a
 * cache read; and the deep copy of a kernel object it keeps and hands out. */
#include "sp_gpu.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sptune.h"
#include "sptune_kernel_object.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

sptune_status sp_api_kernel_clone(const sptune_kernel *s, sptune_kernel **out)
{
    sptune_kernel *k = malloc(sizeof *k);
    if (!k) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    *k = *s;
    /* nothing shared with s from here on, so that a failure below frees only k's own copies */
    memset(&k->loaded, 0, sizeof k->loaded);
    k->t = NULL;
    k->dense_rt = NULL;
    k->ngeo = k->geo_next = 0;
    k->op = k->config = k->args = NULL;
    k->src.source = NULL;
    k->src.options = NULL;
    k->cubin.image = NULL;
    k->cubin.log = NULL;
    for (int i = 0; i < k->nargs; i++) {
        k->arg[i].decl.doc = k->arg[i].shape_text = NULL;
        for (int j = 0; j < k->arg[i].decl.nshape; j++) k->arg[i].decl.shape[j] = NULL;
    }
    int oom = !(k->op = strdup(s->op)) || !(k->config = strdup(s->config)) || !(k->args = strdup(s->args)) ||
              !(k->src.source = strdup(s->src.source)) || !(k->cubin.log = strdup(s->cubin.log ? s->cubin.log : "")) ||
              !(k->cubin.image = malloc(s->cubin.size ? s->cubin.size : 1));
    if (!oom) memcpy(k->cubin.image, s->cubin.image, s->cubin.size);
    for (int i = 0; i < k->nargs && !oom; i++) {
        kernel_arg *x = &k->arg[i];
        oom = !(x->decl.doc = strdup(s->arg[i].decl.doc)) || !(x->shape_text = strdup(s->arg[i].shape_text));
        for (int j = 0; j < x->decl.nshape && !oom; j++) oom = !(x->decl.shape[j] = strdup(s->arg[i].decl.shape[j]));
    }
    if (!oom && s->src.options) {
        int n = 0;
        while (s->src.options[n]) n++;
        oom = !(k->src.options = calloc((size_t)n + 1, sizeof *k->src.options));
        for (int i = 0; i < n && !oom; i++) oom = !(k->src.options[i] = strdup(s->src.options[i]));
    }
    if (oom) {
        sptune_kernel_free(k);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    *out = k;
    return SPTUNE_OK;
}

#define MEMO_MAX 64
static struct {
    pthread_mutex_t lock;
    int n, next;
    char *key[MEMO_MAX];
    sptune_kernel *k[MEMO_MAX];
} memo = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}, {0}};

/* What a request's answer depends on: the request, the GPU profile it resolved to, and the state of
 * the user's database file (size, time, inode of it and of its -wal), so that a result recorded
 * meanwhile is seen, and the fixed parameters. NULL (no memo) with $SPTUNE_TEMPLATES set: templates being edited. */
char *sp_api_memo_key(const sptune_kernel_request *req, const sp_gpu_profile *gpu)
{
    if (getenv("SPTUNE_TEMPLATES")) return NULL;
    char path[1024] = "", state[160] = "none";
    const char *db = req->db_path;
    if (!db && sptune_default_db_path(path, sizeof path) == SPTUNE_OK) db = path;
    sp_clear_error();
    if (db && *db) {
        struct stat a, w;
        char *wal = sp_asprintf("%s-wal", db);
        int has = stat(db, &a) == 0, has_wal = wal && stat(wal, &w) == 0;
        free(wal);
        snprintf(state, sizeof state, "%d:%lld:%lld.%ld:%llu|%d:%lld:%lld.%ld", has, has ? (long long)a.st_size : 0,
                 has ? (long long)a.st_mtim.tv_sec : 0, has ? a.st_mtim.tv_nsec : 0L,
                 has ? (unsigned long long)a.st_ino : 0,
                 has_wal, has_wal ? (long long)w.st_size : 0, has_wal ? (long long)w.st_mtim.tv_sec : 0,
                 has_wal ? w.st_mtim.tv_nsec : 0L);
    }
    return sp_asprintf("%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%lld\x1f%s\x1f%s\x1f%d\x1f%s\x1f%s\x1f%d", req->op, req->problem,
                       gpu->info.profile, gpu->info.arch, gpu->info.sm_count, (long long)gpu->info.smem_per_block_optin,
                       db ? db : "", state, req->ignore_shipped,
                       req->cache_dir ? req->cache_dir : "\x1e" "default", req->fixed ? req->fixed : "", req->sparse_only);
}

int sp_api_memo_find(const char *key, sptune_kernel **out)
{
    int hit = 0;
    pthread_mutex_lock(&memo.lock);
    for (int i = 0; i < memo.n && !hit; i++)
        if (strcmp(memo.key[i], key) == 0) hit = sp_api_kernel_clone(memo.k[i], out) == SPTUNE_OK;
    pthread_mutex_unlock(&memo.lock);
    return hit;
}

void sp_api_memo_add(const char *key, const sptune_kernel *k)
{
    sptune_kernel *copy = NULL;
    char *full = strdup(key);
    if (!full || sp_api_kernel_clone(k, &copy) != SPTUNE_OK) {
        free(full);
        sp_clear_error();
        return;
    }
    pthread_mutex_lock(&memo.lock);
    int slot = memo.n < MEMO_MAX ? memo.n++ : memo.next;   /* full: the oldest entry goes */
    if (memo.k[slot]) {
        free(memo.key[slot]);
        sptune_kernel_free(memo.k[slot]);
        memo.next = (memo.next + 1) % MEMO_MAX;
    }
    memo.key[slot] = full;
    memo.k[slot] = copy;
    pthread_mutex_unlock(&memo.lock);
}

#include "sp_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SP_MSG_MAX 4096
static _Thread_local char sp_msg[SP_MSG_MAX];

const char *sptune_last_error(void) { return sp_msg; }
void sp_clear_error(void) { sp_msg[0] = 0; }
const char *sptune_version(void) { return SPTUNE_VERSION; }

const char *sptune_status_name(sptune_status st)
{
    switch (st) {
    case SPTUNE_OK: return "ok";
    case SPTUNE_ERR_INVALID: return "invalid";
    case SPTUNE_ERR_NOMEM: return "out of memory";
    case SPTUNE_ERR_IO: return "io";
    case SPTUNE_ERR_TEMPLATE: return "template";
    case SPTUNE_ERR_COMPILE: return "compile";
    case SPTUNE_ERR_NO_GPU: return "no gpu";
    case SPTUNE_ERR_CUDA: return "cuda";
    case SPTUNE_ERR_DB: return "database";
    case SPTUNE_ERR_NOT_FOUND: return "not found";
    case SPTUNE_ERR_UNSUPPORTED: return "unsupported";
    case SPTUNE_ERR_WRONG_RESULT: return "wrong result";
    }
    return "unknown";
}

sptune_status sp_fail(sptune_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sp_msg, sizeof sp_msg, fmt, ap);
    va_end(ap);
    return st;
}

sptune_status sp_wrap(sptune_status st, const char *fmt, ...)
{
    char old[SP_MSG_MAX];
    va_list ap;
    memcpy(old, sp_msg, sizeof old);
    va_start(ap, fmt);
    int n = vsnprintf(sp_msg, sizeof sp_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof sp_msg) {
        /* "prefix: old", cut to fit */
        size_t room = sizeof sp_msg - (size_t)n - 2;
        size_t len = strnlen(old, room - 1);
        sp_msg[n] = ':';
        sp_msg[n + 1] = ' ';
        memcpy(sp_msg + n + 2, old, len);
        sp_msg[n + 2 + len] = 0;
    }
    return st;
}

char *sp_strdup(const char *s) { return s ? sp_strndup(s, strlen(s)) : NULL; }

char *sp_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *sp_asprintf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

void sp_buf_append(sp_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) { b->oom = 1; return; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sp_buf_puts(sp_buf *b, const char *s) { sp_buf_append(b, s, strlen(s)); }

void sp_buf_printf(sp_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; va_end(ap2); return; }
    char *tmp = malloc((size_t)n + 1);
    if (!tmp) { b->oom = 1; va_end(ap2); return; }
    vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    sp_buf_append(b, tmp, (size_t)n);
    free(tmp);
}

void sp_buf_free(sp_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

sptune_status sp_mkdir_p(const char *path)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return sp_fail(SPTUNE_ERR_INVALID, "bad folder path '%s'", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return sp_fail(SPTUNE_ERR_IO, "cannot create folder %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return sp_fail(SPTUNE_ERR_IO, "cannot create folder %s: %s", tmp, strerror(errno));
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        return sp_fail(SPTUNE_ERR_IO, "%s exists and is not a folder", tmp);
    return SPTUNE_OK;
}

sptune_status sp_read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return sp_fail(errno == ENOENT ? SPTUNE_ERR_NOT_FOUND : SPTUNE_ERR_IO,
                           "cannot open %s: %s", path, strerror(errno));
    sp_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) sp_buf_append(&b, chunk, n);
    int err = ferror(f);
    fclose(f);
    if (err) { sp_buf_free(&b); return sp_fail(SPTUNE_ERR_IO, "cannot read %s", path); }
    if (b.oom) { sp_buf_free(&b); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory reading %s", path); }
    if (!b.data) { b.data = calloc(1, 1); if (!b.data) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory"); }
    *data = b.data;
    if (len) *len = b.len;
    return SPTUNE_OK;
}

sptune_status sp_write_file_atomic(const char *path, const void *data, size_t len)
{
    char *tmp = sp_asprintf("%s.tmp.%ld.XXXXXX", path, (long)getpid());
    if (!tmp) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        sptune_status st = sp_fail(SPTUNE_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            sptune_status st = sp_fail(SPTUNE_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
            close(fd); unlink(tmp); free(tmp);
            return st;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fchmod(fd, 0644) != 0 || fsync(fd) != 0 || close(fd) != 0) {
        sptune_status st = sp_fail(SPTUNE_ERR_IO, "cannot finish %s: %s", tmp, strerror(errno));
        unlink(tmp); free(tmp);
        return st;
    }
    if (rename(tmp, path) != 0) {
        sptune_status st = sp_fail(SPTUNE_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp); free(tmp);
        return st;
    }
    free(tmp);
    return SPTUNE_OK;
}

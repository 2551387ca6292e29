/* Files: folders, whole-file reads, atomic writes, and the default locations of sptune's files. */
#include "sp_file.h"
#include "sp_status.h"
#include "sp_str.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return sp_read_file_max(path, SIZE_MAX, NULL, data, len);
}

sptune_status sp_read_file_max(const char *path, size_t max, const char *what, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return sp_fail(errno == ENOENT ? SPTUNE_ERR_NOT_FOUND : SPTUNE_ERR_IO,
                           "cannot open %s: %s", path, strerror(errno));
    sp_buf b = {0};
    char chunk[65536];
    size_t n;
    /* stops at the first failed allocation, and once past max (a stream need not end) */
    while (!b.oom && b.len <= max && (n = fread(chunk, 1, sizeof chunk, f)) > 0) sp_buf_append(&b, chunk, n);
    int err = ferror(f);
    fclose(f);
    if (err) { sp_buf_free(&b); return sp_fail(SPTUNE_ERR_IO, "cannot read %s", path); }
    if (b.oom) { sp_buf_free(&b); return sp_fail(SPTUNE_ERR_NOMEM, "out of memory reading %s", path); }
    if (b.len > max) {
        sp_buf_free(&b);
        return sp_fail(SPTUNE_ERR_INVALID, "%s: more than the %zu bytes %s", path, max, what ? what : "allowed");
    }
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

sptune_status sp_copy_out(char *buf, size_t len, const char *text, const char *what)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no buffer", what);
    size_t n = strlen(text);
    if (n + 1 > len)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: buffer of %zu bytes is too small (%zu needed)", what, len, n + 1);
    memcpy(buf, text, n + 1);
    return SPTUNE_OK;
}

/* $direct, else $xdg/<leaf> (an absolute $xdg only, as the XDG spec asks), else ~/<home_rel>/<leaf>. */
static sptune_status sp_default_path(char *buf, size_t len, const char *direct, const char *xdg,
                                     const char *home_rel, const char *leaf, const char *what)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "%s: no buffer", what);
    buf[0] = 0;
    const char *d = getenv(direct);
    if (d && *d) return sp_copy_out(buf, len, d, what);
    sptune_status st;
    char *path = NULL;
    const char *x = getenv(xdg);
    struct passwd pw, *pwres = NULL;
    char pwbuf[4096];
    if (x && x[0] == '/') {
        path = sp_asprintf("%s/%s", x, leaf);
    } else {
        const char *home = getenv("HOME");
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &pwres) == 0 && pwres)
            home = pwres->pw_dir;
        if (!home || !*home)
            return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s: no home folder (HOME is not set); set %s", what, direct);
        path = sp_asprintf("%s/%s/%s", home, home_rel, leaf);
    }
    if (!path) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    st = sp_copy_out(buf, len, path, what);
    free(path);
    return st;
}

sptune_status sp_default_db_path(char *buf, size_t len)
{
    return sp_default_path(buf, len, "SPTUNE_DB", "XDG_DATA_HOME", ".local/share", "sptune/tuning.db",
                           "default database path");
}

sptune_status sp_default_cache_dir(char *buf, size_t len)
{
    return sp_default_path(buf, len, "SPTUNE_CACHE_DIR", "XDG_CACHE_HOME", ".cache", "sptune/kernels",
                           "default kernel cache folder");
}

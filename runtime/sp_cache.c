/* On-disk kernel cache: <dir>/<first 2 key chars>/<key>.cubin.
 *
 * An entry is a fixed header, then the compile log, then the cubin image. All integers are
 * little-endian:
 *   0   magic "SPTUNEK1"        8 bytes
 *   8   format version (1)      u32
 *   12  header size (152)       u32
 *   16  registers, smem_static, local_bytes, spill_stores, spill_loads, cmem   6 x i32
 *   40  log length              u64
 *   48  image length            u64
 *   56  key                     64 hex characters
 *   120 SHA-256 of bytes 0..119, the log and the image   32 bytes
 *   152 log, then image
 * A file that fails any check (short, wrong magic, version or key, lengths that do not add up,
 * digest mismatch, image not ELF) is a miss and is removed. Entries are only ever replaced
 * whole (temp file + rename), never modified in place. */
#include "sp_cache.h"
#include "sp_hash.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SP_CACHE_MAGIC "SPTUNEK1"
#define SP_CACHE_VERSION 1u
#define SP_CACHE_OFF_RES 16
#define SP_CACHE_OFF_LOGLEN 40
#define SP_CACHE_OFF_IMGLEN 48
#define SP_CACHE_OFF_KEY 56
#define SP_CACHE_OFF_DIGEST 120
#define SP_CACHE_HEADER 152
#define SP_CACHE_KEY_DOMAIN "sptune kernel cache key v1"

struct sp_cache {
    char *dir;
};

/* ---- little-endian fields ---------------------------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void res_to_array(const sp_resources *r, int32_t a[6])
{
    a[0] = r->registers;
    a[1] = r->smem_static;
    a[2] = r->local_bytes;
    a[3] = r->spill_stores;
    a[4] = r->spill_loads;
    a[5] = r->cmem;
}

static void res_from_array(const int32_t a[6], sp_resources *r)
{
    r->registers = a[0];
    r->smem_static = a[1];
    r->local_bytes = a[2];
    r->spill_stores = a[3];
    r->spill_loads = a[4];
    r->cmem = a[5];
}

static void entry_digest(const unsigned char *header, const char *log, size_t log_len,
                         const unsigned char *image, size_t image_len, uint8_t out[32])
{
    sp_sha256 s;
    sp_sha256_init(&s);
    sp_sha256_update(&s, header, SP_CACHE_OFF_DIGEST);
    sp_sha256_update(&s, log, log_len);
    sp_sha256_update(&s, image, image_len);
    sp_sha256_final(&s, out);
}

/* ---- open / close -------------------------------------------------------------------------------- */

sptune_status sp_cache_open(const char *dir, sp_cache **out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sp_cache_open: no output");
    *out = NULL;
    char def[4096];
    if (!dir) {
        sptune_status st = sp_default_cache_dir(def, sizeof def);
        if (st != SPTUNE_OK) return sp_wrap(st, "kernel cache");
        dir = def;
    }
    if (!*dir) return sp_fail(SPTUNE_ERR_INVALID, "kernel cache: empty folder name");
    sp_cache *c = calloc(1, sizeof *c);
    if (!c) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    c->dir = sp_strdup(dir);
    if (!c->dir) {
        free(c);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    /* Strip trailing slashes ("/" stays). */
    size_t n = strlen(c->dir);
    while (n > 1 && c->dir[n - 1] == '/') c->dir[--n] = 0;
    *out = c;
    return SPTUNE_OK;
}

void sp_cache_close(sp_cache *c)
{
    if (!c) return;
    free(c->dir);
    free(c);
}

const char *sp_cache_dir(const sp_cache *c) { return c ? c->dir : NULL; }

/* ---- keys ------------------------------------------------------------------------------------------ */

void sp_cache_key(const char *source, const char *arch, const char *const *options, int noptions,
                  char key[65])
{
    sp_sha256 s;
    uint8_t d[32];
    char num[32];
    int ma = 0, mi = 0;
    sp_sha256_init(&s);
    sp_sha256_field(&s, SP_CACHE_KEY_DOMAIN, strlen(SP_CACHE_KEY_DOMAIN));
    if (!source) source = "";
    if (!arch) arch = "";
    sp_sha256_field(&s, source, strlen(source));
    sp_sha256_field(&s, arch, strlen(arch));
    const char *fixed = sp_nvrtc_fixed_options_text();
    sp_sha256_field(&s, fixed, strlen(fixed));
    if (noptions < 0 || !options) noptions = 0;
    snprintf(num, sizeof num, "%d", noptions);
    sp_sha256_field(&s, num, strlen(num));
    for (int i = 0; i < noptions; i++) {
        const char *o = options[i] ? options[i] : "";
        sp_sha256_field(&s, o, strlen(o));
    }
    if (sp_nvrtc_version(&ma, &mi) == SPTUNE_OK)
        snprintf(num, sizeof num, "%d.%d", ma, mi);
    else
        snprintf(num, sizeof num, "unknown");
    sp_sha256_field(&s, num, strlen(num));
    sp_sha256_final(&s, d);
    sp_hex(d, sizeof d, key);
}

static int key_ok(const char *key)
{
    if (!key) return 0;
    for (int i = 0; i < 64; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f'))) return 0;
    return key[64] == 0;
}

static char *entry_path(const sp_cache *c, const char *key)
{
    return sp_asprintf("%s/%.2s/%s.cubin", c->dir, key, key);
}

/* ---- get --------------------------------------------------------------------------------------------- */

/* Reads the whole file behind fd (its size from fstat; entries never change in place). */
static sptune_status read_fd(int fd, const char *path, unsigned char **data, size_t *len, struct stat *st)
{
    if (fstat(fd, st) != 0) return sp_fail(SPTUNE_ERR_IO, "kernel cache: cannot stat %s: %s", path, strerror(errno));
    if (!S_ISREG(st->st_mode)) return sp_fail(SPTUNE_ERR_IO, "kernel cache: %s is not a file", path);
    size_t size = (size_t)st->st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory reading %s", path);
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            sptune_status s = sp_fail(SPTUNE_ERR_IO, "kernel cache: cannot read %s: %s", path, strerror(errno));
            free(buf);
            return s;
        }
        if (r == 0) break; /* shorter than it said: the checks below call it damaged */
        got += (size_t)r;
    }
    *data = buf;
    *len = got;
    return SPTUNE_OK;
}

/* Checks an entry; on success points log/image into data. */
static int entry_valid(const unsigned char *data, size_t len, const char *key, sp_resources *res,
                       const char **log, size_t *log_len, const unsigned char **image, size_t *image_len)
{
    if (len < SP_CACHE_HEADER) return 0;
    if (memcmp(data, SP_CACHE_MAGIC, 8) != 0) return 0;
    if (get_u32(data + 8) != SP_CACHE_VERSION || get_u32(data + 12) != SP_CACHE_HEADER) return 0;
    if (memcmp(data + SP_CACHE_OFF_KEY, key, 64) != 0) return 0;
    uint64_t ll = get_u64(data + SP_CACHE_OFF_LOGLEN), il = get_u64(data + SP_CACHE_OFF_IMGLEN);
    size_t body = len - SP_CACHE_HEADER;
    if (ll > body || il > body || ll + il != body || il < 4) return 0;
    const char *lg = (const char *)data + SP_CACHE_HEADER;
    const unsigned char *img = data + SP_CACHE_HEADER + ll;
    if (memcmp(img, "\177ELF", 4) != 0) return 0;
    uint8_t d[32];
    entry_digest(data, lg, (size_t)ll, img, (size_t)il, d);
    if (memcmp(d, data + SP_CACHE_OFF_DIGEST, 32) != 0) return 0;
    if (memchr(lg, 0, (size_t)ll)) return 0;
    int32_t a[6];
    for (int i = 0; i < 6; i++) {
        a[i] = (int32_t)get_u32(data + SP_CACHE_OFF_RES + 4 * i);
        if (a[i] < 0) return 0;
    }
    res_from_array(a, res);
    *log = lg;
    *log_len = (size_t)ll;
    *image = img;
    *image_len = (size_t)il;
    return 1;
}

sptune_status sp_cache_get(sp_cache *c, const char key[65], sp_cubin *out, int *hit)
{
    if (hit) *hit = 0;
    if (!c || !out || !hit) return sp_fail(SPTUNE_ERR_INVALID, "sp_cache_get: missing argument");
    memset(out, 0, sizeof *out);
    if (!key_ok(key)) return sp_fail(SPTUNE_ERR_INVALID, "kernel cache: bad key (want 64 lowercase hex characters)");
    char *path = entry_path(c, key);
    if (!path) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        sptune_status st = SPTUNE_OK;
        if (e != ENOENT) st = sp_fail(SPTUNE_ERR_IO, "kernel cache: cannot open %s: %s", path, strerror(e));
        free(path);
        return st; /* ENOENT: a miss */
    }
    unsigned char *data = NULL;
    size_t len = 0;
    struct stat fst;
    sptune_status st = read_fd(fd, path, &data, &len, &fst);
    close(fd);
    if (st != SPTUNE_OK) {
        free(path);
        return st;
    }

    sp_resources res;
    const char *log;
    const unsigned char *image;
    size_t log_len, image_len;
    if (!entry_valid(data, len, key, &res, &log, &log_len, &image, &image_len)) {
        /* Damaged: remove it, unless another process has meanwhile renamed a fresh entry there. */
        struct stat now;
        if (stat(path, &now) == 0 && now.st_dev == fst.st_dev && now.st_ino == fst.st_ino) unlink(path);
        free(data);
        free(path);
        return SPTUNE_OK; /* a miss */
    }
    out->image = malloc(image_len);
    out->log = sp_strndup(log, log_len);
    if (!out->image || !out->log) {
        sp_cubin_free(out);
        free(data);
        free(path);
        return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    }
    memcpy(out->image, image, image_len);
    out->size = image_len;
    out->res = res;
    out->from_cache = 1;
    *hit = 1;
    free(data);
    free(path);
    return SPTUNE_OK;
}

/* ---- put --------------------------------------------------------------------------------------------- */

sptune_status sp_cache_put(sp_cache *c, const char key[65], const sp_cubin *cubin)
{
    if (!c || !cubin) return sp_fail(SPTUNE_ERR_INVALID, "sp_cache_put: missing argument");
    if (!key_ok(key)) return sp_fail(SPTUNE_ERR_INVALID, "kernel cache: bad key (want 64 lowercase hex characters)");
    if (!cubin->image || cubin->size < 4 || memcmp(cubin->image, "\177ELF", 4) != 0)
        return sp_fail(SPTUNE_ERR_INVALID, "kernel cache: refusing to store an image that is not a cubin");
    const char *log = cubin->log ? cubin->log : "";
    size_t log_len = strlen(log);
    int32_t a[6];
    res_to_array(&cubin->res, a);
    for (int i = 0; i < 6; i++)
        if (a[i] < 0) return sp_fail(SPTUNE_ERR_INVALID, "kernel cache: negative resource count");

    size_t total = SP_CACHE_HEADER + log_len + cubin->size;
    unsigned char *buf = malloc(total);
    if (!buf) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    memset(buf, 0, SP_CACHE_HEADER);
    memcpy(buf, SP_CACHE_MAGIC, 8);
    put_u32(buf + 8, SP_CACHE_VERSION);
    put_u32(buf + 12, SP_CACHE_HEADER);
    for (int i = 0; i < 6; i++) put_u32(buf + SP_CACHE_OFF_RES + 4 * i, (uint32_t)a[i]);
    put_u64(buf + SP_CACHE_OFF_LOGLEN, log_len);
    put_u64(buf + SP_CACHE_OFF_IMGLEN, cubin->size);
    memcpy(buf + SP_CACHE_OFF_KEY, key, 64);
    memcpy(buf + SP_CACHE_HEADER, log, log_len);
    memcpy(buf + SP_CACHE_HEADER + log_len, cubin->image, cubin->size);
    uint8_t d[32];
    entry_digest(buf, log, log_len, cubin->image, cubin->size, d);
    memcpy(buf + SP_CACHE_OFF_DIGEST, d, 32);

    sptune_status st = SPTUNE_OK;
    char *sub = sp_asprintf("%s/%.2s", c->dir, key);
    char *path = entry_path(c, key);
    if (!sub || !path) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    if (st == SPTUNE_OK) st = sp_mkdir_p(sub);
    if (st == SPTUNE_OK) st = sp_write_file_atomic(path, buf, total);
    if (st != SPTUNE_OK) st = sp_wrap(st, "kernel cache");
    free(sub);
    free(path);
    free(buf);
    return st;
}

/* ---- build through the cache ---------------------------------------------------------------------- */

/* Appends "sptune: warning: <message>" to the log (the compile stands; the cache did not). */
static void append_warning(sp_cubin *out, const char *what, const char *why)
{
    const char *old = out->log ? out->log : "";
    size_t n = strlen(old);
    char *s = sp_asprintf("%s%ssptune: warning: %s: %s\n", old, n && old[n - 1] != '\n' ? "\n" : "", what, why);
    if (!s) return;
    free(out->log);
    out->log = s;
}

sptune_status sp_kernel_build(sp_cache *c, const char *source, const char *name, const char *arch,
                              const char *const *options, int noptions, sp_cubin *out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sp_kernel_build: no output");
    memset(out, 0, sizeof *out);
    if (!c) return sp_nvrtc_compile(source, name, arch, options, noptions, out);

    char key[65];
    sp_cache_key(source, arch, options, noptions, key);
    int hit = 0, read_failed = 0;
    char read_err[1024] = "";
    sptune_status st = sp_cache_get(c, key, out, &hit);
    if (st == SPTUNE_OK && hit) {
        out->from_cache = 1;
        return SPTUNE_OK;
    }
    if (st != SPTUNE_OK) { /* an unreadable cache does not stop the compile */
        read_failed = 1;
        snprintf(read_err, sizeof read_err, "%s", sptune_last_error());
    }

    st = sp_nvrtc_compile(source, name, arch, options, noptions, out);
    if (st != SPTUNE_OK) return st;
    out->from_cache = 0;
    /* Stored with the compile log as it is; warnings are for this caller only. */
    int put_failed = sp_cache_put(c, key, out) != SPTUNE_OK;
    if (read_failed) append_warning(out, "kernel cache not read", read_err);
    if (put_failed) append_warning(out, "kernel cache not written", sptune_last_error());
    return SPTUNE_OK;
}

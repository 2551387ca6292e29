/* One 2-D matrix of 16-bit floats from a safetensors, .npy or raw file (sp_tensor_file.h). */
#include "sp_tensor_file.h"
#include "sp_file.h"
#include "sp_status.h"
#include "sp_str.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_HEADER (100ll << 20)   /* a safetensors JSON header larger than this is refused */
#define MAX_ELEMS SP_TENSOR_MAX_ELEMS
#define MAX_NPY_HEADER ((1 << 20) + 12) /* parse_npy refuses a longer header */

const char *sp_tensor_format_name(sp_tensor_format f)
{
    return f == SP_TENSOR_BF16 ? "bf16" : f == SP_TENSOR_F16 ? "fp16" : "?";
}

int sp_tensor_format_parse(const char *s, sp_tensor_format *f)
{
    if (strcmp(s, "bf16") == 0) { *f = SP_TENSOR_BF16; return 1; }
    if (strcmp(s, "fp16") == 0 || strcmp(s, "f16") == 0) { *f = SP_TENSOR_F16; return 1; }
    return 0;
}

void sp_tensor_role_name(const char *names, const char *role, const char *def, char *out, size_t len)
{
    size_t n = 0;
    const char *v = sp_kv_find(names, role, strlen(role), &n);
    if (v) snprintf(out, len, "%.*s", (int)n, v);
    else snprintf(out, len, "%s", def);
}

void sp_tensor_free(sp_tensor *t)
{
    if (!t) return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* 1 when rows x cols is a matrix this reader takes, else 0 with the message left (the limit named). */
static int shape_usable(long long rows, long long cols, const char *name)
{
    if (rows >= 1 && cols >= 1 && rows <= MAX_ELEMS / cols) return 1;
    if (rows < 1 || cols < 1) sp_fail(SPTUNE_ERR_INVALID, "%s: shape %lld x %lld is not a usable matrix", name, rows, cols);
    else sp_fail(SPTUNE_ERR_INVALID, "%s: a %lld x %lld matrix is more than the %lld (2^36) elements sptune reads", name,
                 rows, cols, MAX_ELEMS);
    return 0;
}

/* Copies rows x cols 16-bit elements at bytes[off ..], after checking the shape and the bounds. */
static sptune_status take(const unsigned char *bytes, size_t size, size_t off, long long rows, long long cols,
                          sp_tensor_format f, const char *name, const sp_tensor_request *req, sp_tensor *out)
{
    if (rows < 1 || cols < 1 || rows > MAX_ELEMS / cols)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: shape %lld x %lld is not a usable matrix", name, rows, cols);
    if ((req->rows && req->rows != rows) || (req->cols && req->cols != cols))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the matrix is %lld x %lld, not %lld x %lld as asked", name, rows, cols,
                       req->rows, req->cols);
    if (req->format && f && req->format != f)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the matrix holds %s, not %s as asked", name, sp_tensor_format_name(f),
                       sp_tensor_format_name(req->format));
    if (!f) f = req->format;
    if (!f) return sp_fail(SPTUNE_ERR_INVALID, "%s: 2-byte elements of unknown format: say bf16 or fp16", name);
    unsigned long long need = (unsigned long long)rows * (unsigned long long)cols * 2;
    if (off > size || need > size - off)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %lld x %lld elements need %llu bytes at offset %zu, the file has %zu",
                       name, rows, cols, need, off, size);
    out->data = malloc((size_t)need);
    if (!out->data) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory for a %lld x %lld matrix", rows, cols);
    memcpy(out->data, bytes + off, (size_t)need); /* little-endian files on a little-endian host */
    out->rows = rows;
    out->cols = cols;
    out->format = f;
    return SPTUNE_OK;
}

/* ---- safetensors: a minimal JSON reader for the header --------------------------------------- */

typedef struct json {
    const char *p, *end;
    int depth;
} json;

static void ws(json *j)
{
    while (j->p < j->end && isspace((unsigned char)*j->p)) j->p++;
}

static int lit(json *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) { j->p++; return 1; }
    return 0;
}

/* A string into buf (cut at n - 1 bytes; *cut set when it was longer); escapes decoded for ASCII. */
static int str(json *j, char *buf, size_t n, int *cut)
{
    ws(j);
    if (j->p >= j->end || *j->p != '"') return 0;
    j->p++;
    size_t k = 0;
    *cut = 0;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) return 0;
        if (c == '\\') {
            if (j->p >= j->end) return 0;
            char e = *j->p++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    if (j->p >= j->end || !isxdigit((unsigned char)*j->p)) return 0;
                    char h = *j->p++;
                    v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
                }
                c = v < 0x80 ? (char)v : '?';
                break;
            }
            default: c = e;
            }
        }
        if (k + 1 < n) buf[k++] = c;
        else *cut = 1;
    }
    if (j->p >= j->end) return 0;
    j->p++;
    if (n) buf[k] = 0;
    return 1;
}

static int integer(json *j, long long *v)
{
    ws(j);
    const char *s = j->p;
    long long x = 0;
    if (s >= j->end || !isdigit((unsigned char)*s)) return 0;
    while (j->p < j->end && isdigit((unsigned char)*j->p)) {
        if (x > (1ll << 53)) return 0;
        x = x * 10 + (*j->p++ - '0');
    }
    *v = x;
    return 1;
}

/* Skips any value (depth-limited). */
static int skip(json *j)
{
    char buf[8];
    int cut;
    long long v;
    ws(j);
    if (j->p >= j->end || ++j->depth > 64) return 0;
    int ok = 1;
    char c = *j->p;
    if (c == '"') {
        ok = str(j, buf, sizeof buf, &cut);
    } else if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (!lit(j, close)) {
            do {
                if (c == '{' && (!str(j, buf, sizeof buf, &cut) || !lit(j, ':'))) { ok = 0; break; }
                if (!skip(j)) { ok = 0; break; }
            } while (lit(j, ','));
            ok = ok && lit(j, close);
        }
    } else if (isdigit((unsigned char)c) || c == '-') {
        if (c == '-') j->p++;
        ok = integer(j, &v);
        while (ok && j->p < j->end && strchr(".eE+-0123456789", *j->p)) j->p++;
    } else {
        static const char *const words[] = {"true", "false", "null"};
        ok = 0;
        for (int i = 0; i < 3 && !ok; i++) {
            size_t n = strlen(words[i]);
            if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) { j->p += n; ok = 1; }
        }
    }
    j->depth--;
    return ok;
}

static int int_list(json *j, long long *v, int max, int *n)
{
    *n = 0;
    if (!lit(j, '[')) return 0;
    if (lit(j, ']')) return 1;
    do {
        if (*n == max || !integer(j, &v[*n])) return 0;
        (*n)++;
    } while (lit(j, ','));
    return lit(j, ']');
}

/* The header length of a safetensors file of `size` bytes (its first 8 bytes at b), checked against the file. */
static sptune_status header_length(const unsigned char *b, size_t size, const char *name, unsigned long long *hn)
{
    *hn = 0;
    for (int i = 7; i >= 0; i--) *hn = *hn << 8 | b[i];
    if (*hn < 2 || *hn > (unsigned long long)MAX_HEADER || *hn > size - 8)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: safetensors header of %llu bytes does not fit the %zu-byte file", name, *hn,
                       size);
    return SPTUNE_OK;
}

/* The entry of req->name in a safetensors header (bytes: the file's first 8 + hn bytes): where its data starts in
 * the file (*at), its shape and format, everything checked but that the data lies inside the file. */
static sptune_status find_entry(const unsigned char *bytes, unsigned long long hn, const char *name,
                                const sp_tensor_request *req, size_t *at, long long shape2[2], sp_tensor_format *fmt)
{
    json j = {(const char *)bytes + 8, (const char *)bytes + 8 + hn, 0};
    char key[512], dtype[32] = "";
    int cut, found = 0, have_shape = 0, have_off = 0, nshape = 0, noff = 0;
    long long shape[8], off[2];
    if (!lit(&j, '{')) return sp_fail(SPTUNE_ERR_INVALID, "%s: the safetensors header is not a JSON object", name);
    if (!lit(&j, '}')) {
        do {
            if (!str(&j, key, sizeof key, &cut) || !lit(&j, ':'))
                return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed safetensors header", name);
            if (cut || strcmp(key, req->name) != 0) {
                if (!skip(&j)) return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed safetensors header", name);
                continue;
            }
            if (found++) return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s' is listed twice", name, req->name);
            if (!lit(&j, '{')) return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s' is not described by an object", name, req->name);
            if (!lit(&j, '}')) {
                do {
                    char field[32];
                    if (!str(&j, field, sizeof field, &cut) || !lit(&j, ':'))
                        return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed entry of tensor '%s'", name, req->name);
                    int ok;
                    if (strcmp(field, "dtype") == 0) ok = str(&j, dtype, sizeof dtype, &cut);
                    else if (strcmp(field, "shape") == 0) ok = have_shape = int_list(&j, shape, 8, &nshape);
                    else if (strcmp(field, "data_offsets") == 0) ok = have_off = int_list(&j, off, 2, &noff);
                    else ok = skip(&j);
                    if (!ok) return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed field '%s' of tensor '%s'", name, field,
                                            req->name);
                } while (lit(&j, ','));
                if (!lit(&j, '}')) return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed entry of tensor '%s'", name, req->name);
            }
        } while (lit(&j, ','));
        if (!lit(&j, '}')) return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed safetensors header", name);
    }
    if (!found) return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s: no tensor named '%s'", name, req->name);
    if (!have_shape || !have_off || noff != 2 || !*dtype)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s' lacks its dtype, shape or data_offsets", name, req->name);
    sp_tensor_format f = strcmp(dtype, "BF16") == 0 ? SP_TENSOR_BF16 : strcmp(dtype, "F16") == 0 ? SP_TENSOR_F16
                                                                                           : SP_TENSOR_UNKNOWN;
    if (!f) return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; BF16 or F16 is needed", name, req->name, dtype);
    if (nshape != 2) return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s' has %d dimensions, not 2", name, req->name, nshape);
    if (off[1] < off[0] || (unsigned long long)(off[1] - off[0]) != (unsigned long long)shape[0] * shape[1] * 2)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s': data_offsets [%lld, %lld) do not hold %lld x %lld elements",
                       name, req->name, off[0], off[1], shape[0], shape[1]);
    if (off[0] < 0 || (unsigned long long)off[0] > (unsigned long long)MAX_ELEMS * 8)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s': data offset %lld is out of range", name, req->name, off[0]);
    *at = 8 + (size_t)hn + (size_t)off[0];
    shape2[0] = shape[0];
    shape2[1] = shape[1];
    *fmt = f;
    return SPTUNE_OK;
}

static sptune_status parse_safetensors(const unsigned char *bytes, size_t size, const char *name,
                                       const sp_tensor_request *req, sp_tensor *out)
{
    if (!req->name || !*req->name)
        return sp_fail(SPTUNE_ERR_INVALID, "%s is a safetensors checkpoint: name the tensor to read", name);
    unsigned long long hn;
    size_t at;
    long long shape[2];
    sp_tensor_format f;
    sptune_status st = header_length(bytes, size, name, &hn);
    if (st == SPTUNE_OK) st = find_entry(bytes, hn, name, req, &at, shape, &f);
    return st != SPTUNE_OK ? st : take(bytes, size, at, shape[0], shape[1], f, name, req, out);
}

/* ---- .npy --------------------------------------------------------------------------------------- */

/* The value text after 'key': in the header dict (NULL when absent). */
static const char *npy_field(const char *h, size_t n, const char *key)
{
    size_t k = strlen(key);
    for (size_t i = 0; i + k + 2 < n; i++)
        if ((h[i] == '\'' || h[i] == '"') && memcmp(h + i + 1, key, k) == 0 && h[i + 1 + k] == h[i]) {
            const char *p = h + i + k + 2;
            while (p < h + n && (*p == ' ' || *p == ':')) p++;
            return p < h + n ? p : NULL;
        }
    return NULL;
}

static sptune_status parse_npy(const unsigned char *bytes, size_t size, const char *name, const sp_tensor_request *req,
                               sp_tensor *out)
{
    if (size < 10) return sp_fail(SPTUNE_ERR_INVALID, "%s: truncated .npy header", name);
    int major = bytes[6];
    size_t hlen, start;
    if (major == 1) { hlen = (size_t)bytes[8] | (size_t)bytes[9] << 8; start = 10; }
    else if (major == 2 || major == 3) {
        if (size < 12) return sp_fail(SPTUNE_ERR_INVALID, "%s: truncated .npy header", name);
        hlen = (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
        start = 12;
    } else return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: .npy format version %d", name, major);
    if (hlen > size - start || hlen > 1 << 20) return sp_fail(SPTUNE_ERR_INVALID, "%s: .npy header past the end", name);
    const char *h = (const char *)bytes + start;
    const char *descr = npy_field(h, hlen, "descr"), *order = npy_field(h, hlen, "fortran_order"),
               *shape = npy_field(h, hlen, "shape");
    if (!descr || !order || !shape) return sp_fail(SPTUNE_ERR_INVALID, "%s: .npy header lacks descr, fortran_order or shape", name);
    if (strncmp(order, "False", 5) != 0)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: a Fortran-ordered (column-major) array; save it C-ordered", name);
    char d[16] = "";
    if (*descr == '\'' || *descr == '"') {
        size_t i = 0;
        for (const char *p = descr + 1; p < h + hlen && *p != *descr && i + 1 < sizeof d; p++) d[i++] = *p;
        d[i] = 0;
    }
    sp_tensor_format f;
    if (strcmp(d, "<f2") == 0) f = SP_TENSOR_F16;
    else if (strcmp(d, "<V2") == 0 || strcmp(d, "|V2") == 0 || strcmp(d, "<u2") == 0 || strcmp(d, "<i2") == 0 ||
             strcmp(d, "<bf16") == 0) f = SP_TENSOR_UNKNOWN; /* 2-byte data: bf16 saved through ml_dtypes, raw bits */
    else return sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: .npy elements '%s'; 16-bit floats are needed", name, d);
    long long dims[8];
    int nd = 0;
    const char *p = shape;
    if (*p != '(') return sp_fail(SPTUNE_ERR_INVALID, "%s: .npy shape is not a tuple", name);
    for (p++; p < h + hlen && *p != ')';) {
        while (p < h + hlen && (*p == ' ' || *p == ',')) p++;
        if (p < h + hlen && *p == ')') break;
        if (p >= h + hlen || !isdigit((unsigned char)*p) || nd == 8)
            return sp_fail(SPTUNE_ERR_INVALID, "%s: malformed .npy shape", name);
        long long v = 0;
        while (p < h + hlen && isdigit((unsigned char)*p) && v < (1ll << 40)) v = v * 10 + (*p++ - '0');
        dims[nd++] = v;
    }
    if (nd != 2) return sp_fail(SPTUNE_ERR_INVALID, "%s: the array has %d dimensions, not 2", name, nd);
    return take(bytes, size, start + hlen, dims[0], dims[1], f, name, req, out);
}

/* ---- dispatch ----------------------------------------------------------------------------------- */

sptune_status sp_tensor_parse(const unsigned char *bytes, size_t size, const char *name, const sp_tensor_request *req,
                              sp_tensor *out)
{
    memset(out, 0, sizeof *out);
    static const sp_tensor_request none;
    if (!req) req = &none;
    if (size >= 6 && memcmp(bytes, "\x93NUMPY", 6) == 0) return parse_npy(bytes, size, name, req, out);
    size_t n = strlen(name);
    int st_name = n >= 12 && strcmp(name + n - 12, ".safetensors") == 0;
    if (size >= 9 && (st_name || (req->name && *req->name)) && bytes[8] == '{')
        return parse_safetensors(bytes, size, name, req, out);
    if (st_name || (req->name && *req->name))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: not a safetensors checkpoint (no JSON header)", name);
    if (!req->rows || !req->cols)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: neither .npy nor safetensors: a raw matrix needs its shape (rows x cols) "
                       "and format", name);
    if (!shape_usable(req->rows, req->cols, name)) return SPTUNE_ERR_INVALID; /* before rows * cols can wrap */
    if ((unsigned long long)size != (unsigned long long)req->rows * (unsigned long long)req->cols * 2)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %zu bytes, but %lld x %lld 16-bit elements take %llu", name, size,
                       req->rows, req->cols, (unsigned long long)req->rows * (unsigned long long)req->cols * 2);
    return take(bytes, size, 0, req->rows, req->cols, SP_TENSOR_UNKNOWN, name, req, out);
}

/* A named tensor of a safetensors file read in place: the header, then only the tensor's bytes (a checkpoint is
 * many gigabytes; one layer's weights are not). *handled 0: not a safetensors file, read it whole instead. */
static sptune_status read_safetensors(const char *path, const sp_tensor_request *req, sp_tensor *out, int *handled)
{
    *handled = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return SPTUNE_OK;   /* the whole-file read says why */
    unsigned char *head = NULL;
    sptune_status st = SPTUNE_OK;
    unsigned char first[9];
    struct stat sb;
    const size_t n = strlen(path);
    const int named = (n >= 12 && strcmp(path + n - 12, ".safetensors") == 0) || (req && req->name && *req->name);
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < 9 || fread(first, 1, 9, f) != 9 || first[8] != '{' || !named ||
        memcmp(first, "\x93NUMPY", 6) == 0)
        goto done;
    *handled = 1;
    static const sp_tensor_request none;
    if (!req) req = &none;
    if (!req->name || !*req->name) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s is a safetensors checkpoint: name the tensor to read", path);
        goto done;
    }
    const size_t size = (size_t)sb.st_size;
    unsigned long long hn;
    size_t at;
    long long shape[2];
    sp_tensor_format fmt;
    if ((st = header_length(first, size, path, &hn)) != SPTUNE_OK) goto done;
    if (!(head = malloc(8 + (size_t)hn))) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory for %s's header", path); goto done; }
    memcpy(head, first, 9);
    if (fread(head + 9, 1, (size_t)hn - 1, f) != (size_t)hn - 1) {
        st = sp_fail(SPTUNE_ERR_IO, "%s: cannot read its header", path);
        goto done;
    }
    if ((st = find_entry(head, hn, path, req, &at, shape, &fmt)) != SPTUNE_OK) goto done;
    /* take() checks the shape, the format and that the data lies inside the file: a window of the file's bytes */
    const unsigned long long need = (unsigned long long)shape[0] * (unsigned long long)shape[1] * 2;
    if (at > size || need > size - at) {
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: %lld x %lld elements need %llu bytes at offset %zu, the file has %zu", path,
                     shape[0], shape[1], need, at, size);
        goto done;
    }
    unsigned char *data = malloc((size_t)need ? (size_t)need : 1);
    if (!data) { st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory for a %lld x %lld matrix", shape[0], shape[1]); goto done; }
    if (fseeko(f, (off_t)at, SEEK_SET) != 0 || fread(data, 1, (size_t)need, f) != (size_t)need)
        st = sp_fail(SPTUNE_ERR_IO, "%s: cannot read tensor '%s'", path, req->name);
    else
        st = take(data, (size_t)need, 0, shape[0], shape[1], fmt, path, req, out);
    free(data);
done:
    free(head);
    fclose(f);
    return st;
}

sptune_status sp_tensor_read(const char *path, const sp_tensor_request *req, sp_tensor *out)
{
    memset(out, 0, sizeof *out);
    /* a declared shape too large is refused before anything is read (it would bound nothing) */
    if (req && req->rows && req->cols && !shape_usable(req->rows, req->cols, path)) return SPTUNE_ERR_INVALID;
    int handled = 0;
    sptune_status wst = read_safetensors(path, req, out, &handled);
    if (handled) return wst;
    char *data = NULL;
    size_t len = 0;
    /* never more than the declared shape's bytes and an npy header (a stream such as /dev/zero need not end); without
       a shape, never more than the largest matrix read and its header (npy's own header then bounds what is kept) */
    const int sized = req && req->rows > 0 && req->cols > 0;
    if (!sized) {   /* without a shape only .npy can say its size: anything else is refused unread (/dev/zero) */
        unsigned char magic[6];
        FILE *f = fopen(path, "rb");
        const size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
        if (f) fclose(f);
        /* the parser's own refusal, from the first bytes alone (too few for it to take them as safetensors) */
        if (f && (got < sizeof magic || memcmp(magic, "\x93NUMPY", 6) != 0))
            return sp_tensor_parse(magic, got, path, req, out);
    }
    char declared[112];
    if (sized)
        snprintf(declared, sizeof declared, "a %lld x %lld matrix of 16-bit values and a header take", req->rows,
                 req->cols);
    else
        snprintf(declared, sizeof declared, "the largest matrix read (2^36 16-bit values) and a header take");
    const size_t max = sized ? (size_t)(req->rows * req->cols) * 2 + 65536 : (size_t)MAX_ELEMS * 2 + MAX_NPY_HEADER;
    sptune_status st = sp_read_file_max(path, max, declared, &data, &len);
    if (st != SPTUNE_OK) return st;
    st = sp_tensor_parse((const unsigned char *)data, len, path, req, out);
    free(data);
    return st;
}

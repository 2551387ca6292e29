/* Reading a pruned weight matrix from the files it lives in (base/sp_tensor_file.h): safetensors
 * checkpoints with several tensors and metadata, .npy (fp16 and 2-byte raw), raw bytes; and every
 * damaged or hostile header refused with a message that says why, without reading out of bounds. */
#include "sp_tensor_file.h"
#include "sp_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A safetensors image: 8-byte header length, the JSON header, then data. */
static unsigned char *safetensors(const char *header, const unsigned char *data, size_t n, size_t *size)
{
    size_t h = strlen(header);
    unsigned char *b = malloc(8 + h + n);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((unsigned long long)h >> (8 * i));
    memcpy(b + 8, header, h);
    if (n) memcpy(b + 8 + h, data, n);
    *size = 8 + h + n;
    return b;
}

static unsigned char *npy(const char *dict, const unsigned char *data, size_t n, size_t *size)
{
    char h[256];
    int len = snprintf(h, sizeof h, "%s", dict);
    while ((10 + len + 1) % 64) h[len++] = ' ';
    h[len++] = '\n';
    unsigned char *b = malloc(10 + (size_t)len + n);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(len & 0xff);
    b[9] = (unsigned char)(len >> 8);
    memcpy(b + 10, h, (size_t)len);
    if (n) memcpy(b + 10 + len, data, n);
    *size = 10 + (size_t)len + n;
    return b;
}

static void refused(const unsigned char *b, size_t size, const char *name, const sp_tensor_request *req,
                    const char *why)
{
    sp_tensor t;
    sptune_status st = sp_tensor_parse(b, size, name, req, &t);
    CHECK_MSG(st != SPTUNE_OK && sp_test_has(sptune_last_error(), why), "%s: want '%s', got %s: %s", name, why,
              sptune_status_name(st), sptune_last_error());
    CHECK(t.data == NULL);
}

int main(void)
{
    enum { R = 3, C = 5 };
    unsigned char data[R * C * 2 * 2];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 7 + 1);
    sp_tensor t;
    size_t n;
    /* safetensors: the named tensor among others, metadata skipped, offsets honoured */
    char hdr[512];
    snprintf(hdr, sizeof hdr,
             "{\"__metadata__\":{\"format\":\"pt\",\"x\":[1,2,{\"y\":null}]},"
             "\"other\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
             "\"model.up\" : { \"dtype\" : \"BF16\", \"shape\" : [%d, %d], \"data_offsets\" : [8, %d] }}", R, C,
             8 + R * C * 2);
    unsigned char *b = safetensors(hdr, data, 8 + R * C * 2, &n);
    sp_tensor_request want = {"model.up", 0, 0, SP_TENSOR_UNKNOWN};
    CHECK_ST(sp_tensor_parse(b, n, "m.safetensors", &want, &t), SPTUNE_OK);
    CHECK(t.rows == R && t.cols == C && t.format == SP_TENSOR_BF16 && t.data && memcmp(t.data, data + 8, R * C * 2) == 0);
    sp_tensor_free(&t);
    sp_tensor_request other = {"other", 0, 0, SP_TENSOR_UNKNOWN}, none = {"missing", 0, 0, SP_TENSOR_UNKNOWN},
                      unnamed = {NULL, 0, 0, SP_TENSOR_UNKNOWN}, wrong_shape = {"model.up", 4, 5, SP_TENSOR_UNKNOWN},
                      wrong_type = {"model.up", 0, 0, SP_TENSOR_F16};
    refused(b, n, "m.safetensors", &other, "is F32; BF16 or F16 is needed");
    refused(b, n, "m.safetensors", &none, "no tensor named 'missing'");
    refused(b, n, "m.safetensors", &unnamed, "name the tensor to read");
    refused(b, n, "m.safetensors", &wrong_shape, "not 4 x 5 as asked");
    refused(b, n, "m.safetensors", &wrong_type, "holds bf16, not fp16");
    refused(b, n - 1, "m.safetensors", &want, "need 30 bytes");
    for (size_t cut = 0; cut < n; cut += 3) { /* every truncation refused safely (ASan watches) */
        if (sp_tensor_parse(b, cut, "m.safetensors", &want, &t) == SPTUNE_OK) { CHECK(cut >= n); sp_tensor_free(&t); }
    }
    /* the same as a file, read in place (header, then the tensor's bytes alone), and cut short at every length */
    char path[600];
    snprintf(path, sizeof path, "%s/m.safetensors", sp_test_tmpdir("test_tensor_file"));
    for (size_t cut = n;; cut = cut >= 3 ? cut - 3 : 0) {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(b, 1, cut, f) == cut && fclose(f) == 0);
        const sptune_status st = sp_tensor_read(path, &want, &t);
        if (cut == n) {
            CHECK_ST(st, SPTUNE_OK);
            CHECK(t.rows == R && t.cols == C && t.data && memcmp(t.data, data + 8, R * C * 2) == 0);
        } else {
            CHECK_MSG(st != SPTUNE_OK, "a file cut to %zu of %zu bytes read", cut, n);
        }
        sp_tensor_free(&t);
        if (cut == 0) break;
    }
    FILE *short_file = fopen(path, "wb");
    CHECK(short_file && fwrite(b, 1, n - 1, short_file) == n - 1 && fclose(short_file) == 0);
    CHECK_ST(sp_tensor_read(path, &want, &t), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "need 30 bytes at offset"), "%s", sptune_last_error());
    CHECK_ST(sp_tensor_read(path, &unnamed, &t), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_has(sptune_last_error(), "name the tensor to read"), "%s", sptune_last_error());
    free(b);
    static const char *const bad[][2] = {
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5,1],\"data_offsets\":[0,30]}}", "has 3 dimensions"},
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[0,28]}}", "do not hold 3 x 5"},
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[100,130]}}", "the file has"},
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5]}}", "lacks its dtype, shape or data_offsets"},
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[0,30]},"
         "\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[0,30]}}", "listed twice"},
        {"{\"model.up\":{\"dtype\":\"BF16\",\"shape\":[3,5],\"data_offsets\":[0,30]", "malformed"},
        {"{\"model.up\" 7}", "malformed"},
        {"[1,2]", "no JSON header"},
        {"{\"a\":" "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
         "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", "malformed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = safetensors(bad[i][0], data, R * C * 2, &n);
        refused(b, n, "bad.safetensors", &want, bad[i][1]);
        free(b);
    }
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{'};
    refused(huge, sizeof huge, "huge.safetensors", &want, "does not fit");
    /* .npy: fp16; 2-byte raw data takes its format from the request */
    b = npy("{'descr': '<f2', 'fortran_order': False, 'shape': (3, 5), }", data, R * C * 2, &n);
    CHECK_ST(sp_tensor_parse(b, n, "w.npy", NULL, &t), SPTUNE_OK);
    CHECK(t.rows == R && t.cols == C && t.format == SP_TENSOR_F16 && memcmp(t.data, data, R * C * 2) == 0);
    sp_tensor_free(&t);
    refused(b, n - 2, "w.npy", NULL, "the file has");
    free(b);
    b = npy("{'descr': '<V2', 'fortran_order': False, 'shape': (3, 5), }", data, R * C * 2, &n);
    sp_tensor_request bf = {NULL, 0, 0, SP_TENSOR_BF16};
    refused(b, n, "w.npy", NULL, "unknown format: say bf16 or fp16");
    CHECK_ST(sp_tensor_parse(b, n, "w.npy", &bf, &t), SPTUNE_OK);
    CHECK_EQ(t.format, SP_TENSOR_BF16);
    sp_tensor_free(&t);
    free(b);
    static const char *const badnpy[][2] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }", "16-bit floats are needed"},
        {"{'descr': '<f2', 'fortran_order': True, 'shape': (3, 5), }", "Fortran-ordered"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (15,), }", "1 dimensions, not 2"},
        {"{'descr': '<f2', 'fortran_order': False, }", "lacks descr, fortran_order or shape"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': 15, }", "not a tuple"},
    };
    for (size_t i = 0; i < sizeof badnpy / sizeof badnpy[0]; i++) {
        b = npy(badnpy[i][0], data, R * C * 2, &n);
        refused(b, n, "bad.npy", NULL, badnpy[i][1]);
        free(b);
    }
    /* raw: the shape and the format given */
    sp_tensor_request raw = {NULL, 3, 5, SP_TENSOR_F16};
    CHECK_ST(sp_tensor_parse(data, R * C * 2, "w.raw", &raw, &t), SPTUNE_OK);
    CHECK(t.rows == 3 && t.format == SP_TENSOR_F16);
    sp_tensor_free(&t);
    refused(data, R * C * 2 - 2, "w.raw", &raw, "bytes, but 3 x 5 16-bit elements take 30");
    refused(data, R * C * 2, "w.raw", NULL, "needs its shape");
    /* a shape past the element limit is refused as such, not with a byte count that wrapped */
    sp_tensor_request vast = {NULL, 9223372036854775807ll, 1, SP_TENSOR_F16};
    refused(data, R * C * 2, "w.raw", &vast, "more than the 68719476736 (2^36) elements");
    /* files */
    CHECK_ST(sp_tensor_read("/nonexistent/w.npy", NULL, &t), SPTUNE_ERR_NOT_FOUND);
    /* an endless stream with a shape past the limit: refused before reading (it used to read until memory ran out) */
    sp_tensor_request big = {NULL, 300000, 300000, SP_TENSOR_F16};
    CHECK_ST(sp_tensor_read("/dev/zero", &big, &t), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("(2^36) elements"), "%s", sptune_last_error());
    sp_tensor_format f;
    CHECK(sp_tensor_format_parse("fp16", &f) && f == SP_TENSOR_F16 && !sp_tensor_format_parse("fp32", &f));
    return sp_test_done("test_tensor_file");
}

/* NVRTC: CUDA C source -> cubin, with the whole log and the resources ptxas reports. */
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_file.h"

#include <ctype.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* Options every compile gets (besides --gpu-architecture); the cache key covers them. */
#define SP_OPT_STD "-std=c++17"
#define SP_OPT_PTXAS "--ptxas-options=-v" /* ptxas' resource report goes into the program log */
static const char *const sp_nvrtc_fixed_options[] = {SP_OPT_STD, SP_OPT_PTXAS};
#define SP_NFIXED ((int)(sizeof sp_nvrtc_fixed_options / sizeof sp_nvrtc_fixed_options[0]))
#define SP_LOG_LINES_IN_MESSAGE 40
#define SP_LOG_CHARS_IN_MESSAGE 3000

const char *sp_nvrtc_fixed_options_text(void) { return SP_OPT_STD " " SP_OPT_PTXAS; }

/* ---- versions and targets -------------------------------------------------------------------- */

static pthread_once_t sp_archs_once = PTHREAD_ONCE_INIT;
static int *sp_archs;
static int sp_narchs;

static void sp_load_archs(void)
{
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return;
    int *a = malloc((size_t)n * sizeof *a);
    if (!a) return;
    if (nvrtcGetSupportedArchs(a) != NVRTC_SUCCESS) {
        free(a);
        return;
    }
    sp_archs = a; /* kept for the life of the process */
    sp_narchs = n;
}

int sp_nvrtc_archs(const int **archs)
{
    pthread_once(&sp_archs_once, sp_load_archs);
    if (archs) *archs = sp_archs;
    return sp_narchs;
}

sptune_status sp_nvrtc_version(int *major, int *minor)
{
    int ma = 0, mi = 0;
    nvrtcResult r = nvrtcVersion(&ma, &mi);
    if (r != NVRTC_SUCCESS) return sp_fail(SPTUNE_ERR_COMPILE, "nvrtcVersion failed: %s", nvrtcGetErrorString(r));
    if (major) *major = ma;
    if (minor) *minor = mi;
    return SPTUNE_OK;
}

/* "sm_90a" -> 90 with suffix 'a'; -1 when not of the form sm_<digits>[a|f]. */
static int sp_sm_number(const char *arch, char *suffix)
{
    if (!arch || strncmp(arch, "sm_", 3) != 0 || !isdigit((unsigned char)arch[3])) return -1;
    const char *p = arch + 3;
    int v = 0, digits = 0;
    while (isdigit((unsigned char)*p)) {
        if (++digits > 4) return -1;
        v = v * 10 + (*p++ - '0');
    }
    char suf = 0;
    if (*p == 'a' || *p == 'f') suf = *p++;
    if (*p) return -1;
    if (suffix) *suffix = suf;
    return v;
}

int sp_nvrtc_supports(const char *arch)
{
    char suffix = 0;
    int num = sp_sm_number(arch, &suffix);
    if (num < 0) return 0;
    if (suffix == 'a' && num < 90) return 0;  /* arch-specific targets start with sm_90a */
    if (suffix == 'f' && num < 100) return 0; /* family targets start with sm_100f */
    const int *a;
    int n = sp_nvrtc_archs(&a);
    for (int i = 0; i < n; i++)
        if (a[i] == num) return 1;
    return 0;
}

static void sp_list_archs(sp_buf *b)
{
    const int *a;
    int n = sp_nvrtc_archs(&a);
    for (int i = 0; i < n; i++) sp_buf_printf(b, "%ssm_%d", i ? ", " : "", a[i]);
    if (n == 0) sp_buf_puts(b, "(unknown)");
}

/* ---- resources from the ptxas report ----------------------------------------------------------- */

/* Every "<number><suffix>" in [line, end): the largest number into *val (kept if none). */
static void sp_take_max(const char *line, const char *end, const char *suffix, int *val)
{
    size_t sn = strlen(suffix);
    const char *p = line;
    while (p < end) {
        const char *hit = memmem(p, (size_t)(end - p), suffix, sn);
        if (!hit) return;
        const char *d = hit;
        while (d > line && isdigit((unsigned char)d[-1])) d--;
        if (d < hit) {
            long v = 0;
            for (const char *q = d; q < hit; q++) {
                v = v * 10 + (*q - '0');
                if (v > INT_MAX) { v = INT_MAX; break; }
            }
            if ((int)v > *val) *val = (int)v;
        }
        p = hit + sn;
    }
}

/* Lines such as
 *   ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 * one group per kernel (and per called function); each field is the maximum over all. */
void sp_nvrtc_parse_resources(const char *log, sp_resources *res)
{
    memset(res, 0, sizeof *res);
    if (!log) return;
    const char *line = log;
    while (*line) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if (memmem(line, (size_t)(end - line), "ptxas", 5)) {
            sp_take_max(line, end, " registers", &res->registers);
            sp_take_max(line, end, " bytes smem", &res->smem_static);
            sp_take_max(line, end, " bytes cmem[0]", &res->cmem);
            sp_take_max(line, end, " bytes stack frame", &res->local_bytes);
            sp_take_max(line, end, " bytes spill stores", &res->spill_stores);
            sp_take_max(line, end, " bytes spill loads", &res->spill_loads);
        }
        line = *end ? end + 1 : end;
    }
}

/* ---- resources from the cubin ------------------------------------------------------------------- */

/* .nv.info attribute records: format byte, attribute byte, then a 16-bit value (formats 1-3) or a
 * 16-bit size and that many bytes (format 4, "SVAL"). REGCOUNT (0x2f) and FRAME_SIZE (0x11) are
 * SVALs of {symbol index, value}. */
#define SP_EIFMT_SVAL 4
#define SP_EIATTR_FRAME_SIZE 0x11
#define SP_EIATTR_REGCOUNT 0x2f

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

int sp_cubin_elf_resources(const unsigned char *img, size_t n, int *registers, int *frame_bytes)
{
    *registers = 0;
    *frame_bytes = 0;
    /* ELF64 little-endian: e_shoff at 0x28, e_shentsize 0x3a, e_shnum 0x3c, e_shstrndx 0x3e. */
    if (!img || n < 64 || memcmp(img, "\177ELF", 4) != 0 || img[4] != 2 || img[5] != 1) return 0;
    uint64_t shoff = rd64(img + 0x28);
    unsigned shentsize = img[0x3a] | img[0x3b] << 8, shnum = img[0x3c] | img[0x3d] << 8, shstr = img[0x3e] | img[0x3f] << 8;
    if (shentsize < 64 || shstr >= shnum || shoff > n || (uint64_t)shnum * shentsize > n - shoff) return 0;
    const unsigned char *strsec = img + shoff + (uint64_t)shstr * shentsize;
    uint64_t stroff = rd64(strsec + 0x18), strsize = rd64(strsec + 0x20);
    if (stroff > n || strsize > n - stroff) return 0;
    int found = 0;
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = img + shoff + (uint64_t)i * shentsize;
        uint32_t name = rd32(sh);
        uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
        if (name >= strsize || off > n || size > n - off) continue;
        const char *nm = (const char *)img + stroff + name;
        if (strnlen(nm, strsize - name) != strlen(".nv.info") || strcmp(nm, ".nv.info") != 0) continue;
        for (const unsigned char *p = img + off, *e = p + size; p + 4 <= e;) {
            unsigned fmt = p[0], attr = p[1], len = p[2] | p[3] << 8;
            if (fmt != SP_EIFMT_SVAL) { p += 4; continue; }
            if (len > (size_t)(e - p) - 4) break;
            if (len >= 8 && (attr == SP_EIATTR_REGCOUNT || attr == SP_EIATTR_FRAME_SIZE)) {
                int v = (int)rd32(p + 8);
                int *dst = attr == SP_EIATTR_REGCOUNT ? registers : frame_bytes;
                if (v > *dst) *dst = v;
                found = 1;
            }
            p += 4 + len;
        }
    }
    return found;
}

/* ---- compile ------------------------------------------------------------------------------------ */

/* The start of the log for a message: at most SP_LOG_LINES_IN_MESSAGE lines. */
static void sp_log_head(sp_buf *b, const char *log)
{
    const char *p = log;
    int lines = 0;
    while (*p && lines < SP_LOG_LINES_IN_MESSAGE && (size_t)(p - log) < SP_LOG_CHARS_IN_MESSAGE) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        sp_buf_append(b, p, (size_t)(end - p));
        sp_buf_puts(b, "\n");
        lines++;
        p = *end ? end + 1 : end;
    }
    if (*p) {
        int more = 0;
        for (const char *q = p; *q; q++) more += *q == '\n';
        if (p[strlen(p) - 1] != '\n') more++;
        sp_buf_printf(b, "... (%d more lines of log)\n", more);
    }
    /* No trailing newline in a message. */
    while (b->len > 0 && b->data[b->len - 1] == '\n') b->data[--b->len] = 0;
}

static sptune_status sp_nvrtc_fail(nvrtcResult r, const char *what)
{
    return sp_fail(r == NVRTC_ERROR_OUT_OF_MEMORY ? SPTUNE_ERR_NOMEM : SPTUNE_ERR_COMPILE, "%s failed: %s", what,
                   nvrtcGetErrorString(r));
}

sptune_status sp_nvrtc_compile(const char *source, const char *name, const char *arch,
                               const char *const *options, int noptions, sp_cubin *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!name || !*name) name = "kernel.cu";
    if (!source) return sp_fail(SPTUNE_ERR_INVALID, "%s: no source to compile", name);
    if (noptions < 0 || (noptions > 0 && !options))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: bad NVRTC option list", name);
    for (int i = 0; i < noptions; i++)
        if (!options[i]) return sp_fail(SPTUNE_ERR_INVALID, "%s: NVRTC option %d is NULL", name, i);
    if (sp_sm_number(arch, NULL) < 0)
        return sp_fail(SPTUNE_ERR_INVALID,
                       "%s: bad target architecture '%s' (want a real target such as sm_80, sm_90a, sm_120)",
                       name, arch ? arch : "(null)");
    if (!sp_nvrtc_supports(arch)) {
        sp_buf b = {0};
        sp_list_archs(&b);
        int ma = 0, mi = 0;
        nvrtcVersion(&ma, &mi);
        sptune_status st = sp_fail(SPTUNE_ERR_UNSUPPORTED, "%s: NVRTC %d.%d cannot compile for %s (it supports %s)",
                                   name, ma, mi, arch, b.data && !b.oom ? b.data : "?");
        sp_buf_free(&b);
        return st;
    }

    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    int nopts = 1 + SP_NFIXED + noptions;
    const char **opts = malloc((size_t)nopts * sizeof *opts);
    if (!opts) return sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
    opts[0] = archopt;
    for (int i = 0; i < SP_NFIXED; i++) opts[1 + i] = sp_nvrtc_fixed_options[i];
    for (int i = 0; i < noptions; i++) opts[1 + SP_NFIXED + i] = options[i];

    sptune_status st = SPTUNE_OK;
    nvrtcProgram prog = NULL;
    char *log = NULL;
    unsigned char *image = NULL;
    size_t image_size = 0;

    nvrtcResult r = nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        st = sp_nvrtc_fail(r, "nvrtcCreateProgram");
        prog = NULL;
        goto done;
    }
    nvrtcResult compiled = nvrtcCompileProgram(prog, nopts, opts);

    size_t log_size = 0;
    r = nvrtcGetProgramLogSize(prog, &log_size);
    if (r != NVRTC_SUCCESS) {
        st = sp_nvrtc_fail(r, "nvrtcGetProgramLogSize");
        goto done;
    }
    log = malloc(log_size + 1);
    if (!log) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        goto done;
    }
    log[0] = 0;
    if (log_size > 0) {
        r = nvrtcGetProgramLog(prog, log);
        if (r != NVRTC_SUCCESS) {
            st = sp_nvrtc_fail(r, "nvrtcGetProgramLog");
            goto done;
        }
    }
    log[log_size] = 0;

    if (compiled != NVRTC_SUCCESS) {
        sp_buf head = {0};
        sp_log_head(&head, log);
        st = sp_fail(SPTUNE_ERR_COMPILE, "%s: NVRTC compilation for %s failed (%s):\n%s", name, arch,
                     nvrtcGetErrorString(compiled), head.data && head.len ? head.data : "(empty log)");
        sp_buf_free(&head);
        goto done;
    }

    r = nvrtcGetCUBINSize(prog, &image_size);
    if (r != NVRTC_SUCCESS) {
        st = sp_nvrtc_fail(r, "nvrtcGetCUBINSize");
        goto done;
    }
    if (image_size == 0) {
        st = sp_fail(SPTUNE_ERR_COMPILE, "%s: NVRTC produced no cubin for %s", name, arch);
        goto done;
    }
    image = malloc(image_size);
    if (!image) {
        st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory");
        goto done;
    }
    r = nvrtcGetCUBIN(prog, (char *)image);
    if (r != NVRTC_SUCCESS) {
        st = sp_nvrtc_fail(r, "nvrtcGetCUBIN");
        goto done;
    }

done:
    if (prog) {
        r = nvrtcDestroyProgram(&prog);
        if (r != NVRTC_SUCCESS && st == SPTUNE_OK) st = sp_nvrtc_fail(r, "nvrtcDestroyProgram");
    }
    free(opts);
    if (st == SPTUNE_OK && out) {
        out->image = image;
        out->size = image_size;
        out->log = log;
        sp_nvrtc_parse_resources(log, &out->res);
        if (out->res.registers == 0) { /* no ptxas report in the log: read the cubin */
            int regs, frame;
            if (sp_cubin_elf_resources(image, image_size, &regs, &frame)) {
                out->res.registers = regs;
                if (out->res.local_bytes == 0) out->res.local_bytes = frame;
            }
        }
        return SPTUNE_OK;
    }
    free(image);
    if (out && log && st == SPTUNE_ERR_COMPILE) {
        out->log = log; /* the whole log, for the caller to show or store */
        log = NULL;
    }
    free(log);
    return st;
}

void sp_cubin_free(sp_cubin *c)
{
    if (!c) return;
    free(c->image);
    free(c->log);
    memset(c, 0, sizeof *c);
}

sptune_status sp_nvrtc_version_text(char *buf, size_t len)
{
    if (!buf || len == 0) return sp_fail(SPTUNE_ERR_INVALID, "NVRTC version: no buffer");
    buf[0] = 0;
    int ma = 0, mi = 0;
    sptune_status st = sp_nvrtc_version(&ma, &mi);
    if (st != SPTUNE_OK) return st;
    char text[32];
    snprintf(text, sizeof text, "%d.%d", ma, mi);
    return sp_copy_out(buf, len, text, "NVRTC version");
}

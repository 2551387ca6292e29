/* GPU profiles: named boards, generic sm_XX targets, and profiles of present devices. Everything is
 * table-driven: a new board or compute capability is one row. */
#include "sp_gpu.h"
#include "sp_cuda.h"
#include "sp_nvrtc.h"
#include "sp_status.h"
#include "sp_str.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MiB (1024 * 1024)
#define GiB ((size_t)1 << 30)

/* Named boards: nominal data sheet values, used as they are when the board is absent. When the
 * board is present, the driver's measurements replace them (sp_gpu_profile_device). */
typedef struct sp_board {
    const char *profile;      /* the name users type */
    const char *name;         /* marketing name */
    const char *device_match; /* a word of the driver's device name that identifies the board */
    int cc_major, cc_minor;
    int sm_count;
    int smem_per_block_optin, smem_per_sm, regs_per_sm, max_threads_per_sm;
    int l2_bytes;
    double mem_bandwidth_gbs;
    size_t total_mem_bytes;
} sp_board;

static const sp_board sp_boards[] = {
    {"h100", "NVIDIA H100 SXM", "H100", 9, 0, 132, 232448, 233472, 65536, 2048, 50 * MiB, 3350.0,
     80 * GiB},
    {"h200", "NVIDIA H200", "H200", 9, 0, 132, 232448, 233472, 65536, 2048, 60 * MiB, 4800.0, 141 * GiB},
    {"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell", "RTX PRO 6000", 12, 0, 188, 101376, 102400, 65536,
     1536, 128 * MiB, 1792.0, 96 * GiB},
};
#define SP_NBOARDS (sizeof sp_boards / sizeof sp_boards[0])

/* Per compute capability limits (CUDA C++ Programming Guide, "Technical Specifications per Compute
 * Capability"): opt-in shared memory per block, shared memory per SM, resident threads per SM.
 * Capabilities missing from the table get the smallest sm_80+ values (sp_cc_fallback). */
typedef struct sp_cc_limits {
    int cc_major, cc_minor;
    int smem_per_block_optin, smem_per_sm, max_threads_per_sm;
} sp_cc_limits;

static const sp_cc_limits sp_cc_table[] = {
    {8, 0, 166912, 167936, 2048},  /* A100 */
    {8, 6, 101376, 102400, 1536},  /* GA10x */
    {8, 7, 166912, 167936, 1536},  /* Orin */
    {8, 9, 101376, 102400, 1536},  /* Ada */
    {9, 0, 232448, 233472, 2048},  /* Hopper */
    {10, 0, 232448, 233472, 2048}, /* Blackwell datacenter */
    {10, 3, 232448, 233472, 2048},
    {11, 0, 232448, 233472, 1536}, /* Thor (thread count: conservative) */
    {12, 0, 101376, 102400, 1536}, /* Blackwell workstation / consumer */
    {12, 1, 101376, 102400, 1536},
};
static const sp_cc_limits sp_cc_fallback = {0, 0, 101376, 102400, 1536};
#define SP_REGS_PER_SM 65536 /* every sm_80+ GPU so far */

static const sp_cc_limits *sp_cc_lookup(int major, int minor)
{
    for (size_t i = 0; i < sizeof sp_cc_table / sizeof sp_cc_table[0]; i++)
        if (sp_cc_table[i].cc_major == major && sp_cc_table[i].cc_minor == minor) return &sp_cc_table[i];
    return &sp_cc_fallback;
}

static void sp_copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* "sm_90a" -> 90 and suffix 'a'; -1 when the text is not of that form. */
static int sp_parse_sm(const char *s, char *suffix)
{
    if (strncasecmp(s, "sm_", 3) != 0) return -1;
    const char *p = s + 3;
    if (!isdigit((unsigned char)p[0])) return -1;
    int v = 0, digits = 0;
    while (isdigit((unsigned char)*p)) {
        if (++digits > 4) return -1;
        v = v * 10 + (*p++ - '0');
    }
    char suf = 0;
    if (*p == 'a' || *p == 'A' || *p == 'f' || *p == 'F') suf = (char)tolower((unsigned char)*p++);
    if (*p) return -1;
    if (suffix) *suffix = suf;
    return v;
}

static int sp_arch_number(const sp_gpu_profile *p) { return p->info.cc_major * 10 + p->info.cc_minor; }

void sp_gpu_profile_derive(sp_gpu_profile *p)
{
    int num = sp_arch_number(p);
    char suffix = 0;
    /* Keep an explicit target (e.g. "sm_90" chosen over the default "sm_90a") when it names this
     * compute capability; otherwise use the default target for it. */
    if (sp_parse_sm(p->info.arch, &suffix) != num) {
        if (num == 90 || num == 100)
            snprintf(p->info.arch, sizeof p->info.arch, "sm_%da", num);
        else
            snprintf(p->info.arch, sizeof p->info.arch, "sm_%d", num);
    }
    if (!p->info.profile[0]) snprintf(p->info.profile, sizeof p->info.profile, "sm_%d", num);
    p->has_wgmma = strcmp(p->info.arch, "sm_90a") == 0;
    p->has_tma = num >= 90;
    p->has_cluster = num >= 90;
    p->has_mma_sp = num >= 80;
    p->has_cp_async = num >= 80;
}

static void sp_profile_from_board(const sp_board *b, sp_gpu_profile *out)
{
    memset(out, 0, sizeof *out);
    out->info.size = sizeof out->info;   /* the public struct's, filled whole */
    out->info.ordinal = -1;
    sp_copy(out->info.profile, sizeof out->info.profile, b->profile);
    sp_copy(out->info.name, sizeof out->info.name, b->name);
    out->info.cc_major = b->cc_major;
    out->info.cc_minor = b->cc_minor;
    out->info.sm_count = b->sm_count;
    out->info.smem_per_block_optin = b->smem_per_block_optin;
    out->info.smem_per_sm = b->smem_per_sm;
    out->info.regs_per_sm = b->regs_per_sm;
    out->info.max_threads_per_sm = b->max_threads_per_sm;
    out->info.l2_bytes = b->l2_bytes;
    out->info.mem_bandwidth_gbs = b->mem_bandwidth_gbs;
    out->info.total_mem_bytes = b->total_mem_bytes;
    sp_gpu_profile_derive(out);
}

/* Whether this NVRTC can target sm_<num> with the given suffix ('a': arch-specific, sm_90+;
 * 'f': family, sm_100+). */
static int sp_target_supported(int num, char suffix)
{
    if (suffix == 'a' && num < 90) return 0;
    if (suffix == 'f' && num < 100) return 0;
    const int *archs;
    int n = sp_nvrtc_archs(&archs);
    for (int i = 0; i < n; i++)
        if (archs[i] == num) return 1;
    return 0;
}

/* "h100, h200, rtx-pro-6000, sm_80, sm_86, ..., sm_90, sm_90a, ..." */
static void sp_accepted_names(sp_buf *b)
{
    for (size_t i = 0; i < SP_NBOARDS; i++) sp_buf_printf(b, "%s%s", i ? ", " : "", sp_boards[i].profile);
    const int *archs;
    int n = sp_nvrtc_archs(&archs);
    for (int i = 0; i < n; i++) {
        if (archs[i] < 80) continue;
        sp_buf_printf(b, ", sm_%d", archs[i]);
        if (archs[i] >= 90) sp_buf_printf(b, ", sm_%da", archs[i]);
    }
    sp_buf_puts(b, " (sm_XXf family targets for sm_100 and newer too)");
}

static sptune_status sp_unknown_name(const char *name)
{
    sp_buf b = {0};
    sp_accepted_names(&b);
    sptune_status st = sp_fail(SPTUNE_ERR_NOT_FOUND, "unknown GPU profile '%s'; accepted names: %s", name,
                               b.data && !b.oom ? b.data : "h100, h200, rtx-pro-6000, sm_XX");
    sp_buf_free(&b);
    return st;
}

sptune_status sp_gpu_profile_named(const char *name, sp_gpu_profile *out)
{
    if (!name || !*name || !out) return sp_fail(SPTUNE_ERR_INVALID, "GPU profile: no name given");
    for (size_t i = 0; i < SP_NBOARDS; i++) {
        if (strcasecmp(name, sp_boards[i].profile) == 0) {
            sp_profile_from_board(&sp_boards[i], out);
            return SPTUNE_OK;
        }
    }
    char suffix = 0;
    int num = sp_parse_sm(name, &suffix);
    if (num < 0) return sp_unknown_name(name);
    if (num < 80)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED, "sm_%d is not supported (sptune needs sm_80 or newer)", num);
    if (!sp_target_supported(num, suffix)) return sp_unknown_name(name);

    /* A generic target: architecture limits only. The board is unknown, so sm_count, l2_bytes,
     * mem_bandwidth_gbs and total_mem_bytes are 0 (meaning "unknown"). */
    memset(out, 0, sizeof *out);
    out->info.size = sizeof out->info;
    out->info.ordinal = -1;
    out->info.cc_major = num / 10;
    out->info.cc_minor = num % 10;
    const sp_cc_limits *lim = sp_cc_lookup(out->info.cc_major, out->info.cc_minor);
    out->info.smem_per_block_optin = lim->smem_per_block_optin;
    out->info.smem_per_sm = lim->smem_per_sm;
    out->info.max_threads_per_sm = lim->max_threads_per_sm;
    out->info.regs_per_sm = SP_REGS_PER_SM;
    if (suffix)
        snprintf(out->info.arch, sizeof out->info.arch, "sm_%d%c", num, suffix);
    else
        snprintf(out->info.arch, sizeof out->info.arch, "sm_%d", num);
    sp_copy(out->info.profile, sizeof out->info.profile, out->info.arch);
    snprintf(out->info.name, sizeof out->info.name, "generic %s GPU", out->info.arch);
    sp_gpu_profile_derive(out);
    return SPTUNE_OK;
}

/* The named board a device is, if any: its match word must stand as a word of the driver's name
 * (so "NVIDIA GH200 480GB" is not taken for an H200) and the compute capability must agree. */
static const sp_board *sp_board_for_device(const char *devname, int major, int minor)
{
    for (size_t i = 0; i < SP_NBOARDS; i++) {
        const sp_board *b = &sp_boards[i];
        if (b->cc_major != major || b->cc_minor != minor) continue;
        size_t n = strlen(b->device_match);
        for (const char *p = strstr(devname, b->device_match); p; p = strstr(p + 1, b->device_match)) {
            int starts = p == devname || p[-1] == ' ';
            int ends = !isalnum((unsigned char)p[n]);
            if (starts && ends) return b;
        }
    }
    return NULL;
}

sptune_status sp_gpu_profile_device(int ordinal, sp_gpu_profile *out)
{
    if (!out) return sp_fail(SPTUNE_ERR_INVALID, "sp_gpu_profile_device: no output");
    const sp_cuda_api *api;
    sptune_status st = sp_cuda_load(&api);
    if (st != SPTUNE_OK) return st;
    int count = 0;
    if ((st = SP_CU(api->DeviceGetCount(&count))) != SPTUNE_OK) return st;
    if (ordinal < 0 || ordinal >= count)
        return sp_fail(SPTUNE_ERR_NOT_FOUND, "no GPU with ordinal %d (%d found)", ordinal, count);
    CUdevice dev;
    if ((st = SP_CU(api->DeviceGet(&dev, ordinal))) != SPTUNE_OK) return sp_wrap(st, "GPU %d", ordinal);
    char devname[128] = "";
    if ((st = SP_CU(api->DeviceGetName(devname, (int)sizeof devname, dev))) != SPTUNE_OK)
        return sp_wrap(st, "GPU %d", ordinal);
    devname[sizeof devname - 1] = 0;

    int major = 0, minor = 0, sms = 0, optin = 0, smem_sm = 0, regs = 0, threads = 0, l2 = 0;
    int mem_khz = 0, bus_bits = 0;
    const struct {
        CUdevice_attribute attr;
        int *dst;
        int required;
        const char *what;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major, 1, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor, 1, "compute capability"},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms, 1, "SM count"},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin, 1, "opt-in shared memory"},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &smem_sm, 1, "shared memory per SM"},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &regs, 1, "registers per SM"},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &threads, 1, "threads per SM"},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2, 0, "L2 size"},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &mem_khz, 0, "memory clock"},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &bus_bits, 0, "memory bus width"},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        CUresult r = api->DeviceGetAttribute(attrs[i].dst, attrs[i].attr, dev);
        if (r == CUDA_SUCCESS) continue;
        *attrs[i].dst = 0;
        if (attrs[i].required) {
            st = sp_cuda_check(r, "cuDeviceGetAttribute");
            return sp_wrap(st, "GPU %d (%s): cannot read its %s", ordinal, devname, attrs[i].what);
        }
    }
    size_t total = 0;
    if (api->DeviceTotalMem(&total, dev) != CUDA_SUCCESS) total = 0;

    if (major < 8)
        return sp_fail(SPTUNE_ERR_UNSUPPORTED,
                       "GPU %d (%s) is sm_%d%d: sm_%d%d is not supported (sptune needs sm_80 or newer)",
                       ordinal, devname, major, minor, major, minor);

    const sp_board *b = sp_board_for_device(devname, major, minor);
    if (b) {
        sp_profile_from_board(b, out); /* nominal values stand in for anything not measured */
    } else {
        memset(out, 0, sizeof *out);
        out->info.size = sizeof out->info;
        snprintf(out->info.profile, sizeof out->info.profile, "sm_%d%d", major, minor);
    }
    out->info.ordinal = ordinal;
    sp_copy(out->info.name, sizeof out->info.name, devname);
    out->info.cc_major = major;
    out->info.cc_minor = minor;
    out->info.sm_count = sms;
    out->info.smem_per_block_optin = optin;
    out->info.smem_per_sm = smem_sm;
    out->info.regs_per_sm = regs;
    out->info.max_threads_per_sm = threads;
    if (l2 > 0) out->info.l2_bytes = l2;
    /* kHz x bits x 2 (double data rate) -> GB/s */
    if (mem_khz > 0 && bus_bits > 0) out->info.mem_bandwidth_gbs = (double)mem_khz * 1e3 * (bus_bits / 8.0) * 2.0 / 1e9;
    if (total > 0) out->info.total_mem_bytes = total;
    out->info.arch[0] = 0; /* the default target for this capability */
    sp_gpu_profile_derive(out);
    return SPTUNE_OK;
}

sptune_status sp_gpu_profile_current(sp_gpu_profile *out)
{
    const sp_cuda_api *cu;
    sptune_status st = sp_cuda_load(&cu);
    if (st != SPTUNE_OK) return st;
    CUdevice dev = 0;
    if (cu->CtxGetDevice(&dev) != CUDA_SUCCESS) dev = 0;   /* no current context */
    return sp_gpu_profile_device((int)dev, out);
}

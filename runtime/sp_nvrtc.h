/* NVRTC: CUDA C source -> cubin for a named architecture, with the log and resource usage. */
#ifndef SP_NVRTC_H
#define SP_NVRTC_H

#include "sptune.h"
#include <stddef.h>

typedef struct sp_resources {
    int registers;       /* per thread */
    int smem_static;     /* bytes of static shared memory */
    int local_bytes;     /* stack frame bytes per thread */
    int spill_stores;    /* bytes */
    int spill_loads;     /* bytes */
    int cmem;            /* bytes of constant bank 0 (params) */
} sp_resources;

typedef struct sp_cubin {
    unsigned char *image; /* cubin ELF */
    size_t size;
    char *log;            /* NVRTC + ptxas log (may be empty, never NULL after success) */
    sp_resources res;
    int from_cache;       /* set by sp_kernel_build when served from the disk cache */
} sp_cubin;

/* Compiles `source` (file name `name` in messages) for `arch` ("sm_90a", "sm_120", "sm_80")
 * with extra NVRTC options. On SPTUNE_ERR_COMPILE the message holds the start of the log and
 * out->log (if out is non-NULL) the whole log. Resources are parsed from ptxas' verbose output
 * for the single kernel; with several kernels, the maximum of each field.
 * Always passed: --gpu-architecture=<arch> -std=c++17 --ptxas-options=-v, then `options`.
 * arch must be a real target, sm_<digits>[a|f]: otherwise SPTUNE_ERR_INVALID; one this NVRTC
 * cannot target: SPTUNE_ERR_UNSUPPORTED. out is zeroed first; call sp_cubin_free on it after any
 * outcome (it may hold the log of a failed compile). out may be NULL (compile only). */
sptune_status sp_nvrtc_compile(const char *source, const char *name, const char *arch,
                               const char *const *options, int noptions, sp_cubin *out);
void sp_cubin_free(sp_cubin *c);
/* Registers per thread and stack frame bytes read from a cubin's .nv.info attributes (maximum
 * over its kernels). NVRTC returns no ptxas report when it serves a compile from a cache of its
 * own (seen on the GPU machine), so resources fall back on this. 0 when the image has none. */
int sp_cubin_elf_resources(const unsigned char *image, size_t size, int *registers, int *frame_bytes);
/* "13.0" */
sptune_status sp_nvrtc_version(int *major, int *minor);
sptune_status sp_nvrtc_version_text(char *buf, size_t len);
/* Architectures this NVRTC can target (for messages and checks): non-zero if arch is supported. */
int sp_nvrtc_supports(const char *arch);
/* The numeric targets this NVRTC lists (75, 80, 86, ..., 120); the array lives as long as the
 * process. Returns the count (0 if NVRTC could not say). */
int sp_nvrtc_archs(const int **archs);
/* The options every compile gets besides the architecture, as one string (for cache keys). */
const char *sp_nvrtc_fixed_options_text(void);
/* Resources from a log holding ptxas' verbose report (max over kernels; zeros when absent). */
void sp_nvrtc_parse_resources(const char *log, sp_resources *res);

#endif

/* A rendered kernel source as the CUDA layer takes it: the CUDA C, the NVRTC options, and each
 * kernel's entry point and launch geometry (gen/ renders it from a template; runtime/ compiles,
 * loads and launches it). */
#ifndef SP_KERNEL_SRC_H
#define SP_KERNEL_SRC_H

/* Kernels of one rendered source: most templates have one; an op that is a pipeline of kernels
 * has them launched in order on one stream with one argument list. */
#define SP_MAX_KERNELS 12

/* Tensor maps (TMA descriptors, sm_90+) the launcher encodes for a kernel at each launch and
 * passes after its nargs ordinary arguments, in order, as 128-byte __grid_constant__ parameters:
 * each describes a row-major bf16 matrix (rows x cols, cols contiguous) whose device pointer is
 * ordinary argument `arg`, copied in boxes of box_rows x box_cols with the given shared-memory
 * swizzle (bytes: 0, 32, 64 or 128). Out-of-range box elements read as zeros. rows_arg (-1: none) names a
 * by-value argument (i32 or u64) that caps rows at launch: a workspace the caller sizes by a capacity. */
#define SP_MAX_TMAPS 4
typedef struct sp_tmap_spec {
    int arg;
    unsigned long long rows, cols;
    unsigned box_rows, box_cols;
    unsigned swizzle;
    int rows_arg, rows_arg_u64;
} sp_tmap_spec;
typedef struct sp_tmaps {
    int nargs;              /* ordinary arguments before the maps */
    int n;                  /* 0: the kernel takes no tensor maps */
    sp_tmap_spec v[SP_MAX_TMAPS];
} sp_tmaps;

/* One kernel of a rendered source and how to launch it for the given problem. */
typedef struct sp_kernel_stage {
    char kernel[128];       /* entry point name (extern "C") */
    unsigned grid[3], block[3], cluster[3];
    unsigned smem;          /* dynamic shared memory, bytes */
    sp_tmaps tmaps;
    int pdl;                /* 1: the kernel opens with griddepcontrol.wait, so it may be launched while the
                               stream's previous kernel still runs (programmatic dependent launch, sm_90+) */
} sp_kernel_stage;

/* A rendered source: the CUDA C and its kernels, launched in order. */
typedef struct sp_kernel_src {
    char *source;           /* CUDA C */
    int nkernels;           /* 1 for most templates */
    sp_kernel_stage stage[SP_MAX_KERNELS];
    char **options;         /* extra NVRTC options from the template; NULL-terminated */
    int noptions;
} sp_kernel_src;

void sp_kernel_src_free(sp_kernel_src *k);

#endif

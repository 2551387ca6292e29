/* sptune: generate, compile, tune and serve sparse LLM kernels for NVIDIA GPUs.
 * The one public header. Every function that can fail returns a status (sptune_status) and, on failure, leaves
 * a readable message for the calling thread (sptune_last_error). The others cannot fail: accessors of an object
 * already made (a name, a count, a configuration; NULL or 0 when given NULL), the free functions (NULL allowed),
 * sptune_version and sptune_last_error. The library never exits. */
#ifndef SPTUNE_H
#define SPTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Only the declarations marked SPTUNE_API are exported by the shared library; an application may define it first
 * (empty, or its own import attribute) before including this header. */
#ifndef SPTUNE_API
#define SPTUNE_API __attribute__((visibility("default")))
#endif

#include "sptune_version.h" /* SPTUNE_VERSION_MAJOR, _MINOR, _PATCH, _STRING: generated from CMake's project version */

typedef enum sptune_status {
    SPTUNE_OK = 0,
    SPTUNE_ERR_INVALID = 1,      /* bad argument, shape, configuration or option */
    SPTUNE_ERR_NOMEM = 2,
    SPTUNE_ERR_IO = 3,           /* file system */
    SPTUNE_ERR_TEMPLATE = 4,     /* a Lua template failed to load, enumerate or render */
    SPTUNE_ERR_COMPILE = 5,      /* NVRTC refused the generated source */
    SPTUNE_ERR_NO_GPU = 6,       /* no NVIDIA driver or no device */
    SPTUNE_ERR_CUDA = 7,         /* a driver call or a kernel failed */
    SPTUNE_ERR_DB = 8,           /* database refused, corrupt, foreign or newer schema */
    SPTUNE_ERR_NOT_FOUND = 9,    /* no such op, GPU profile, entry */
    SPTUNE_ERR_UNSUPPORTED = 10, /* valid request this build or GPU cannot serve */
    SPTUNE_ERR_WRONG_RESULT = 11 /* a kernel ran but its output failed verification */
} sptune_status;

/* Message of the last failure on this thread ("" if none). Valid until the next sptune call. */
SPTUNE_API const char *sptune_last_error(void);
/* Short, stable name of a status: an identifier, the enumerator's suffix in lower case ("ok", "invalid", "nomem",
 * "no_gpu", "not_found", "wrong_result", ...; "unknown" for a number that is no status). A static string: never
 * freed, valid for the life of the process. */
SPTUNE_API const char *sptune_status_name(sptune_status st);
/* "0.5.0" (0.5: the structs sptune fills begin with their size, sptune_kernel_signature and sptune_kernel_launches
 * renamed from sptune_kernel_args and sptune_kernel_count; 0.4: slotfill calls take a workspace; 0.3:
 * sptune_kernel_request begins with its size; 0.2: launches take a token count up to the problem's). 0.x: each minor
 * version may change the ABI (the SONAME names it: libsptune.so.0.5). A static string: never freed. */
SPTUNE_API const char *sptune_version(void);

/* ---- GPUs ---------------------------------------------------------------------------- */

/* The structs sptune fills for its caller (sptune_gpu_info, sptune_arg, sptune_slotfill_info) begin with `size`:
 * set it to sizeof the struct as compiled (or 0: this version's) before the call; sptune fills that much and leaves
 * there the bytes it filled, so that a caller built against an older header keeps working with a newer library. */
typedef struct sptune_gpu_info {
    size_t size;              /* in: 0 or sizeof(sptune_gpu_info); out: the bytes filled */
    int ordinal;              /* driver device ordinal, -1 for a named (absent) profile */
    char profile[32];         /* "h100", "h200", "rtx-pro-6000", or "sm_XX" for the generic profile */
    char name[128];           /* device name as the driver reports it, or the profile's */
    char arch[16];            /* NVRTC target: "sm_90a", "sm_120", "sm_86", ... */
    int cc_major, cc_minor;
    int sm_count;
    int smem_per_block_optin; /* bytes */
    int smem_per_sm;          /* bytes */
    int regs_per_sm;
    int max_threads_per_sm;
    int l2_bytes;
    double mem_bandwidth_gbs; /* nominal GB/s */
    size_t total_mem_bytes;
} sptune_gpu_info;

/* Number of usable NVIDIA GPUs. Returns SPTUNE_ERR_NO_GPU (with the reason) when the driver
 * cannot be loaded or reports no device. */
SPTUNE_API sptune_status sptune_gpu_count(int *count);
SPTUNE_API sptune_status sptune_gpu_get(int ordinal, sptune_gpu_info *info);
/* A profile by name: "auto" is the device of the calling thread's current CUDA context (device 0 when
 * none is current); "h100", "h200", "rtx-pro-6000", "sm_XX[a]". */
SPTUNE_API sptune_status sptune_gpu_profile(const char *name, sptune_gpu_info *info);

/* Driver and NVRTC versions as "major.minor" (driver fails with SPTUNE_ERR_NO_GPU when absent). */
SPTUNE_API sptune_status sptune_driver_version(char *buf, size_t len);
SPTUNE_API sptune_status sptune_nvrtc_version(char *buf, size_t len);

/* Default locations: the database ($SPTUNE_DB, else $XDG_DATA_HOME/sptune/tuning.db) and the
 * kernel cache ($SPTUNE_CACHE_DIR, else $XDG_CACHE_HOME/sptune/kernels). */
SPTUNE_API sptune_status sptune_default_db_path(char *buf, size_t len);
SPTUNE_API sptune_status sptune_default_cache_dir(char *buf, size_t len);

/* ---- Tuned kernels for an application -------------------------------------------------- */

/* Where a kernel's configuration came from. */
typedef enum sptune_origin {
    SPTUNE_ORIGIN_EXACT = 0,   /* the fastest recorded for this problem on this GPU profile */
    SPTUNE_ORIGIN_NEAREST = 1, /* the fastest recorded for the nearest problem of the op on this profile */
    SPTUNE_ORIGIN_DEFAULT = 2, /* nothing usable recorded: the template's default configuration, or the valid
                                  one nearest to it when the default does not fit the problem */
    SPTUNE_ORIGIN_SAME_ARCH = 3 /* nothing for this profile: the nearest result of another GPU profile of
                                   the same architecture (an H100 served from H200 results) */
} sptune_origin;

/* Fill it with designated initializers ({.op = "gemm", .problem = ..., .gpu = "auto"}): fields left out are 0,
 * which always means the default. Fields are only ever added at the end; `size` says how much of the struct the
 * caller knows, so that a later library never reads past an earlier caller's struct (0: the fields up to `fixed`,
 * this version's; SPTUNE_KERNEL_REQUEST_SIZE sets it to the caller's header). */
typedef struct sptune_kernel_request {
    size_t size;           /* 0, or sizeof(sptune_kernel_request) as the caller was compiled */
    const char *op;        /* "twell-ffn", "gemm", ... (sptune ops) */
    const char *problem;   /* the op's dimensions: "M=16384,D=2048,F=5632,nnz=40" (the TwELL ops' nnz, active
                              neurons per token, and their data dimensions may be left out: 40 and the defaults
                              sptune ops lists) */
    const char *gpu;       /* GPU profile ("h200"; sptune_gpu_get().profile) or "auto" (the current context's
                              device, else device 0) */
    const char *db_path;   /* NULL: the default database; "": no database of the user's */
    const char *cache_dir; /* NULL: the default kernel cache; "": compile without caching */
    int ignore_shipped;    /* 1: leave out the results shipped with sptune (measured on real GPUs) */
    const char *fixed;     /* NULL, or parameters the configuration must take ("window=128,decode=owner"): those
                              its data was prepared for (sptune_slotfill_fixed); recorded results with other values
                              are passed over, and the default takes these */
    int sparse_only;       /* twell-ffn: 1 runs the configuration found even where the dense layer stands in for it
                              (0: nothing measured near the described data, or the dense layer measured faster there:
                              the launches run the dense layer on cuBLAS in the caller's workspace, and
                              sptune_kernel_origin's detail says why) */
} sptune_kernel_request;
#define SPTUNE_KERNEL_REQUEST_SIZE sizeof(sptune_kernel_request)

typedef struct sptune_kernel sptune_kernel;

/* The best known kernel of req->op for req->problem on req->gpu: the recorded results (the
 * user's database and the results shipped with sptune) are looked up (exact problem, else the
 * nearest recorded problem whose configuration is valid for this one, else the same from another
 * GPU profile of the same architecture, else the template's default), then rendered and compiled
 * (through the kernel cache). A result measured in the other 16-bit format (bf16 for fp16 weights: the same
 * instructions) serves as the same configuration in the problem's format, one step away. At equal nearness
 * the fastest measured result wins (its speed-up over the baseline timed in the same run), whoever recorded
 * it: a short tuning run that measured a slow configuration never displaces a faster recorded one. A result of an earlier template version is
 * served when it is the fastest, and the origin's detail says it is stale (not re-measured).
 * A database that does not exist counts as empty; one that cannot be read is an error.
 * A repeated request is answered from an in-process copy (tens of microseconds) while the user's
 * database file is unchanged; a result recorded meanwhile is seen at once.
 * Threads: any thread may get kernels at any time; a kernel object is used by one thread at a time
 * (its first launch loads its module into the context current then, which must stay current for
 * its later launches: get one kernel object per context).
 * *out is a new object of the caller's, freed with sptune_kernel_free (NULL on failure). */
SPTUNE_API sptune_status sptune_kernel_get(const sptune_kernel_request *req, sptune_kernel **out);
/* The configuration ("bm=128,bn=128,...") and where it came from; detail (may be NULL) gets a
 * sentence such as "tuned for M=16384,... at 1.9704 ms (0.90x the baseline)". Both strings are valid while k lives. */
SPTUNE_API const char *sptune_kernel_config(const sptune_kernel *k);
SPTUNE_API sptune_origin sptune_kernel_origin(const sptune_kernel *k, const char **detail);
/* The measurement behind the kernel's configuration: its median time and that of the dense baseline
 * (cuBLAS, the same problem in the same run), in milliseconds; both -1 when nothing was measured
 * (a template default). When *baseline_ms < *ms the dense baseline is the faster choice for this
 * problem (a sparse op at a large token count, say): the application should run that instead.
 * The times are those of the recorded problem, which may be the nearest one (sptune_kernel_origin). */
SPTUNE_API sptune_status sptune_kernel_expected(const sptune_kernel *k, double *ms, double *baseline_ms);
/* That recorded problem and its GPU profile (*gpu, when gpu is not NULL), as data: the problem asked for itself
 * (exact), the nearest one measured (a nearby token count, other data dimensions) or another GPU's of the same
 * architecture; NULL (and *gpu NULL) for a template default. Valid while k lives. */
SPTUNE_API const char *sptune_kernel_recorded(const sptune_kernel *k, const char **gpu);
/* Autotuning on the application's own data (Triton's model): the kernel sptune_kernel_get serves for req, the
 * configurations recorded nearest req->problem (a few) and, for twell-ffn, the dense layer (hot=8), each launched
 * as sptune_kernel_launch_ws would on the caller's tensors, stream and workspace (one warm-up, the median of five
 * timed runs; those that need more workspace than workspace_bytes are passed over) and the fastest returned in
 * *out (sptune_kernel_origin's detail ends with what was timed) — the kernel served stays unless the fastest other,
 * timed against it launch by launch, is at least 2 % faster (a brief measure must not make what is served worse).
 * The outputs hold the last candidate's result afterwards: launch *out to compute. Call it once, outside CUDA graph
 * capture (a capturing stream is refused: autotune first, then capture the kernel it returns), with a batch like
 * those to come. For an op whose data has
 * kinds (twell: gen), the fastest is recorded in the user's database (req->db_path: NULL the default one, "" none)
 * as a result of req->problem measured on the application's own tensors (gen=2, baseline: the dense layer timed
 * with it), which sptune_kernel_get then serves for that problem (exact, over the generators' results) in this
 * process and later ones; a database that cannot be written costs the record, not the kernel (the detail says so).
 * Other recorded results are left as they were. SPTUNE_ERR_NO_GPU without a GPU, the launch's error when a
 * candidate fails. *out is a new object of the caller's, freed with sptune_kernel_free (NULL on failure). */
SPTUNE_API sptune_status sptune_kernel_autotune(const sptune_kernel_request *req, void *stream, long long tokens,
                                                const unsigned long long *tensors, unsigned long long workspace,
                                                size_t workspace_bytes, sptune_kernel **out);
/* The op's argument list, in launch order, as one line of text ("" when its template declares none); valid while k
 * lives. */
SPTUNE_API const char *sptune_kernel_signature(const sptune_kernel *k);

/* One kernel argument, as the op's template declares it. Launch lists hold, in this order, a
 * pointer to each argument's value: for a pointer argument, a pointer to its CUdeviceptr; for a
 * by-value one, a pointer to a number of its type. */
typedef enum sptune_arg_role {
    SPTUNE_ARG_INPUT = 0,     /* device memory the kernel reads */
    SPTUNE_ARG_OUTPUT = 1,    /* device memory the kernel writes */
    SPTUNE_ARG_WORKSPACE = 2, /* device scratch memory the caller provides */
    SPTUNE_ARG_DIM = 3,       /* by value: the problem dimension of the same name */
    SPTUNE_ARG_SCALAR = 4     /* by value: a number the caller chooses (a capacity) */
} sptune_arg_role;

typedef struct sptune_arg {
    size_t size;              /* in: 0 or sizeof(sptune_arg); out: the bytes filled */
    const char *name;         /* "X" */
    const char *type;         /* element type: "bf16", "f16", "x16" (bf16 or fp16, as the problem says),
                                 "u8", "u32", "u64", "i32", "f32" */
    size_t type_bytes;        /* bytes of one element */
    int pointer;              /* 1: a device pointer; 0: passed by value */
    sptune_arg_role role;
    const char *shape;        /* extents, outermost first: "M x D"; "" for by-value arguments */
    const char *doc;          /* "" when none */
    long long elements;       /* pointers: elements for the kernel's problem and configuration, every scalar
                                 argument at its typical value; -1 when that depends on the data */
    long long elements_bound; /* pointers: the same with every scalar at its bound; -1 likewise */
    long long typical, bound; /* scalars the caller chooses (a workspace capacity): the value for data like
                                 real models' and the value no data can exceed (-1: none declared). Any value
                                 gives an exact result; below `bound` a call may take slower paths, and the
                                 op says so through its workspace (twell-ffn: pool_counter > pool_capacity). */
} sptune_arg;

/* Number of arguments, and argument `index` (strings valid while k lives). */
SPTUNE_API int sptune_kernel_arg_count(const sptune_kernel *k);
SPTUNE_API sptune_status sptune_kernel_arg(const sptune_kernel *k, int index, sptune_arg *out);
/* Device bytes of the workspace arguments together, each rounded up to 256 bytes (so that one
 * allocation cut in declaration order keeps every part aligned): with the scalars at their typical
 * values (bound = 0) or at their bounds (bound = 1). */
SPTUNE_API sptune_status sptune_kernel_workspace(const sptune_kernel *k, int bound, size_t *bytes);
/* The same for launches of `tokens` tokens at most (1 to the problem's; SPTUNE_ALL_TOKENS: the problem's): a
 * kernel got for a large batch launched with a small one needs only that batch's workspace, and
 * sptune_kernel_launch_ws cuts a workspace that holds this much (but not the problem's) at the launched count.
 * Not const: the geometry of a token count is worked out once and kept in k (one thread at a time per kernel). */
SPTUNE_API sptune_status sptune_kernel_workspace_for(sptune_kernel *k, long long tokens, int bound, size_t *bytes);
/* Where sptune_kernel_launch_ws puts workspace argument `name` in a workspace of workspace_bytes (the cut
 * depends on whether it holds the bounds): its byte offset and its bytes. */
SPTUNE_API sptune_status sptune_kernel_workspace_part(const sptune_kernel *k, const char *name,
                                                      size_t workspace_bytes, size_t *offset, size_t *bytes);
/* Kernels launched per call (several for the pipelines such as twell-ffn), and each one's geometry. */
SPTUNE_API int sptune_kernel_launches(const sptune_kernel *k);
SPTUNE_API sptune_status sptune_kernel_geometry(const sptune_kernel *k, int index, unsigned grid[3], unsigned block[3],
                                     unsigned *smem_bytes);
/* Launches every kernel of k in order on `stream` (a CUstream; NULL: the default stream) with
 * the op's argument list (pointers to the arguments, as for cuLaunchKernel, in the order
 * sptune_kernel_signature shows). The module is loaded into the context current at the first launch,
 * which must stay the current context for later launches. Checks the launches, not completion.
 * The token count (the dimension sptune_kernel_tokens names: M, slotfill-spmm's N) may be anything
 * from 1 to the problem's (0: an empty batch, nothing launched): one kernel object serves every batch up to the problem's, the grid and
 * tensor maps of each launch made for the count passed (worked out once per count; the last 16 kept).
 * A count above the problem's, or another dimension different from the problem's, is
 * SPTUNE_ERR_INVALID. The configuration is the one found for the problem as got: get a second
 * kernel for a much smaller typical batch if its speed matters. No host synchronization happens inside
 * a launch (CUDA graphs can capture it). */
SPTUNE_API sptune_status sptune_kernel_launch(sptune_kernel *k, void *stream, void **args);
/* The name of the token-count dimension ("M"; slotfill-spmm: "N") and its maximum (the problem's);
 * NULL and -1 for an op without one. The name is valid while k lives. */
SPTUNE_API const char *sptune_kernel_tokens(const sptune_kernel *k, long long *max_tokens);
/* The same without building the argument list: `tensors` holds the device pointers (CUdeviceptr) of
 * the op's inputs and outputs in declaration order (sptune_kernel_arg roles input and output; twell-ffn:
 * X, Wg, Wu, Wd, Y), `workspace` one device allocation of `workspace_bytes`, cut into the workspace
 * arguments as sptune_kernel_workspace counts them (256-byte parts in declaration order). The
 * capacities are their bounds when the workspace holds them, else their typical values (at least
 * sptune_kernel_workspace(k, 0, ...) bytes are needed: SPTUNE_ERR_INVALID otherwise); `tokens` is the
 * token count (1 to the problem's; 0: an empty batch, nothing launched; SPTUNE_ALL_TOKENS: the problem's),
 * the other dimensions the problem's. The workspace's base is 256-byte aligned (cudaMalloc's are;
 * SPTUNE_ERR_INVALID otherwise). The op clears what it needs of the workspace itself. */
#define SPTUNE_ALL_TOKENS (-1LL) /* the token count of the problem the kernel was got for */
SPTUNE_API sptune_status sptune_kernel_launch_ws(sptune_kernel *k, void *stream, long long tokens,
                                                 const unsigned long long *tensors, unsigned long long workspace,
                                                 size_t workspace_bytes);

/* Launch helpers per family, over sptune_kernel_launch_ws: device pointers (CUdeviceptr), the token
 * count (1 to the problem's; 0: an empty batch, nothing launched, SPTUNE_OK; SPTUNE_ALL_TOKENS: the
 * problem's) and a stream. Each refuses a kernel of another op.
 * twell-ffn: Y = (relu(X Wg^T) * (X Wu^T)) Wd, X and Y tokens x D, Wg, Wu, Wd F x D, bf16. */
SPTUNE_API sptune_status sptune_twell_ffn(sptune_kernel *k, void *stream, long long tokens, unsigned long long x,
                                          unsigned long long w_gate, unsigned long long w_up,
                                          unsigned long long w_down, unsigned long long y,
                                          unsigned long long workspace, size_t workspace_bytes);
/* twell-ffn's run-time guard: whether the last call with this kernel, token count and workspace took the slower exact
 * paths (*slow = 1: more overflow than the pool held, or more heavy tokens than the dense path's capacity; the data is
 * not what the problem described): then grow the workspace to the bound (sptune_kernel_workspace) or describe the
 * data again and get another kernel. Waits for the stream's work, then reads 12 bytes of the workspace; 0 for a
 * kernel that runs the dense layer in the op's place (sptune_kernel_request.sparse_only). */
SPTUNE_API sptune_status sptune_twell_ffn_slow(sptune_kernel *k, void *stream, long long tokens,
                                               unsigned long long workspace, size_t workspace_bytes, int *slow);
/* The TwELL parts, for engines that keep the packed gate between kernels: twell-d2t packs relu(X Wg^T)
 * into its workspace (the parts named "packed" and "pool": sptune_kernel_workspace_part), which
 * twell-t2d (Y = h Wd) or twell-gated (Y = (h * X Wu^T) Wd) read with the same T and S. */
SPTUNE_API sptune_status sptune_twell_d2t(sptune_kernel *k, void *stream, long long tokens, unsigned long long x,
                                          unsigned long long w_gate, unsigned long long workspace,
                                          size_t workspace_bytes);
SPTUNE_API sptune_status sptune_twell_t2d(sptune_kernel *k, void *stream, long long tokens, unsigned long long packed,
                                          unsigned long long pool, unsigned long long w_down, unsigned long long y);
SPTUNE_API sptune_status sptune_twell_gated(sptune_kernel *k, void *stream, long long tokens,
                                            unsigned long long packed, unsigned long long pool, unsigned long long x,
                                            unsigned long long w_up, unsigned long long w_down,
                                            unsigned long long y);
/* twell-ffn's hot/cold split (its `hot` parameter: the first hot/8 of the neurons run as a dense
 * tensor-core slice for every token, the rest sparse) pays when the neurons are ordered by how often
 * they fire, the most frequent first; a problem says so with order=1 ("M=16384,D=2048,F=5632,nnz=40,
 * order=1"), and then gets the configurations measured on such weights. Calibrate once, on activations
 * like the model's:
 * sptune_twell_count_active adds to counts[j] (F of them, zeroed by the caller) the tokens of `gate`
 * (tokens x F bf16 values, relu(X Wg^T) on calibration data, say) whose entry j is positive, and
 * sptune_twell_hot_order writes perm[i] = the neuron that goes to position i (descending counts, ties by
 * index). Apply it once to the rows of Wg, Wu and Wd (new row i = old row perm[i]): the layer computes
 * the same function. Results are exact for any order; only the speed depends on it. Host memory. */
SPTUNE_API sptune_status sptune_twell_count_active(const void *gate, long long tokens, int F,
                                                   unsigned long long *counts);
SPTUNE_API sptune_status sptune_twell_hot_order(const unsigned long long *counts, int F, int *perm);
/* What the layer's activations are like, as the problem to ask for: the TwELL ops' data dimensions measured from a
 * calibration batch instead of left at their defaults, so that the results looked up (and the tuning that records
 * them) describe data like the model's. active[r] (sptune_twell_count_tokens: the positive gate entries of token r,
 * r < tokens, in the batch's order) and counts[j] (sptune_twell_count_active over the same batch) give
 *     "M=<M>,D=<D>,F=<F>,nnz=<mean per token>,dead=<% neurons that never fired>,tail=<a: firing rates ~ rank^-a>,
 *      dense=<% tokens far above the rest>,dense_nnz=<their mean>,at=<0 first tokens, 1 scattered, 2 token 0 and
 *      others>,order=<order>"
 * (the dimensions of `sptune ops`; M is the largest batch to serve, order 1 when the weights are laid out by
 * sptune_twell_hot_order). A buffer of 160 bytes is enough. Host memory. From counts over the whole batch the dense
 * tokens' share of each neuron's count is estimated for the tail; sptune_twell_describe_gate, given the gate
 * activations themselves (tokens x F bf16, relu(X Wg^T)), counts the neurons over the ordinary tokens alone. */
SPTUNE_API sptune_status sptune_twell_count_tokens(const void *gate, long long tokens, int F, unsigned *active);
SPTUNE_API sptune_status sptune_twell_describe(long long tokens, const unsigned *active, int F,
                                               const unsigned long long *counts, long long M, int D, int order,
                                               char *buf, size_t len);
SPTUNE_API sptune_status sptune_twell_describe_gate(const void *gate, long long tokens, int F, long long M, int D,
                                                    int order, char *buf, size_t len);
/* gemm: C = A B^T, A tokens x K, B N x K, C tokens x N, bf16. */
SPTUNE_API sptune_status sptune_gemm(sptune_kernel *k, void *stream, long long tokens, unsigned long long a,
                                     unsigned long long b, unsigned long long c);
/* slotfill-spmm: Y = X W^T, W the device copy of an encoded matrix (sptune_slotfill_image), X tokens x K,
 * Y tokens x M. The workspace: sptune_kernel_workspace(k) bytes (0 for the fused kernels, which take 0 and 0 here;
 * M x K x 2 for a large-batch kernel that expands W into it before a dense GEMM, config expand=1); the call only
 * uses it while it runs, so one workspace serves every layer launched on the same stream. */
SPTUNE_API sptune_status sptune_slotfill_spmm(sptune_kernel *k, void *stream, long long tokens,
                                              unsigned long long w_image, unsigned long long x, unsigned long long y,
                                              unsigned long long workspace, size_t workspace_bytes);
SPTUNE_API void sptune_kernel_free(sptune_kernel *k);

/* ---- Slot-Filling weights (op slotfill-spmm) --------------------------------------------------- */

/* A weight matrix W (M x K, as nn.Linear keeps it; zeros are the pruned weights) encoded in the
 * Slot-Filling layers for slotfill-spmm, Y[N x M] = X[N x K] W^T. Encode once (or read a file that
 * `sptune encode` wrote), copy the image to the device, get a kernel whose configuration reads it,
 * and launch that with the image's device pointer as the first argument:
 *
 *     sptune_slotfill *w;   sptune_slotfill_encode(host_w, M, K, 0, NULL, &w);   // bf16, default encoding
 *     char problem[128];    sptune_slotfill_problem(w, max_batch, problem, sizeof problem);
 *     req.op = "slotfill-spmm"; req.problem = problem; req.fixed = sptune_slotfill_fixed(w);
 *     sptune_kernel_get(&req, &k);
 *     size_t n; const void *img = sptune_slotfill_image(w, &n);   cuMemcpyHtoD(dW, img, n);
 *     void *args[] = {&dW, &dX, &dY, &M, &N, &K};   sptune_kernel_launch(k, stream, args);
 *
 * Or encode for an already chosen kernel: sptune_slotfill_encode(..., sptune_kernel_config(k), ...). */
typedef struct sptune_slotfill sptune_slotfill;

/* Encodes w (M x K 16-bit floats, row-major; fp16 != 0: fp16, else bf16; its zeros, +0 and -0 alike (w * mask
 * leaves -0 where a weight was negative), are the pruned weights: decoding gives +0 there). config: NULL for the
 * default encoding: decode=sp24 when w is 2:4 sparse (at most 2 nonzeros in every aligned group of 4 along
 * K, as 2:4 pruning leaves it: the sparse tensor cores read it as it is), else decode=bitmap; or a
 * configuration of slotfill-spmm (only its window, dbits, fill and decode are read; decode=sp24 refuses
 * weights that are not 2:4, naming the first group of 4 that holds more). On one core, a 28672 x 8192
 * matrix takes about a second. *out is the caller's, freed with sptune_slotfill_free (NULL on failure). */
SPTUNE_API sptune_status sptune_slotfill_encode(const void *w, long long M, long long K, int fp16, const char *config,
                                     sptune_slotfill **out);
/* Reads and checks (magic, version, shape, offsets, checksum) an encoded matrix file; *out is the caller's, freed
 * with sptune_slotfill_free (NULL on failure). */
SPTUNE_API sptune_status sptune_slotfill_read(const char *path, sptune_slotfill **out);
SPTUNE_API sptune_status sptune_slotfill_write(const sptune_slotfill *m, const char *path);
/* The bytes to copy to the device, as they are (the kernel reads them there); valid while m lives. */
SPTUNE_API const void *sptune_slotfill_image(const sptune_slotfill *m, size_t *bytes);
/* The configuration parameters the encoding fixes ("window=128,dbits=5,fill=0,decode=bitmap,dtype=bf16"),
 * for sptune_kernel_request.fixed. Valid while m lives. */
SPTUNE_API const char *sptune_slotfill_fixed(const sptune_slotfill *m);

/* Where W's nonzeros went and the bytes of each part. The bitmap encoding (the default) decodes every
 * nonzero for the tensor cores: in_tc = nonzeros; bytes_tc its values, bytes_index the bitmaps, block
 * headers and offsets, bytes_residual the padding; nothing in slots. */
typedef struct sptune_slotfill_info {
    size_t size;              /* in: 0 or sizeof(sptune_slotfill_info); out: the bytes filled */
    long long M, K;
    int fp16;
    long long nonzeros, in_tc, in_slots, in_residual;   /* where W's nonzeros went */
    long long bytes_tc, bytes_slots, bytes_residual, bytes_index, bytes_dense; /* per layer, and dense W */
} sptune_slotfill_info;
SPTUNE_API sptune_status sptune_slotfill_info_get(const sptune_slotfill *m, sptune_slotfill_info *info);
/* The slotfill-spmm problem for this matrix and batches of up to `tokens` tokens, for sptune_kernel_request.problem:
 * "M=..,K=..,N=tokens,sparsity=..,fp16=..,dist=..", the sparsity (percent of zeros) and the kind of pruning (dist:
 * 0 elements pruned independently, 1 by magnitude over rows of different scales, 2 per row as Wanda and SparseGPT
 * prune, 3 2:4, 4 rows far from the rest) measured from the encoding, so that the results looked up were measured
 * on weights like these. Reads the whole encoding (call it once per matrix); a buffer of 128 bytes is enough.
 * SPTUNE_ERR_INVALID for tokens outside 1..2^31-1 or a buffer too small (then buf is ""). */
SPTUNE_API sptune_status sptune_slotfill_problem(const sptune_slotfill *m, long long tokens, char *buf, size_t len);
/* Rebuilds the dense W (M x K, row-major, bit for bit) from the encoding. */
SPTUNE_API sptune_status sptune_slotfill_decode(const sptune_slotfill *m, void *w);
SPTUNE_API void sptune_slotfill_free(sptune_slotfill *m);

/* Slot-Filling weights on the device, kept with what they are (M, K, data type, encoding), so that the launch
 * helper refuses a kernel they were not encoded for: SPTUNE_ERR_INVALID naming the difference (a 4096 x 14336
 * matrix given to a kernel got for 14336 x 4096, a bitmap image to a three-layer kernel, bf16 to fp16), never a
 * read of the wrong layout. The raw route (sptune_slotfill_spmm with a device pointer) has only the kernel's
 * header check, which makes the outputs NaN.
 *
 *     sptune_slotfill_gpu *dw;   sptune_slotfill_upload(w, &dw);     // after sptune_kernel_get as above
 *     sptune_slotfill_apply(k, stream, tokens, dw, dX, dY, workspace, workspace_bytes);
 *
 * sptune_slotfill_upload copies m's image into new device memory of the CUDA context current on this thread
 * (SPTUNE_ERR_INVALID when none is); sptune_slotfill_gpu_free frees it. sptune_slotfill_adopt wraps device
 * memory the caller allocated and filled with m's image instead (an engine's own allocator; `bytes` its size, at
 * least sptune_slotfill_image's; the address 16-byte aligned); the handle does not free it. m may be freed after either. A handle is read
 * only: any thread may launch with it. */
typedef struct sptune_slotfill_gpu sptune_slotfill_gpu;
SPTUNE_API sptune_status sptune_slotfill_upload(const sptune_slotfill *m, sptune_slotfill_gpu **out);
SPTUNE_API sptune_status sptune_slotfill_adopt(const sptune_slotfill *m, unsigned long long image, size_t bytes,
                                               sptune_slotfill_gpu **out);
/* The device address of the image (0 for NULL): the first argument of the raw launch. */
SPTUNE_API unsigned long long sptune_slotfill_gpu_image(const sptune_slotfill_gpu *w);
/* Y = X W^T as sptune_slotfill_spmm (the same workspace), after checking w against k (M, K, and every parameter the
 * encoding fixes) and that w's context is the current one. */
SPTUNE_API sptune_status sptune_slotfill_apply(sptune_kernel *k, void *stream, long long tokens,
                                               const sptune_slotfill_gpu *w, unsigned long long x, unsigned long long y,
                                               unsigned long long workspace, size_t workspace_bytes);
SPTUNE_API void sptune_slotfill_gpu_free(sptune_slotfill_gpu *w);

#ifdef __cplusplus
}
#endif
#endif

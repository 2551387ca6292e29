/* Lua templates: load in a sandbox, describe a parameter space, check constraints, render CUDA C.
 * The Lua-side contract is written down in templates/README.md. A template object owns one Lua
 * state and is not thread-safe; load one per thread. */
#ifndef SP_TEMPLATE_H
#define SP_TEMPLATE_H

#include "sptune.h"
#include "sp_args.h"
#include "sp_gpu.h"
#include "sp_kernel_src.h"
#include "sp_str.h"

#define SP_MAX_PARAMS 32
#define SP_MAX_DIMS 16

typedef enum sp_value_kind { SP_VAL_INT, SP_VAL_STR, SP_VAL_BOOL } sp_value_kind;

typedef struct sp_value {
    sp_value_kind kind;
    long long i;  /* INT: the value; BOOL: 0/1 */
    char *text;   /* canonical text of every kind: "128", "xor", "true" */
} sp_value;

typedef struct sp_param {
    char *name;
    char *doc;
    int nvalues;
    sp_value *values;
    int default_index;
    int same_cost; /* its values run the same instructions (a data format such as bf16/fp16): a result measured
                      with one value stands for the others when the runtime looks up recorded results */
} sp_param;

/* A configuration: one value index per parameter, in the template's parameter order. */
typedef struct sp_config {
    int nparams;
    int idx[SP_MAX_PARAMS];
} sp_config;

/* A problem: named numeric dimensions in the template's declared order ("M", "N", "K", ...). */
typedef struct sp_problem {
    int n;
    char name[SP_MAX_DIMS][24];
    double v[SP_MAX_DIMS];
} sp_problem;

/* Sandbox limits for one call into a template (load, a constraint, emit, ...). */
typedef struct sp_sandbox_limits {
    long long max_instructions; /* VM instructions per call; default 200 million */
    size_t max_memory;          /* bytes held by the Lua state; default 256 MiB */
} sp_sandbox_limits;

typedef struct sp_template sp_template;

/* Ops available: templates/<family>/<op>.lua (the embedded set, or $SPTUNE_TEMPLATES/<...> when
 * that variable names a folder). *names is a NULL-terminated array; free with sp_strv_free. */
sptune_status sp_template_list(char ***names, int *count);

/* Loads op by name (e.g. "gemm"). Errors name the file and line: "templates/dense/gemm.lua:12: ...". */
sptune_status sp_template_load(const char *op, sp_template **out);
/* Loads a template from a string (tests; chunkname like "templates/test/x.lua"). limits may be NULL. */
sptune_status sp_template_load_source(const char *chunkname, const char *source,
                                      const sp_sandbox_limits *limits, sp_template **out);
void sp_template_free(sp_template *t);

const char *sp_template_name(const sp_template *t);
const char *sp_template_family(const sp_template *t);
const char *sp_template_description(const sp_template *t);
/* The kernels' arguments in launch order, as the template declares them (gen/sp_args.h), and as
 * one line of text ("" when the template declares none). */
const char *sp_template_args(const sp_template *t);
int sp_template_nargs(const sp_template *t);
const sp_arg *sp_template_arg(const sp_template *t, int i);
int sp_template_arg_index(const sp_template *t, const char *name); /* -1 when none has that name */
const char *sp_template_path(const sp_template *t);
/* SHA-256 hex over the template file and every file of templates/lib. */
const char *sp_template_hash(const sp_template *t);
int sp_template_nparams(const sp_template *t);
const sp_param *sp_template_param(const sp_template *t, int i);
int sp_template_ndims(const sp_template *t);
const char *sp_template_dim(const sp_template *t, int i);
/* 1 when dimension i may be left out of a problem (its default then in *v, which may be NULL). */
int sp_template_dim_default(const sp_template *t, int i, double *v);
/* 1 when dimension i numbers kinds, not sizes (ranges' category = true: how the data was made, say): values
 * are equal or different, never nearer by their numbers. */
int sp_template_dim_category(const sp_template *t, int i);
/* 1 when dimension i was added with a default that is the data problems had before it existed (ranges'
 * as_before = true): a recorded key without it names the same problem, not a nearby one. */
int sp_template_dim_as_before(const sp_template *t, int i);
/* 1 when dimension i says how the tuner made the data it measured on (ranges' across = true: a generator), not
 * what a user's problem is: results that differ only in such dimensions are one problem measured on several kinds
 * of data, and the lookup serves the configuration whose worst speed-up over them is best. */
int sp_template_dim_across(const sp_template *t, int i);
/* 1 and *v when across dimension i has a value for results measured on the caller's own tensors (ranges' own:
 * autotune and `sptune tune --data` record them so; no generator makes such data): where a problem has them, they
 * are what the lookup serves, not the best worst case over the generators' kinds. */
int sp_template_dim_own(const sp_template *t, int i, double *v);
/* The dimension with such a value (*v set), -1 when the op's data has none. */
int sp_template_own_dim(const sp_template *t, double *v);

/* The dimension a launch may lower below the problem's (the token count: "M", "N"), NULL when none.
 * The source does not depend on it (emit is not given it), so one kernel serves every value up to the
 * problem's with the geometry sp_template_geometry gives for the value launched. */
const char *sp_template_tokens(const sp_template *t);

/* "bm=128,bn=64" -> config; parameters not named take their default. Unknown names or values
 * are SPTUNE_ERR_INVALID with the accepted values in the message. */
sptune_status sp_config_parse(const sp_template *t, const char *text, sp_config *out);
void sp_config_default(const sp_template *t, sp_config *out);
/* The default on gpu for problem p (NULL: none): the parameters' defaults, then what the template's defaults(gpu, p)
 * names (a Hopper default that takes the Hopper main loop, a large batch's kernel, say). On a template error *out is
 * the plain default. */
sptune_status sp_config_default_for(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_config *out);
/* An integer parameter's value in configuration c (-1 when absent or not an integer). */
long long sp_config_int(const sp_template *t, const sp_config *c, const char *name);
/* A parameter's value in configuration c as text (NULL when absent). */
const char *sp_config_text(const sp_template *t, const sp_config *c, const char *name);
/* The values extent expressions may name for configuration c on problem p: the dimensions and the
 * integer parameters (names valid while t lives). */
void sp_config_vars(const sp_template *t, const sp_config *c, const sp_problem *p, sp_vars *vars);
/* Scalar argument `name`'s declared size (gen/sp_args.h): typical (bound = 0) or bound. */
sptune_status sp_config_scalar_size(const sp_template *t, const sp_config *c, const sp_problem *p, const char *name,
                                    int bound, long long *out);
/* "bm=128,bn=64,..." in parameter order; malloc'd (NULL on exhaustion). */
char *sp_config_format(const sp_template *t, const sp_config *c);

/* "M=4096,N=4096,K=4096" or "4096x4096x4096" (declared order). Every dimension is required. */
sptune_status sp_problem_parse(const sp_template *t, const char *text, sp_problem *out);
/* "M=4096,N=4096,K=4096"; malloc'd. */
char *sp_problem_format(const sp_problem *p);
/* The value of the problem's dimension `name`: 1 and *v set, or 0 when the problem has none. */
int sp_problem_get(const sp_problem *p, const char *name, double *v);

/* Runs the template's constraints. *ok=1 if valid; else *ok=0 and *why (malloc'd, may be NULL
 * when why is NULL) says which constraint failed. problem may be NULL: problem-dependent
 * constraints then pass. A constraint that raises an error is SPTUNE_ERR_TEMPLATE. */
sptune_status sp_template_check(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                                const sp_problem *problem, int *ok, char **why);

/* Enumerates valid configurations in a fixed order (odometer over parameter values, the last
 * parameter changing fastest). cb may be NULL (count only); a non-zero return from cb stops the
 * walk (still SPTUNE_OK). *count gets the number of valid configurations visited. */
typedef int (*sp_space_cb)(const sp_config *c, void *ud);
sptune_status sp_template_space(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *problem,
                                sp_space_cb cb, void *ud, long long *count);
/* The same over the configurations whose first `fixed` parameters have the value indices prefix[0..fixed-1]
 * (a subtree of the walk: what sp_space_count_valid and sp_space_candidates sample). */
sptune_status sp_template_subspace(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *problem,
                                   const int *prefix, int fixed, sp_space_cb cb, void *ud, long long *count);

/* Renders configuration c (must be valid) for gpu and problem. problem may be NULL: then grid is
 * {0,0,0}. Deterministic: the same inputs give the same bytes. */
sptune_status sp_template_emit(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                               const sp_problem *problem, sp_kernel_src *out);

/* The kernels and their launch geometry only (no source): for a launch with fewer tokens than the
 * problem a kernel was rendered for. out->source stays NULL. */
sptune_status sp_template_geometry(sp_template *t, const sp_config *c, const sp_gpu_profile *gpu,
                                   const sp_problem *problem, sp_kernel_src *out);

#endif

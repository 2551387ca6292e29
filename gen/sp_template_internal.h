/* Internals shared by the gen/sp_template*.c files. */
#ifndef SP_TEMPLATE_INTERNAL_H
#define SP_TEMPLATE_INTERNAL_H

#include "sp_sandbox.h"
#include "sp_template.h"

#define SP_MAX_CONSTRAINTS 256
#define SP_MAX_OPTIONS 64

/* Fields of the template's internal table (registry, key &sp_template_key). Functions are copied
 * there at load time so that a template changing its own module table changes nothing. */
enum {
    SP_T_KERNEL = 1,      /* function or string */
    SP_T_LAUNCH = 2,      /* function */
    SP_T_EMIT = 3,        /* function */
    SP_T_OPTIONS = 4,     /* nil, function or list of strings */
    SP_T_CONSTRAINTS = 5, /* list of check functions */
    SP_T_VALUES = 6,      /* list (per parameter) of lists of Lua values */
    SP_T_NAMES = 7,       /* list of parameter names */
    SP_T_DEFAULTS = 8     /* nil or function(gpu): the GPU's default configuration */
};
extern const char sp_template_key;

struct sp_template {
    sp_sandbox sb;
    char *path;        /* "templates/dense/gemm.lua" */
    char *where;       /* for messages: the file it was read from (sp_tsource_display), else path */
    char *name, *family, *description;
    int nargs;
    sp_arg args[SP_MAX_ARGS];
    char *args_text;   /* the declarations as one line of text (sp_arg_describe, comma-separated) */
    char hash[65];
    int nparams;
    sp_param params[SP_MAX_PARAMS];
    int ndims;
    char dims[SP_MAX_DIMS][24];
    int dim_optional[SP_MAX_DIMS];   /* 1: the dimension may be left out of a problem and takes dim_default */
    double dim_default[SP_MAX_DIMS];
    double dim_min[SP_MAX_DIMS], dim_max[SP_MAX_DIMS]; /* a problem's value must lie in [min, max] */
    int dim_int[SP_MAX_DIMS];                          /* and be an integer */
    int dim_category[SP_MAX_DIMS];                     /* the value names a kind (ranges' category = true) */
    int dim_as_before[SP_MAX_DIMS];                    /* its default is the data before it existed (as_before) */
    int dim_across[SP_MAX_DIMS];                       /* how the tuner made the data, not the problem (across) */
    double dim_own[SP_MAX_DIMS];                       /* an across category's value for the caller's own data (own); NAN none */
    int tokens;        /* index of the dimension a launch may lower (the token count), -1 when none */
    int nconstraints;
    char **why;        /* nconstraints entries */
    sp_tfile *libs;    /* templates/lib files, read at load time (require() loads from here) */
    int nlibs;
};

/* What reading a template's module table needs (gen/sp_template_read.c). */
typedef struct load_ctx {
    sp_template *t;
    const char *src;
    size_t len;
    const char *stem;   /* the file stem when loaded from a file, else NULL */
    const char *folder; /* the folder (family) of the path, "" when unknown */
} load_ctx;
/* Runs the template's chunk (the load_ctx at index 1) and reads its module table into x->t; a protected
 * call of the sandbox (errors name the file and what is wrong). */
int sp_template_read_module(lua_State *L);

/* Checks that c is a configuration of t (SPTUNE_ERR_INVALID otherwise). */
sptune_status sp_config_validate(const sp_template *t, const sp_config *c);

#endif

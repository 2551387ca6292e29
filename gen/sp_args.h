/* A kernel's arguments, declared once by its template as data (templates/README.md, "Arguments"):
 * name, element type, role and, for pointers, the shape as extent expressions. From that one
 * declaration come the C signature the template emits (templates/lib/args.lua), the text `sptune
 * ops` prints, the tensor maps' argument indices, the harness's argument vector and what the
 * public API tells an application (count, types, which are workspaces and how large). */
#ifndef SP_ARGS_H
#define SP_ARGS_H

#include "sptune.h"
#include "sp_str.h"

#include <stddef.h>

#define SP_MAX_ARGS 32
#define SP_MAX_SHAPE 4

typedef enum sp_arg_type {
    SP_ARG_BF16, SP_ARG_F16,
    SP_ARG_X16,   /* 16-bit floats whose format (bf16 or fp16) a problem dimension chooses */
    SP_ARG_U8, SP_ARG_U32, SP_ARG_U64, SP_ARG_I32, SP_ARG_F32,
    SP_ARG__TYPES
} sp_arg_type;

typedef enum sp_arg_role {
    SP_ROLE_INPUT,      /* device pointer the kernel reads */
    SP_ROLE_OUTPUT,     /* device pointer the kernel writes */
    SP_ROLE_WORKSPACE,  /* device pointer to scratch the caller provides */
    SP_ROLE_DIM,        /* by value: the problem dimension of the same name */
    SP_ROLE_SCALAR,     /* by value: a number the caller chooses (a capacity, a count) */
    SP_ROLE__COUNT
} sp_arg_role;

typedef struct sp_arg {
    char name[32];               /* a C identifier */
    sp_arg_type type;
    sp_arg_role role;
    int nshape;                  /* pointers: 1 to SP_MAX_SHAPE extents; by-value arguments: 0 */
    char *shape[SP_MAX_SHAPE];   /* extent expressions, outermost first: "M", "cdiv(F, bn)", "slots + 1" */
    char *doc;                   /* "" when none */
    char *typical, *bound;       /* scalars: the value to pass for data like real models' and the one no
                                    data can exceed, as expressions of dimensions and integer parameters
                                    (workspace capacities); NULL when the template declares none */
} sp_arg;

const char *sp_arg_type_name(sp_arg_type t);  /* "bf16", "u32", ... */
size_t sp_arg_type_size(sp_arg_type t);        /* bytes of one element */
const char *sp_arg_role_name(sp_arg_role r);   /* "input", "output", "workspace", "dim", "scalar" */
int sp_arg_type_parse(const char *s, sp_arg_type *t);
int sp_arg_role_parse(const char *s, sp_arg_role *r);
static inline int sp_arg_is_pointer(const sp_arg *a) { return a->role <= SP_ROLE_WORKSPACE; }
void sp_arg_free(sp_arg *a);

/* Names and values an extent expression may use: the problem's dimensions, the configuration's
 * integer parameters, and the scalar arguments the caller chose. */
#define SP_MAX_VARS 64
typedef struct sp_vars {
    int n;
    const char *name[SP_MAX_VARS];
    double v[SP_MAX_VARS];
} sp_vars;
/* Adds (or replaces) a name; 0 when the table is full. */
int sp_vars_set(sp_vars *vs, const char *name, double v);

/* Extent expressions: non-negative integers, names, + - * / (integer division), parentheses and
 * the functions cdiv(a, b) (ceiling division), min(a, b), max(a, b); a name may stand for a negative
 * integer parameter (route=-1), which only min and max take as it is; "?" alone is an extent the
 * data sets (an overflow pool's length), which no problem determines. sp_expr_eval computes one
 * (SPTUNE_ERR_INVALID naming the expression on a syntax error, an unknown name, division by zero,
 * a non-integral or negative value, or overflow); sp_expr_check only parses it and checks that
 * every name is one of names (template load time). */
sptune_status sp_expr_eval(const char *expr, const sp_vars *vars, long long *out);
sptune_status sp_expr_check(const char *expr, const char *const *names, int nnames);

/* Elements a pointer argument spans (product of its extents); SPTUNE_ERR_INVALID for a by-value
 * argument or when an extent cannot be evaluated with vars. */
sptune_status sp_arg_elements(const sp_arg *a, const sp_vars *vars, long long *out);

/* "const bf16 *X (M x D)", "u64 pool_capacity", "u32 *packed (M x cdiv(F, bn) x (slots + 1), workspace: ...)":
 * the argument as `sptune ops` and the API describe it. */
void sp_arg_describe(const sp_arg *a, sp_buf *b);
/* The shape alone: "M x D" ("" for by-value arguments). */
void sp_arg_shape_text(const sp_arg *a, sp_buf *b);

#endif

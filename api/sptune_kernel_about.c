/* What a kernel object says about itself: its configuration, where it came from and the measurement behind it,
 * its arguments, workspace and launch geometry (the accessors of include/sptune.h). */
#include "sp_status.h"
#include "sptune_kernel_object.h"

#include <stddef.h>
#include <string.h>

const char *sptune_kernel_config(const sptune_kernel *k) { return k ? k->config : NULL; }
const char *sptune_kernel_signature(const sptune_kernel *k) { return k ? k->args : NULL; }

sptune_origin sptune_kernel_origin(const sptune_kernel *k, const char **detail)
{
    if (detail) *detail = k ? k->detail : "";
    return k ? k->origin : SPTUNE_ORIGIN_DEFAULT;
}

sptune_status sptune_kernel_expected(const sptune_kernel *k, double *ms, double *baseline_ms)
{
    if (!k) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_expected: no kernel");
    if (ms) *ms = k->ms;
    if (baseline_ms) *baseline_ms = k->baseline_ms;
    return SPTUNE_OK;
}

const char *sptune_kernel_recorded(const sptune_kernel *k, const char **gpu)
{
    const int any = k && k->recorded[0];
    if (gpu) *gpu = any ? k->recorded_gpu : NULL;
    return any ? k->recorded : NULL;
}

int sptune_kernel_arg_count(const sptune_kernel *k) { return k ? k->nargs : 0; }

sptune_status sptune_kernel_arg(const sptune_kernel *k, int index, sptune_arg *out)
{
    if (!k || !out || index < 0 || index >= k->nargs)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_arg: no argument %d (the kernel has %d)", index, k ? k->nargs : 0);
    const kernel_arg *x = &k->arg[index];
    const sptune_arg a = {.size = sizeof a, .name = x->decl.name, .type = sp_arg_type_name(x->decl.type),
                          .type_bytes = sp_arg_type_size(x->decl.type), .pointer = sp_arg_is_pointer(&x->decl),
                          .role = (sptune_arg_role)x->decl.role, .shape = x->shape_text, .doc = x->decl.doc,
                          .elements = x->elements, .elements_bound = x->elements_bound, .typical = x->typical,
                          .bound = x->bound};
    /* 0.5's fields (the first version with a size) at least */
    return sp_out_struct(out, &a, sizeof a, offsetof(sptune_arg, bound) + sizeof a.bound, "sptune_kernel_arg");
}

size_t sp_api_part_size(const kernel_arg *x, long long n)
{
    return ((size_t)(n > 0 ? n : 0) * sp_arg_type_size(x->decl.type) + 255) / 256 * 256;
}

size_t sp_api_part_bytes(const kernel_arg *x, int at_bound)
{
    return sp_api_part_size(x, at_bound ? x->elements_bound : x->elements);
}

/* The dense layer's chunks at least this many rows where the batch has them (M=3000, d_ff=14336 in the 28 MB of
 * twell-ffn's typical workspace: chunks of 512 rows, 0.91x the dense layer in one piece; docs/journal/2026-12-03.md). */
#define DENSE_ROWS 2048

sptune_status sptune_kernel_workspace(const sptune_kernel *k, int bound, size_t *bytes)
{
    if (!k || !bytes) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_workspace: missing argument");
    size_t total = 0;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        if (x->decl.role != SP_ROLE_WORKSPACE) continue;
        long long n = bound ? x->elements_bound : x->elements;
        if (n < 0)
            return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_workspace: the size of %s depends on the data "
                           "(its template declares no %s value for a capacity it needs)", x->decl.name,
                           bound ? "bound" : "typical");
        size_t b = sp_api_part_bytes(x, bound);
        if (total + b < total) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_workspace: too large");
        total += b;
    }
    /* the dense layer in the op's place: at least chunks of DENSE_ROWS rows (smaller ones slow its GEMMs down) */
    if (k->dense) {
        double M = -1, F = -1;
        sp_problem_get(&k->want, "M", &M);
        sp_problem_get(&k->want, "F", &F);
        const size_t dense = M > 0 && F > 0 ? sp_dense_ffn_bytes((long long)(M < DENSE_ROWS ? M : DENSE_ROWS), (int)F) : 0;
        if (dense > total) total = dense;
    }
    *bytes = total;
    return SPTUNE_OK;
}

int sptune_kernel_launches(const sptune_kernel *k) { return k ? k->src.nkernels : 0; }

sptune_status sptune_kernel_geometry(const sptune_kernel *k, int index, unsigned grid[3], unsigned block[3],
                                     unsigned *smem_bytes)
{
    if (!k || index < 0 || index >= k->src.nkernels)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_geometry: no kernel %d", index);
    const sp_kernel_stage *s = &k->src.stage[index];
    if (grid) memcpy(grid, s->grid, sizeof s->grid);
    if (block) memcpy(block, s->block, sizeof s->block);
    if (smem_bytes) *smem_bytes = s->smem;
    return SPTUNE_OK;
}

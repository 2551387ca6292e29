/* Launching a kernel of the public API: the token count checked (an empty batch launches nothing), the
 * geometry for fewer tokens than the problem's worked out by the template once, the workspace cut into
 * the op's workspace arguments, and the launch helpers per family. */
#include "sp_status.h"
#include "sptune_kernel_object.h"

#include <stdio.h>
#include <string.h>

/* The largest token count a launch may pass: the problem's (-1: the op has none). */
static long long max_tokens(const sptune_kernel *k) { return k->tokens_arg >= 0 ? k->arg[k->tokens_arg].dim : -1; }

/* The geometry of a launch with `tokens` tokens (fewer than the problem's): worked out by the template
 * at its first use and kept (the last GEO_MAX). */
static sptune_status geometry_at(sptune_kernel *k, long long tokens, geometry **out)
{
    for (int i = 0; i < k->ngeo; i++)
        if (k->geo[i].tokens == tokens) {
            *out = &k->geo[i];
            return SPTUNE_OK;
        }
    sptune_status st;
    if (!k->t) {
        if ((st = sp_template_load(k->op, &k->t)) != SPTUNE_OK) return st;
        if (strcmp(sp_template_hash(k->t), k->hash) != 0) {
            sp_template_free(k->t);
            k->t = NULL;
            return sp_fail(SPTUNE_ERR_INVALID, "%s: the templates changed since the kernel was got (get it again)", k->op);
        }
    }
    sp_problem p = k->want;
    p.v[k->tokens_dim] = (double)tokens;
    sp_kernel_src src;
    if ((st = sp_template_geometry(k->t, &k->cfg, &k->gpu, &p, &src)) != SPTUNE_OK) return st;
    if (src.nkernels != k->src.nkernels)
        return sp_fail(SPTUNE_ERR_TEMPLATE, "%s: %d kernels for %s=%lld, %d for the problem's", k->op, src.nkernels,
                       p.name[k->tokens_dim], tokens, k->src.nkernels);
    int slot = k->ngeo < GEO_MAX ? k->ngeo++ : k->geo_next;
    if (k->ngeo == GEO_MAX) k->geo_next = (slot + 1) % GEO_MAX;
    k->geo[slot].tokens = tokens;
    k->geo[slot].sized = 0;
    memcpy(k->geo[slot].stage, src.stage, sizeof src.stage);
    *out = &k->geo[slot];
    return SPTUNE_OK;
}

/* The geometry of `tokens` with its arguments' sizes (worked out once, only where a workspace is cut for it). The
 * source never sees the token count (the template emits one source for every batch), so the kernels index their
 * workspace by the launched count, and the sizes the template declares at that count are what such a launch touches. */
static sptune_status sized_at(sptune_kernel *k, long long tokens, const geometry **out)
{
    geometry *g = NULL;   /* set by geometry_at when it succeeds */
    sptune_status st = geometry_at(k, tokens, &g);
    if (st != SPTUNE_OK) return st;
    if (!g->sized) {
        sp_problem p = k->want;
        p.v[k->tokens_dim] = (double)tokens;
        sp_api_arg_sizes(k->t, &k->cfg, &p, g->scalar, g->elements);
        g->sized = 1;
    }
    *out = g;
    return SPTUNE_OK;
}

/* The workspace a launch of g's token count needs (bound: every capacity at its bound); 0 when a part's size
 * needs the data. */
static size_t total_at(const sptune_kernel *k, const geometry *g, int bound)
{
    size_t total = 0;
    for (int i = 0; i < k->nargs; i++) {
        if (k->arg[i].decl.role != SP_ROLE_WORKSPACE) continue;
        if (g->elements[bound][i] < 0) return 0;
        total += sp_api_part_size(&k->arg[i], g->elements[bound][i]);
    }
    return total;
}

/* The launch once the arguments are known to fit the kernel: tokens from 1 to the problem's, or -1 (a
 * kernel without a token count). Loads the module on first use. */
static sptune_status launch_checked(sptune_kernel *k, void *stream, void **args, long long tokens)
{
    sptune_status st;
    if (!k->loaded.module && (st = sp_kernel_load(&k->cubin, &k->src, &k->loaded)) != SPTUNE_OK) return st;
    if (tokens < 0 || tokens == max_tokens(k)) return sp_kernel_launch(&k->loaded, (CUstream)stream, args);
    geometry *g;
    if ((st = geometry_at(k, tokens, &g)) != SPTUNE_OK) return st;
    return sp_kernel_launch_stages(&k->loaded, g->stage, (CUstream)stream, args);
}

sptune_status sptune_kernel_launch(sptune_kernel *k, void *stream, void **args)
{
    if (!k || !args) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_launch: no kernel or no arguments");
    /* The source was rendered for the problem: its dimensions are fixed, but for the token count, which
     * may be anything from 1 to the problem's (the geometry and tensor maps follow it); a larger one
     * would leave rows uncomputed, another dimension would read past the inputs. */
    long long tokens = -1;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        if (x->decl.role != SP_ROLE_DIM || x->dim < 0) continue;
        if (!args[i])
            return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_launch: argument %d (%s) is missing", i, x->decl.name);
        long long v;
        if (x->decl.type == SP_ARG_I32) v = *(const int *)args[i];
        else if (x->decl.type == SP_ARG_U32) v = *(const unsigned *)args[i];
        else if (x->decl.type == SP_ARG_U64) v = (long long)*(const unsigned long long *)args[i];
        else continue;
        if (i == k->tokens_arg) {
            if (v == 0) tokens = 0; /* an empty batch: nothing to launch (the other arguments still checked) */
            else if (v < 1 || v > x->dim)
                return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_launch: %s=%lld, but the kernel serves %s from 1 to "
                               "%lld (the problem it was got for; get one for a larger %s)", x->decl.name, v,
                               x->decl.name, x->dim, x->decl.name);
            else tokens = v;
        } else if (v != x->dim) {
            return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_launch: %s=%lld, but the kernel was got for %s=%lld "
                           "(get one for this problem)", x->decl.name, v, x->decl.name, x->dim);
        }
    }
    if (tokens != 0 && k->dense) return sp_api_dense_launch_args(k, stream, tokens < 0 ? max_tokens(k) : tokens, args);
    return tokens == 0 ? SPTUNE_OK : launch_checked(k, stream, args, tokens);
}

/* Whether a workspace of `bytes` holds every capacity at its bound (else typical), and that it holds
 * the typical one at least. */
static sptune_status workspace_mode(const sptune_kernel *k, const char *fn, size_t bytes, int *at_bound)
{
    size_t typical = k->ws_total[0];
    if (typical == SIZE_MAX) return sptune_kernel_workspace(k, 0, &typical);   /* its error: why not */
    *at_bound = k->ws_total[1] != SIZE_MAX && bytes >= k->ws_total[1];
    if (bytes < typical)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the workspace has %zu bytes, the kernel needs %zu "
                       "(sptune_kernel_workspace)", fn, bytes, typical);
    return SPTUNE_OK;
}

sptune_status sptune_kernel_workspace_part(const sptune_kernel *k, const char *name, size_t workspace_bytes,
                                           size_t *offset, size_t *bytes)
{
    static const char fn[] = "sptune_kernel_workspace_part";
    if (!k || !name || !offset || !bytes) return sp_fail(SPTUNE_ERR_INVALID, "%s: missing argument", fn);
    int at_bound = 0;
    sptune_status st = workspace_mode(k, fn, workspace_bytes, &at_bound);
    if (st != SPTUNE_OK) return st;
    size_t at = 0;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        if (x->decl.role != SP_ROLE_WORKSPACE) continue;
        if (strcmp(x->decl.name, name) == 0) {
            *offset = at;
            *bytes = sp_api_part_bytes(x, at_bound);
            return SPTUNE_OK;
        }
        at += sp_api_part_bytes(x, at_bound);
    }
    return sp_fail(SPTUNE_ERR_NOT_FOUND, "%s: %s has no workspace argument '%s'", fn, k->op, name);
}

sptune_status sp_api_cut_workspace(sptune_kernel *k, const char *fn, long long *ntokens, unsigned long long workspace,
                                   size_t workspace_bytes, sp_api_cut *out)
{
    long long tokens = *ntokens;
    if (tokens > 0 && k->tokens_arg < 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %s has no token count to set (pass SPTUNE_ALL_TOKENS)", fn, k->op);
    if (tokens < SPTUNE_ALL_TOKENS || (k->tokens_arg >= 0 && tokens > max_tokens(k)))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %lld tokens, but the kernel serves 0 to %lld (SPTUNE_ALL_TOKENS: the "
                       "problem's)", fn, tokens, max_tokens(k));
    if (k->tokens_arg >= 0 && tokens == SPTUNE_ALL_TOKENS) tokens = max_tokens(k);
    *ntokens = tokens;
    int at_bound = 0;
    const geometry *cut = NULL;   /* a workspace for this batch alone: cut at its token count */
    sptune_status st = workspace_mode(k, fn, workspace_bytes, &at_bound);
    if (st != SPTUNE_OK && tokens > 0 && tokens < max_tokens(k)) {
        char why[512];
        snprintf(why, sizeof why, "%s", sptune_last_error());
        const geometry *g = NULL;
        size_t need = 0;
        if (sized_at(k, tokens, &g) == SPTUNE_OK && (need = total_at(k, g, 0)) > 0 && workspace_bytes >= need) {
            cut = g;
            const size_t bound = total_at(k, g, 1);
            at_bound = bound > 0 && workspace_bytes >= bound;
            st = SPTUNE_OK;
            sp_clear_error();
        } else {
            return sp_fail(st, "%s, or %zu for a batch of %lld (sptune_kernel_workspace_for)", why, need, tokens);
        }
    }
    if (st != SPTUNE_OK) return st;
    if (workspace_bytes > 0 && !workspace)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %zu bytes of workspace at address 0", fn, workspace_bytes);
    /* the parts are cut at 256-byte multiples of the base, and the kernels' vector accesses assume the
     * base is aligned as cudaMalloc aligns it */
    if (workspace_bytes > 0 && workspace % 256 != 0)
        return sp_fail(SPTUNE_ERR_INVALID, "%s: the workspace at 0x%llx is not 256-byte aligned (cudaMalloc's "
                       "allocations are)", fn, workspace);
    size_t offset = 0;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        out->ptr[i] = 0;
        out->num[i] = -1;
        if (x->decl.role == SP_ROLE_WORKSPACE) {
            out->ptr[i] = workspace + offset;
            offset += cut ? sp_api_part_size(x, cut->elements[at_bound][i]) : sp_api_part_bytes(x, at_bound);
        } else if (x->decl.role == SP_ROLE_SCALAR || x->decl.role == SP_ROLE_DIM) {
            /* a dimension: the problem's; a scalar: its declared size (at the batch's count when cut) */
            out->num[i] = x->decl.role == SP_ROLE_SCALAR ? (cut ? cut->scalar[at_bound][i] : at_bound ? x->bound : x->typical)
                          : i == k->tokens_arg ? tokens : x->dim;
        }
    }
    return SPTUNE_OK;
}

int sp_api_arg_named(const sptune_kernel *k, const char *name)
{
    for (int i = 0; i < k->nargs; i++)
        if (!strcmp(k->arg[i].decl.name, name)) return i;
    return -1;
}

sptune_status sptune_kernel_launch_ws(sptune_kernel *k, void *stream, long long tokens,
                                      const unsigned long long *tensors, unsigned long long workspace,
                                      size_t workspace_bytes)
{
    if (!k || !tensors) return sp_fail(SPTUNE_ERR_INVALID, "sptune_kernel_launch_ws: no kernel or no tensors");
    sp_api_cut cut;
    sptune_status st = sp_api_cut_workspace(k, "sptune_kernel_launch_ws", &tokens, workspace, workspace_bytes, &cut);
    if (st != SPTUNE_OK) return st;
    if (tokens == 0) return SPTUNE_OK; /* an empty batch (an expert that got no tokens): nothing to launch */
    if (k->dense) return sp_api_dense_launch(k, stream, tokens, tensors, workspace, workspace_bytes);
    unsigned long long ptr[SP_MAX_ARGS];
    long long num[SP_MAX_ARGS];
    int i32[SP_MAX_ARGS];
    void *args[SP_MAX_ARGS];
    int t = 0;
    for (int i = 0; i < k->nargs; i++) {
        const kernel_arg *x = &k->arg[i];
        switch (x->decl.role) {
        case SP_ROLE_INPUT:
        case SP_ROLE_OUTPUT:
            ptr[i] = tensors[t++];
            args[i] = &ptr[i];
            break;
        case SP_ROLE_WORKSPACE:
            ptr[i] = cut.ptr[i];
            args[i] = &ptr[i];
            break;
        default: {
            long long v = cut.num[i];
            if (x->decl.type != SP_ARG_I32 && x->decl.type != SP_ARG_U32 && x->decl.type != SP_ARG_U64) v = -1;
            if (v < 0)
                return sp_fail(SPTUNE_ERR_INVALID,
                               "sptune_kernel_launch_ws: no value for %s (use sptune_kernel_launch)", x->decl.name);
            num[i] = v;
            i32[i] = (int)v;
            args[i] = x->decl.type == SP_ARG_U64 ? (void *)&num[i] : (void *)&i32[i];
            if (x->decl.type == SP_ARG_U32) i32[i] = (int)(unsigned)v;
            break;
        }
        }
    }
    /* every dimension is the kernel's own and the token count was checked above */
    return launch_checked(k, stream, args, k->tokens_arg < 0 ? -1 : tokens);
}


sptune_status sptune_kernel_workspace_for(sptune_kernel *k, long long tokens, int bound, size_t *bytes)
{
    static const char fn[] = "sptune_kernel_workspace_for";
    if (!k || !bytes) return sp_fail(SPTUNE_ERR_INVALID, "%s: missing argument", fn);
    if (k->tokens_arg < 0 || tokens == SPTUNE_ALL_TOKENS || tokens == max_tokens(k))
        return sptune_kernel_workspace(k, bound, bytes);
    if (tokens < 1 || tokens > max_tokens(k))
        return sp_fail(SPTUNE_ERR_INVALID, "%s: %lld tokens, but the kernel serves 1 to %lld", fn, tokens, max_tokens(k));
    const geometry *g;
    sptune_status st = sized_at(k, tokens, &g);
    if (st != SPTUNE_OK) return st;
    const size_t total = total_at(k, g, bound ? 1 : 0);
    /* none: no workspace, or a part the data sizes (the whole problem's answer says which) */
    if (total == 0) return sptune_kernel_workspace(k, bound, bytes);
    *bytes = total;
    return SPTUNE_OK;
}

const char *sptune_kernel_tokens(const sptune_kernel *k, long long *max)
{
    if (max) *max = k ? max_tokens(k) : -1;
    return k && k->tokens_arg >= 0 ? k->arg[k->tokens_arg].decl.name : NULL;
}

/* ---- launch helpers per family ---- */

static sptune_status family_launch(sptune_kernel *k, const char *op, void *stream, long long tokens,
                                   const unsigned long long *tensors, int ntensors, unsigned long long workspace,
                                   size_t workspace_bytes)
{
    if (!k) return sp_fail(SPTUNE_ERR_INVALID, "sptune_%s: no kernel", op);
    if (strcmp(k->op, op) != 0)
        return sp_fail(SPTUNE_ERR_INVALID, "sptune_%s: the kernel is %s's, not %s's", op, k->op, op);
    if (k->ntensors != ntensors) /* the template's arguments and this helper disagree: a build of mismatched parts */
        return sp_fail(SPTUNE_ERR_TEMPLATE, "sptune_%s: the op declares %d tensors, the helper passes %d", op,
                       k->ntensors, ntensors);
    return sptune_kernel_launch_ws(k, stream, tokens, tensors, workspace, workspace_bytes);
}

sptune_status sptune_twell_ffn(sptune_kernel *k, void *stream, long long tokens, unsigned long long x,
                               unsigned long long w_gate, unsigned long long w_up, unsigned long long w_down,
                               unsigned long long y, unsigned long long workspace, size_t workspace_bytes)
{
    const unsigned long long t[] = {x, w_gate, w_up, w_down, y};
    return family_launch(k, "twell-ffn", stream, tokens, t, 5, workspace, workspace_bytes);
}

sptune_status sptune_gemm(sptune_kernel *k, void *stream, long long tokens, unsigned long long a, unsigned long long b,
                          unsigned long long c)
{
    const unsigned long long t[] = {a, b, c};
    return family_launch(k, "gemm", stream, tokens, t, 3, 0, 0);
}

sptune_status sptune_twell_d2t(sptune_kernel *k, void *stream, long long tokens, unsigned long long x,
                               unsigned long long w_gate, unsigned long long workspace, size_t workspace_bytes)
{
    const unsigned long long t[] = {x, w_gate};
    return family_launch(k, "twell-d2t", stream, tokens, t, 2, workspace, workspace_bytes);
}

sptune_status sptune_twell_t2d(sptune_kernel *k, void *stream, long long tokens, unsigned long long packed,
                               unsigned long long pool, unsigned long long w_down, unsigned long long y)
{
    const unsigned long long t[] = {packed, pool, w_down, y};
    return family_launch(k, "twell-t2d", stream, tokens, t, 4, 0, 0);
}

sptune_status sptune_twell_gated(sptune_kernel *k, void *stream, long long tokens, unsigned long long packed,
                                 unsigned long long pool, unsigned long long x, unsigned long long w_up,
                                 unsigned long long w_down, unsigned long long y)
{
    const unsigned long long t[] = {packed, pool, x, w_up, w_down, y};
    return family_launch(k, "twell-gated", stream, tokens, t, 6, 0, 0);
}

sptune_status sptune_slotfill_spmm(sptune_kernel *k, void *stream, long long tokens, unsigned long long w_image,
                                   unsigned long long x, unsigned long long y, unsigned long long workspace,
                                   size_t workspace_bytes)
{
    const unsigned long long t[] = {w_image, x, y};
    return family_launch(k, "slotfill-spmm", stream, tokens, t, 3, workspace, workspace_bytes);
}

sptune_status sptune_slotfill_apply(sptune_kernel *k, void *stream, long long tokens, const sptune_slotfill_gpu *w,
                                    unsigned long long x, unsigned long long y, unsigned long long workspace,
                                    size_t workspace_bytes)
{
    unsigned long long image = 0;
    sptune_status st = sp_api_slotfill_weights(k, w, "sptune_slotfill_apply", &image);
    return st != SPTUNE_OK ? st : sptune_slotfill_spmm(k, stream, tokens, image, x, y, workspace, workspace_bytes);
}

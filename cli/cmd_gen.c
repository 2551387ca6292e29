/* Commands that need no GPU: ops, space, gen, compile. */
#include "cli.h"
#include "sp_cache.h"
#include "sp_clock.h"
#include "sp_eval.h"
#include "sp_status.h"
#include "sp_str.h"
#include "sp_variant.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int cmd_ops(cli_cmd *cmd, int npos, char **pos)
{
    char **names = NULL;
    int n = 0, ordinal, rc;
    const char *g = cli_get(cmd, "gpu");
    sp_gpu_profile gpu;
    if (g && (rc = cli_gpu_target(cmd->name, g, 0, &gpu, &ordinal))) return rc;
    sptune_status st = sp_template_list(&names, &n);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    rc = CLI_OK;
    /* the defaults differ by GPU (a template's defaults(gpu) picks, say, Hopper's main loop): say which are shown */
    if (g) printf("(defaults: those for %s (%s), as 'sptune gen OP --gpu %s' renders them)\n", gpu.info.profile,
                  gpu.info.arch, g);
    else printf("(defaults: the templates' generic ones; a GPU may get others: 'sptune ops --gpu G' shows them)\n");
    for (int i = 0; i < n; i++) {
        sp_template *t;
        if ((st = sp_template_load(names[i], &t)) != SPTUNE_OK) {
            rc = cli_error(cmd->name, st);
            continue;
        }
        sp_config def;
        if (g && (st = sp_config_default_for(t, &gpu, NULL, &def)) != SPTUNE_OK) {
            rc = cli_error(cmd->name, st);
            sp_template_free(t);
            continue;
        }
        if (!g) sp_config_default(t, &def);
        printf("%s (%s): %s\n", sp_template_name(t), sp_template_family(t), sp_template_description(t));
        printf("  problem: ");
        for (int d = 0; d < sp_template_ndims(t); d++) {
            double v;
            printf("%s%s", d ? "," : "", sp_template_dim(t, d));
            if (sp_template_dim_default(t, d, &v)) printf("[=%g]", v);
        }
        printf("\n");
        if (sp_template_nargs(t) > 0) printf("  arguments (in launch order):\n");
        for (int a = 0; a < sp_template_nargs(t); a++) {
            const sp_arg *arg = sp_template_arg(t, a);
            sp_buf shape = {0}, line = {0};
            sp_arg_shape_text(arg, &shape);
            sp_buf_printf(&line, "    %-9s %-4s%s %-14s %-30s %s", sp_arg_role_name(arg->role), sp_arg_type_name(arg->type),
                          sp_arg_is_pointer(arg) ? "*" : " ", arg->name, shape.data ? shape.data : "", arg->doc);
            while (line.len > 0 && line.data[line.len - 1] == ' ') line.data[--line.len] = 0;
            printf("%s\n", line.data ? line.data : "");
            sp_buf_free(&shape);
            sp_buf_free(&line);
        }
        for (int p = 0; p < sp_template_nparams(t); p++) {
            const sp_param *pr = sp_template_param(t, p);
            printf("  %-10s {", pr->name);
            for (int v = 0; v < pr->nvalues; v++) printf("%s%s", v ? ", " : "", pr->values[v].text);
            printf("}  default %s  %s\n", pr->values[def.idx[p]].text, pr->doc ? pr->doc : "");
        }
        sp_template_free(t);
    }
    sp_strv_free(names);
    (void)npos; (void)pos;
    return rc;
}

/* One kernel's launch as a comment: geometry, and the tensor maps the launcher adds. */
static void print_launch(const char *what, const sp_kernel_stage *k)
{
    const sp_tmaps *tm = &k->tmaps;
    printf("/* %s %s: grid (%u, %u, %u), block (%u, %u, %u), %u bytes of dynamic shared memory */\n", what, k->kernel,
           k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->smem);
    for (int i = 0; i < tm->n; i++)
        printf("/*   + tensor map %d (parameter %d): argument %d, %llu x %llu bf16%s, boxes of %u x %u, %u-byte swizzle */\n",
               i, tm->nargs + i, tm->v[i].arg, tm->v[i].rows, tm->v[i].cols,
               tm->v[i].rows_arg >= 0 ? " (rows capped by a by-value argument)" : "", tm->v[i].box_rows,
               tm->v[i].box_cols, tm->v[i].swizzle);
}

/* What space, gen and compile start with: the target, the template and the optional --shape
 * (*p is NULL without it). On failure nothing is left to free. */
static int setup(cli_cmd *cmd, const char *op, sp_gpu_profile *gpu, sp_template **t, sp_problem *prob,
                 const sp_problem **p)
{
    int ordinal, rc;
    const char *shape = cli_get(cmd, "shape");
    *p = NULL;
    if ((rc = cli_gpu_target(cmd->name, cli_get(cmd, "gpu"), 0, gpu, &ordinal))) return rc;
    if ((rc = cli_load_template(cmd->name, op, t))) return rc;
    if (!shape) return CLI_OK;
    sptune_status st = sp_problem_parse(*t, shape, prob);
    if (st != SPTUNE_OK) {
        sp_template_free(*t);
        *t = NULL;
        return cli_error(cmd->name, st);
    }
    *p = prob;
    return CLI_OK;
}

typedef struct space_print {
    const sp_template *t;
    long long limit, printed;
} space_print;

/* Prints each valid configuration as the walk finds it; stops the walk at the limit. */
static int print_config(const sp_config *c, void *ud)
{
    space_print *sp = ud;
    if (sp->printed >= sp->limit) return 1;
    char *s = sp_config_format(sp->t, c);
    printf("%s\n", s ? s : "(out of memory)");
    free(s);
    return ++sp->printed >= sp->limit;
}

int cmd_space(cli_cmd *cmd, int npos, char **pos)
{
    sp_gpu_profile gpu;
    sp_template *t;
    sp_problem prob;
    const sp_problem *p;
    int rc;
    (void)npos;
    long long limit = cli_int(cmd, "limit", LLONG_MAX);
    if (limit < 0) return CLI_USAGE;
    if ((rc = setup(cmd, pos[0], &gpu, &t, &prob, &p))) return rc;
    long long n = 0;
    space_print sp = {t, limit, 0};
    /* listed as the walk goes (a --limit stops it there); --count walks it all where that takes seconds (or
       --exact), else estimates it from random subtrees */
    int count = cli_get(cmd, "count") != NULL, exact = cli_get(cmd, "exact") != NULL;
    if (exact && !count) {
        sp_template_free(t);
        return cli_usage_error(cmd->name, "--exact goes with --count");
    }
    sptune_status st = SPTUNE_OK;
    if (count && !exact && sp_space_raw(t) > SP_SPACE_LIST_MAX) {
        sp_space_count c;
        const double t0 = sp_now_s();
        if ((st = sp_space_count_valid(t, &gpu, p, 5.0, 1, &c)) == SPTUNE_OK)
            printf("%.0f (estimated: 95 %% interval %.3g to %.3g, from %lld of %.0f subtrees walked in %.0f s; the "
                   "space has %.3g combinations, too many to walk in seconds: --exact walks them all)\n", c.count, c.lo,
                   c.hi, c.samples, c.subtrees, sp_now_s() - t0, sp_space_raw(t));
    } else {
        st = limit == 0 && !count ? SPTUNE_OK : sp_template_space(t, &gpu, p, count ? NULL : print_config, &sp, &n);
        if (st == SPTUNE_OK && count) printf("%lld\n", n);
    }
    if (st != SPTUNE_OK) rc = cli_error(cmd->name, st);
    sp_template_free(t);
    return rc;
}

int cmd_gen(cli_cmd *cmd, int npos, char **pos)
{
    sp_gpu_profile gpu;
    sp_template *t;
    sp_problem prob;
    const sp_problem *p;
    sp_config c;
    int rc;
    (void)npos;
    if ((rc = setup(cmd, pos[0], &gpu, &t, &prob, &p))) return rc;
    if ((rc = cli_pick_config(cmd, t, &gpu, p, &c))) {
        sp_template_free(t);
        return rc;
    }
    sp_kernel_src k;
    sptune_status st = sp_template_emit(t, &c, &gpu, p, &k);
    if (st != SPTUNE_OK) { sp_template_free(t); return cli_error(cmd->name, st); }
    fputs(k.source, stdout);
    if (p) {
        /* How it is launched for this problem (a pipeline lists its kernels in order). */
        for (int i = 0; i < k.nkernels; i++) print_launch(i ? "then" : "launch", &k.stage[i]);
    }
    sp_kernel_src_free(&k);
    sp_template_free(t);
    return CLI_OK;
}

int cmd_compile(cli_cmd *cmd, int npos, char **pos)
{
    sp_gpu_profile gpu;
    sp_template *t;
    sp_problem prob;
    const sp_problem *p;
    int rc;
    (void)npos;
    long long sample = cli_int(cmd, "sample", 0), seed = cli_int(cmd, "seed", 1);
    if (sample < 0 || seed < 0) return CLI_USAGE;
    int all = cli_get(cmd, "all") != NULL, one = cli_get(cmd, "config") != NULL;
    if (all + one + (sample > 0) > 1) return cli_usage_error(cmd->name, "choose one of --config, --sample N, --all");
    if ((rc = setup(cmd, pos[0], &gpu, &t, &prob, &p))) return rc;
    sp_configs cs = {0};
    if (all || sample > 0) {
        rc = all ? cli_collect_space(cmd->name, t, &gpu, p, &cs)
                 : cli_draw_space(cmd->name, t, &gpu, p, sample, (unsigned long long)seed, &cs);
        if (rc) goto out;
    } else {
        sp_config c;
        if ((rc = cli_pick_config(cmd, t, &gpu, p, &c))) goto out;
        if (sp_configs_one(&cs, &c) != SPTUNE_OK) { rc = cli_error(cmd->name, SPTUNE_ERR_NOMEM); goto out; }
    }
    sp_cache *cache = NULL;
    sptune_status st = SPTUNE_OK;
    if (!cli_get(cmd, "no-cache") && (st = sp_cache_open(cli_get(cmd, "cache-dir"), &cache)) != SPTUNE_OK) {
        rc = cli_error(cmd->name, st);
        goto out;
    }
    printf("%-5s %-6s %5s %7s %6s %6s %6s  %s\n", "#", "result", "regs", "smem", "dyn", "stack", "spill", "configuration");
    int failed = 0;
    for (long long i = 0; i < cs.n; i++) {
        char *text = sp_config_format(t, &cs.v[i]);
        sp_kernel_src k;
        sp_cubin cub;
        int built = (st = sp_variant_build(t, &cs.v[i], &gpu, p, cache, &k, &cub)) == SPTUNE_OK;
        if (!built) {
            printf("%-5lld %-6s %s\n  %s\n", i + 1, "FAIL", text ? text : "?", sptune_last_error());
            failed++;
        } else {
            char dyn[16] = "-"; /* the launch geometry needs a problem (--shape) */
            if (p) snprintf(dyn, sizeof dyn, "%u", k.stage[0].smem);
            printf("%-5lld %-6s %5d %7d %6s %6d %6d  %s\n", i + 1, cub.from_cache ? "cached" : "ok",
                   cub.res.registers, cub.res.smem_static, dyn, cub.res.local_bytes,
                   cub.res.spill_stores + cub.res.spill_loads, text ? text : "?");
        }
        if (cli_get(cmd, "log") && cub.log && cub.log[0]) printf("%s%s", cub.log, cub.log[strlen(cub.log) - 1] == '\n' ? "" : "\n");
        fflush(stdout);
        sp_cubin_free(&cub);
        if (built) sp_kernel_src_free(&k);
        free(text);
    }
    printf("%lld variants for %s (%s): %lld compiled, %d failed\n", cs.n, gpu.info.profile, gpu.info.arch,
           cs.n - failed, failed);
    sp_cache_close(cache);
    rc = failed ? CLI_FAIL : CLI_OK;
out:
    sp_configs_free(&cs);
    sp_template_free(t);
    return rc;
}

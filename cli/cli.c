#include "cli.h"
#include "sp_measure.h"
#include "sp_prebuild.h"
#include "sp_status.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static cli_opt *find_opt(cli_cmd *cmd, const char *name, size_t len)
{
    for (cli_opt *o = cmd->opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

void cli_json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') fputs("\\n", stdout);
        else if (*p == '\t') fputs("\\t", stdout);
        else if (*p < 0x20 || *p == 0x7f) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

void cli_joules(double j, char *buf, size_t len)
{
    if (j > 0 && isfinite(j)) snprintf(buf, len, "%.4g", j);
    else snprintf(buf, len, "-");
}

void cli_json_num(double v, int digits)
{
    if (isfinite(v)) printf("%.*f", digits, v);
    else fputs("null", stdout);
}

void cli_json_key(const char *key, int first)
{
    if (!first) putchar(',');
    cli_json_str(key);
    putchar(':');
}

int cli_parse(cli_cmd *cmd, int argc, char **argv, int *npos, char **pos)
{
    *npos = 0;
    /* --help wins wherever it stands, also where an option's value was expected. */
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_help(cmd, stdout);
            return -1;
        }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (*npos >= cmd->max_pos)
                return cli_usage_error(cmd->name, "unexpected argument '%s'", a);
            pos[(*npos)++] = argv[i];
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = find_opt(cmd, name, len);
        if (!o) return cli_usage_error(cmd->name, "unknown option '--%.*s'", (int)len, name);
        if (!o->arg) {
            if (eq) return cli_usage_error(cmd->name, "--%s takes no value", o->name);
            o->value = "1";
        } else if (eq) {
            o->value = eq + 1;
        } else if (i + 1 < argc) {
            o->value = argv[++i];
        } else {
            return cli_usage_error(cmd->name, "--%s needs a value (%s)", o->name, o->arg);
        }
    }
    if (*npos < cmd->min_pos)
        return cli_usage_error(cmd->name, "missing argument: %s", cmd->args);
    return CLI_OK;
}

const char *cli_get(const cli_cmd *cmd, const char *name)
{
    for (const cli_opt *o = cmd->opts; o && o->name; o++)
        if (strcmp(o->name, name) == 0) return o->value;
    return NULL;
}

void cli_help(const cli_cmd *cmd, FILE *out)
{
    fprintf(out, "usage: sptune%s%s%s%s [options]\n\n%s\n", cmd->name[0] ? " " : "", cmd->name,
            cmd->args[0] ? " " : "", cmd->args, cmd->summary);
    if (cmd->details) fprintf(out, "\n%s\n", cmd->details);
    fprintf(out, "\noptions:\n");
    for (const cli_opt *o = cmd->opts; o && o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-22s %s\n", left, o->help);
    }
    fprintf(out, "  %-22s %s\n", "--help", "show this help");
}

int cli_error(const char *cmd, sptune_status st)
{
    fprintf(stderr, "sptune%s%s: %s\n", *cmd ? " " : "", cmd,
            sptune_last_error()[0] ? sptune_last_error() : sptune_status_name(st));
    return st == SPTUNE_ERR_NO_GPU ? CLI_NO_GPU : st == SPTUNE_ERR_INVALID ? CLI_USAGE : CLI_FAIL;
}

int cli_input_error(const char *cmd, sptune_status st)
{
    int rc = cli_error(cmd, st);
    return rc == CLI_FAIL && st != SPTUNE_ERR_NOMEM ? CLI_USAGE : rc;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "sptune%s%s: ", *cmd ? " " : "", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'sptune %s --help')\n", *cmd ? cmd : "--gpu auto");
    return CLI_USAGE;
}

long long cli_int(const cli_cmd *cmd, const char *name, long long def)
{
    const char *v = cli_get(cmd, name);
    if (!v) return def;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < 0) {
        cli_usage_error(cmd->name, "--%s wants a non-negative integer, got '%s'", name, v);
        return -1;
    }
    return x;
}

int cli_gpu_target(const char *cmd, const char *g, int timed, sp_gpu_profile *gpu, int *ordinal)
{
    sptune_status st;
    int count = 0;
    *ordinal = -1;
    if (!g) return cli_usage_error(cmd, "--gpu is required (auto, h100, h200, rtx-pro-6000 or sm_XX)");
    if (strcmp(g, "auto") == 0) {
        if ((st = sptune_gpu_count(&count)) != SPTUNE_OK) {
            /* commands that time kernels need the GPU itself; the others take a named target */
            fprintf(stderr, "sptune %s: --gpu auto: %s; %s\n", cmd, sptune_last_error(),
                    timed ? "timing needs a GPU (without one, 'sptune compile OP --gpu h100' builds the variants)"
                          : "name a target instead (--gpu h100, h200, rtx-pro-6000 or sm_XX)");
            return CLI_NO_GPU;
        }
        if ((st = sp_gpu_profile_device(0, gpu)) != SPTUNE_OK) { cli_error(cmd, st); return CLI_FAIL; }
        *ordinal = 0;
        return CLI_OK;
    }
    if ((st = sp_gpu_profile_named(g, gpu)) != SPTUNE_OK) {
        cli_error(cmd, st);
        return CLI_USAGE; /* an unknown or too old target is a usage error */
    }
    /* A device of that profile, if this machine has one. */
    if (sptune_gpu_count(&count) == SPTUNE_OK) {
        for (int i = 0; i < count; i++) {
            sp_gpu_profile dev;
            if (sp_gpu_profile_device(i, &dev) == SPTUNE_OK && strcmp(dev.info.profile, gpu->info.profile) == 0) {
                *gpu = dev;
                *ordinal = i;
                break;
            }
        }
    }
    sp_clear_error();
    return CLI_OK;
}

int cli_load_template(const char *cmd, const char *op, sp_template **t)
{
    sptune_status st = sp_template_load(op, t);
    if (st == SPTUNE_OK) return CLI_OK;
    int rc = cli_error(cmd, st);
    return st == SPTUNE_ERR_NOT_FOUND ? CLI_USAGE : rc; /* an unknown op is a usage error */
}

int cli_collect_space(const char *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                      sp_configs *out)
{
    if (sp_space_raw(t) > SP_SPACE_LIST_MAX)   /* minutes of walking, then millions of variants */
        return cli_usage_error(cmd, "--all: %s's parameters make %.3g combinations, too many to list (sptune space %s "
                               "--count estimates the valid ones); --sample N draws from them, sptune tune searches "
                               "them", sp_template_name(t), sp_space_raw(t), sp_template_name(t));
    sptune_status st = sp_space_collect(t, gpu, p, out);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd, st);
}

int cli_draw_space(const char *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                   unsigned long long seed, sp_configs *out)
{
    sptune_status st = sp_space_draw(t, gpu, p, n, seed, out);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd, st);
}

/* --config or the default, checked against the constraints. */
int cli_pick_config(cli_cmd *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_config *c)
{
    const char *text = cli_get(cmd, "config");
    sptune_status st = text ? sp_config_parse(t, text, c) : sp_config_default_for(t, gpu, p, c);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    int ok = 0;
    char *why = NULL;
    if ((st = sp_template_check(t, c, gpu, p, &ok, &why)) != SPTUNE_OK) return cli_error(cmd->name, st);
    if (!ok) {
        char *s = sp_config_format(t, c);
        fprintf(stderr, "sptune %s: configuration %s is not valid for %s: %s\n", cmd->name, s ? s : "?",
                gpu->info.profile, why ? why : "constraint failed");
        free(s);
        free(why);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_db_path(cli_cmd *cmd, char *buf, size_t len, const char **path)
{
    *path = cli_get(cmd, "db");
    if (*path) return CLI_OK;
    sptune_status st = sptune_default_db_path(buf, len);
    if (st != SPTUNE_OK) return cli_error(cmd->name, st);
    *path = buf;
    return CLI_OK;
}

int cli_open_db(cli_cmd *cmd, sp_db **db)
{
    char buf[4096];
    const char *p;
    int rc;
    sptune_status st;
    *db = NULL;
    if (cli_get(cmd, "no-db")) return CLI_OK;
    if ((rc = cli_db_path(cmd, buf, sizeof buf, &p))) return rc;
    if ((st = sp_db_open(p, 1, db)) != SPTUNE_OK) return cli_error(cmd->name, st);
    return CLI_OK;
}

int cli_open_bench(cli_cmd *cmd, int ordinal, sp_bench *b)
{
    sp_bench_opts o;
    sp_bench_opts_default(&o);
    long long runs = cli_int(cmd, "runs", 0);
    if (runs < 0) return CLI_USAGE;
    if (runs > 0) o.min_runs = o.max_runs = (int)runs;
    sptune_status st = sp_bench_open(ordinal, &o, b);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd->name, st);
}

int cli_open_measurement(cli_cmd *cmd, const char *op, const sp_gpu_profile *gpu, int ordinal, sp_db **db,
                         sp_cache **cache, sp_bench *b)
{
    int rc;
    sptune_status st;
    if (ordinal < 0) {
        fprintf(stderr, "sptune %s: no %s GPU on this machine; without it only 'sptune compile %s --gpu %s' runs\n",
                cmd->name, gpu->info.profile, op, gpu->info.profile);
        return CLI_NO_GPU;
    }
    if ((rc = cli_open_db(cmd, db))) return rc;
    if ((st = sp_cache_open(cli_get(cmd, "cache-dir"), cache)) != SPTUNE_OK) return cli_error(cmd->name, st);
    return b ? cli_open_bench(cmd, ordinal, b) : CLI_OK;
}

int cli_gpu_run_opts(cli_cmd *cmd, cli_gpu_run *g)
{
    memset(g, 0, sizeof *g);
    g->ordinal = -1;
    long long runs = cli_int(cmd, "runs", 0), timeout = cli_int(cmd, "timeout", 120);
    long long jobs = cli_int(cmd, "jobs", sp_prebuild_default_jobs());
    if (runs < 0 || timeout < 0 || jobs < 0) return CLI_USAGE;
    if (runs > 100000) return cli_usage_error(cmd->name, "--runs %lld is more than 100000", runs);
    if (timeout < 1 || timeout > 86400) return cli_usage_error(cmd->name, "--timeout wants 1 to 86400 seconds");
    if (jobs > 32) return cli_usage_error(cmd->name, "--jobs %lld is more than 32", jobs);
    g->runs = (int)runs;
    g->timeout_s = (double)timeout;
    g->jobs = (int)jobs;
    sptune_status st = sp_measure_self(g->exe, sizeof g->exe);
    return st == SPTUNE_OK ? CLI_OK : cli_error(cmd->name, st);
}

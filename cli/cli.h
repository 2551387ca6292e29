/* The command layer: option parsing and the pieces several commands share. Exit codes:
 * 0 done, 1 failed, 2 usage error, 3 no GPU where one is needed. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include "sp_gpu.h"
#include "sp_bench.h"
#include "sp_cache.h"
#include "sp_db.h"
#include "sp_space.h"
#include "sp_tune.h"
#include "sp_template.h"
#include "sptune.h"
#include <stdio.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_NO_GPU = 3 };

typedef struct cli_opt {
    const char *name;   /* "gpu" for --gpu */
    const char *arg;    /* NULL for a flag, else the argument's name for help ("G") */
    const char *help;
    const char *value;  /* filled by cli_parse: the argument, or "1" for a flag; NULL if absent */
} cli_opt;

typedef struct cli_cmd {
    const char *name;
    const char *args;     /* positional arguments for the usage line, "" if none */
    const char *summary;
    const char *details;  /* extra help text, may be NULL */
    int min_pos, max_pos;
    cli_opt *opts;        /* terminated by {NULL} */
    int (*run)(struct cli_cmd *cmd, int npos, char **pos);
} cli_cmd;

/* Parses argv (after the command name) into cmd->opts and positional arguments (pos gets at most
 * argc entries). Prints the error and returns CLI_USAGE on bad input, -1 for --help (printed). */
int cli_parse(cli_cmd *cmd, int argc, char **argv, int *npos, char **pos);
const char *cli_get(const cli_cmd *cmd, const char *name);
void cli_help(const cli_cmd *cmd, FILE *out);
/* "sptune CMD: <message>" on stderr and the exit code for a status. */
int cli_error(const char *cmd, sptune_status st);
/* The same for an input the user named (a file to read, a database to look at) that cannot be used: missing,
 * unreadable, malformed, not what it should be. Exit 2 as for any input that is wrong (1 stays for work that
 * failed: a variant, a write, a database while recording); 3 for no GPU. */
int cli_input_error(const char *cmd, sptune_status st);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Non-negative integer option (default when absent); -1 after printing an error. */
long long cli_int(const cli_cmd *cmd, const char *name, long long def);

/* --gpu G for commands that need only a profile: auto (device 0), h100, h200, rtx-pro-6000,
 * sm_XX. *ordinal is the device that matches (or -1 when the target is not present here). timed: the
 * command measures kernels (--gpu auto without a GPU then says timing needs one, not to name a target). */
int cli_gpu_target(const char *cmd, const char *g, int timed, sp_gpu_profile *gpu, int *ordinal);
int cli_load_template(const char *cmd, const char *op, sp_template **t);
/* --config (or the template's default) parsed and checked against the constraints for gpu and
 * problem p (may be NULL); an invalid one is a usage error naming the failed constraint. */
int cli_pick_config(cli_cmd *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_config *c);

/* The valid space (sp_space_collect) with its error printed. */
int cli_collect_space(const char *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                      sp_configs *out);
/* n of them drawn without listing them all (sp_space_draw), with its error printed. */
int cli_draw_space(const char *cmd, sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                   unsigned long long seed, sp_configs *out);

/* --db, else the default database's path (written into buf). */
int cli_db_path(cli_cmd *cmd, char *buf, size_t len, const char **path);
/* The database (--db, --no-db, or the default path) and the bench (--runs) for GPU commands. */
int cli_open_db(cli_cmd *cmd, sp_db **db);
int cli_open_bench(cli_cmd *cmd, int ordinal, sp_bench *b);
/* For commands that measure: exit 3 with the message when the target GPU is absent (ordinal < 0),
 * else the database, the kernel cache and, when b is not NULL, the bench in this process (the
 * caller closes what was opened). */
int cli_open_measurement(cli_cmd *cmd, const char *op, const sp_gpu_profile *gpu, int ordinal, sp_db **db,
                         sp_cache **cache, sp_bench *b);

/* Measuring in worker processes (tune and the main job): the device, --runs, --timeout (seconds
 * one evaluation may take before its worker is killed) and --jobs (parallel compilers).
 * cli_gpu_run_opts reads the options (usage errors come before looking for a GPU); the caller
 * then sets gpu and ordinal. */
typedef struct cli_gpu_run {
    sp_gpu_profile gpu;
    int ordinal;
    int runs;
    double timeout_s;
    int jobs;
    char exe[4096];       /* this program, executed again as the worker */
    const char *data, *data_names; /* tune --data: the layer's own tensors (NULL: drawn data) */
    int from_default;     /* tune --start default: the search ignores what is served now (shipped results too) */
} cli_gpu_run;
int cli_gpu_run_opts(cli_cmd *cmd, cli_gpu_run *g);

/* One problem tuned on a GPU: the space for its GPU, the cuBLAS baseline, the search within
 * opts' budget (every result recorded in db), and the top three re-measured in alternating order. */
typedef struct cli_tuned {
    sp_configs space;
    sp_tune_result r;
    double baseline_ms, best_ms;
    double baseline_energy_j, best_energy_j; /* joules per call; <= 0 not measured */
    sp_objective objective;
    long long best;       /* index into space, -1 when nothing passed */
    char *best_text;
    int skipped;          /* not tuned: the main job's budget was spent before it */
} cli_tuned;
int cli_tune_problem(const char *cmd, const cli_gpu_run *g, sp_template *t, const sp_problem *p, sp_db *db,
                     sp_cache *cache, const sp_tune_opts *opts, int quiet, cli_tuned *out);
void cli_tuned_free(cli_tuned *x);
long long cli_tuned_failed(const cli_tuned *x);
/* JSON output: a string quoted and escaped (quotes, backslashes, control characters), and a number
 * (null when it is not finite: JSON has no NaN or infinity); "key": before either with cli_json_key. */
void cli_json_str(const char *s);
void cli_json_num(double v, int digits);
/* Joules per call for a table ("0.0123"; "-" when not measured). */
void cli_joules(double j, char *buf, size_t len);
void cli_json_key(const char *key, int first);
/* One line of JSON per problem (JSON Lines: several GPUs' coordinators each print theirs). */
void cli_print_tuned_json(const char *gpu, const char *op, const char *problem, const char *strategy,
                          const cli_tuned *tu);
void cli_print_tuned_header(void);
void cli_print_tuned(const char *gpu, const char *op, const char *problem, const cli_tuned *x);

int cmd_info(cli_cmd *cmd, int npos, char **pos);
int cmd_ops(cli_cmd *cmd, int npos, char **pos);
int cmd_space(cli_cmd *cmd, int npos, char **pos);
int cmd_gen(cli_cmd *cmd, int npos, char **pos);
int cmd_compile(cli_cmd *cmd, int npos, char **pos);
int cmd_check(cli_cmd *cmd, int npos, char **pos);
int cmd_tune(cli_cmd *cmd, int npos, char **pos);
int cmd_db(cli_cmd *cmd, int npos, char **pos);
int cmd_auto(cli_cmd *cmd, int npos, char **pos);
int cmd_best(cli_cmd *cmd, int npos, char **pos);
int cmd_encode(cli_cmd *cmd, int npos, char **pos);

/* best and tune: with --data FILE (and --tensors, --tokens, --order), *shape becomes op's problem measured from the
 * user's tensors (into buf, said on stdout unless quiet): a TwELL layer's calibration batch (full: the up and down
 * weights read and checked too), or Slot-Filling weights. --data with --shape, or --tensors/--tokens/--order without
 * --data, is a usage error. A CLI exit code (CLI_OK, or the error already printed). */
int cli_data_shape(const cli_cmd *cmd, const char *op, int full, int quiet, const char **shape, char *buf, size_t len);

#endif

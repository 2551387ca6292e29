/* sptune: the command line, a thin layer over libsptune. */
#include "cli.h"
#include "sp_measure.h"

#include <string.h>

static cli_opt info_opts[] = {
    {"db", "PATH", "database to report (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"cache-dir", "DIR", "kernel cache to report (default: $SPTUNE_CACHE_DIR or the XDG cache folder)", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt ops_opts[] = {
    {"gpu", "G", "show the defaults this target gets (auto, h100, h200, rtx-pro-6000 or sm_XX), as gen and compile "
                 "take them without --config; without it, the templates' generic defaults", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt space_opts[] = {
    {"gpu", "G", "target: auto, h100, h200, rtx-pro-6000 or sm_XX (required)", NULL},
    {"count", NULL, "print only the number of valid configurations (estimated, with its interval, where the space is too large to walk in seconds)", NULL},
    {"exact", NULL, "with --count: walk the whole space, however long it takes", NULL},
    {"shape", "S", "problem (M=..,N=..,K=.. or MxNxK): also apply problem-dependent constraints", NULL},
    {"limit", "N", "print at most N configurations", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt gen_opts[] = {
    {"gpu", "G", "target: auto, h100, h200, rtx-pro-6000 or sm_XX (required)", NULL},
    {"config", "K=V,...", "parameter values (others take their default)", NULL},
    {"shape", "S", "problem the kernel is rendered for (optional)", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt compile_opts[] = {
    {"gpu", "G", "target: auto, h100, h200, rtx-pro-6000 or sm_XX (required)", NULL},
    {"config", "K=V,...", "compile this configuration (default: the template's default)", NULL},
    {"sample", "N", "compile N configurations of the valid space (seeded random choice)", NULL},
    {"all", NULL, "compile every valid configuration (where the space is small enough to list)", NULL},
    {"seed", "S", "seed for --sample (default 1)", NULL},
    {"shape", "S", "problem, for problem-dependent constraints (optional)", NULL},
    {"cache-dir", "DIR", "kernel cache folder (default: $SPTUNE_CACHE_DIR or the XDG cache folder)", NULL},
    {"no-cache", NULL, "always compile, store nothing", NULL},
    {"log", NULL, "print each variant's NVRTC/ptxas log", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt check_opts[] = {
    {"gpu", "G", "GPU: auto or a profile present on this machine (required)", NULL},
    {"shape", "S[;S...]", "problem, e.g. M=4096,N=4096,K=4096 (required); several, separated by ;, are measured in turn", NULL},
    {"config", "K=V,...[;...]", "check only these configurations (those not valid for a problem are skipped)", NULL},
    {"sample", "N", "check N configurations of the valid space (default 16)", NULL},
    {"all", NULL, "check every valid configuration (where the space is small enough to list)", NULL},
    {"seed", "S", "seed for --sample (default 1)", NULL},
    {"runs", "N", "timed runs per variant (default: 20..200, until 200 ms)", NULL},
    {"timeout", "SECONDS", "longest the baseline or one variant may take (compile, verify, time) before the command "
                           "stops, saying which (default 120)", NULL},
    {"db", "PATH", "record results here (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"no-db", NULL, "record nothing", NULL},
    {"cache-dir", "DIR", "kernel cache folder", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt tune_opts[] = {
    {"shape", "S", "problem, e.g. M=4096,N=4096,K=4096 (required but with --data)", NULL},
    {"data", "FILE", "tune on the user's own tensors instead of drawn data (a safetensors file): twell-ffn, a "
                     "calibration batch X (M tokens x D) and the gate, up and down weights (F x D; down also D x F as "
                     "nn.Linear keeps it), bf16; slotfill-spmm, the pruned weights (M x K); the problem is measured "
                     "from them and every variant verified and timed on them", NULL},
    {"tensors", "ROLE=NAME,...", "--data: the tensors' names in the file (twell-ffn: x, gate, up, down, default x, "
                                 "w_gate, w_up, w_down; slotfill-spmm: w, default weight)", NULL},
    {"tokens", "N", "--data with slotfill-spmm: the batch to tune for (default 16)", NULL},
    {"order", "0|1", "--data: 1 to tune the layer with its neurons laid out by sptune_twell_hot_order (default 0)", NULL},
    {"gpu", "G", "GPU: auto (default) or a profile present on this machine", NULL},
    {"strategy", "NAME", "exhaustive, random or descent (default: descent)", NULL},
    {"start", "FROM", "where the search starts: served (default: what the runtime API serves now, shipped results "
                      "included, measured first) or default (the template's default alone: what the search finds on "
                      "its own, as on a GPU nothing was measured on)", NULL},
    {"objective", "NAME", "what the search minimizes: time (default), energy (joules per call, NVML) or edp (their product); the runtime API serves the fastest", NULL},
    {"budget", "B", "stop after a time (15m, 90s, 2h) or a number of new measurements (300evals)", NULL},
    {"seed", "S", "seed of the strategy (default 1)", NULL},
    {"resume", NULL, "take results already recorded from the database (the default)", NULL},
    {"no-resume", NULL, "measure everything again", NULL},
    {"timeout", "SECONDS", "longest one variant may take (compile, verify, time) before its worker is killed (default 120)", NULL},
    {"jobs", "N", "parallel compilers building variants ahead of measurement (default: CPUs less one; 0: none)", NULL},
    {"runs", "N", "timed runs per variant (default: 20..200, until 200 ms)", NULL},
    {"db", "PATH", "record results here (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"no-db", NULL, "record nothing (and resume nothing)", NULL},
    {"cache-dir", "DIR", "kernel cache folder", NULL},
    {"quiet", NULL, "no progress, only the final table", NULL},
    {"json", NULL, "a JSON summary instead of the table", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt best_opts[] = {
    {"shape", "S", "problem, e.g. M=16384,D=2048,F=5632,nnz=40 (required but with --data)", NULL},
    {"data", "FILE", "the problem measured from the user's own tensors instead (a safetensors file): TwELL ops, a "
                     "calibration batch X (tokens x D) and the gate weights Wg (F x D), the gate relu(X Wg^T) computed "
                     "on this machine's CPUs; slotfill-spmm, the pruned weights (M x K, bf16 or fp16), encoded", NULL},
    {"tensors", "ROLE=NAME,...", "--data: the tensors' names in the file (TwELL: x=x,gate=w_gate; Slot-Filling: "
                                 "w=weight)", NULL},
    {"tokens", "M", "--data: the largest batch the kernel serves (default: TwELL, the calibration batch's tokens; "
                    "Slot-Filling, 16)", NULL},
    {"order", "0|1", "--data: 1 when the weights are laid out by sptune_twell_hot_order (default 0)", NULL},
    {"gpu", "G", "GPU profile (h100, h200, rtx-pro-6000, sm_XX) or auto (default: auto, device 0)", NULL},
    {"db", "PATH", "results to consult (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"no-db", NULL, "leave out the user's results", NULL},
    {"no-shipped", NULL, "leave out the results shipped with sptune", NULL},
    {"fixed", "K=V,...", "parameters the configuration must take (what the data was prepared for)", NULL},
    {"cache-dir", "DIR", "kernel cache folder", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt db_opts[] = {
    {"db", "PATH", "the database (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"limit", "N", "show: passing results listed per problem, fastest first (default 3)", NULL},
    {"t4", NULL, "export/import Kernel Tuner's T4 results JSON (one op, problem and GPU: --op, --shape, --gpu)", NULL},
    {"op", "OP", "--t4: the op", NULL},
    {"shape", "PROBLEM", "--t4: the problem", NULL},
    {"gpu", "PROFILE", "--t4: the GPU profile (h200, ...)", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_opt auto_opts[] = {
    {"gpu", "G", "auto or all (every GPU found), or a target: h100, h200, rtx-pro-6000, sm_XX", NULL},
    {"budget", "B", "for the whole run: a time (15m, 90s, 2h) or new measurements (300evals), shared over the problems", NULL},
    {"sample", "N", "without --budget: new measurements per problem (default 12), the whole run within 14 minutes", NULL},
    {"strategy", "NAME", "exhaustive, random or descent (default: descent)", NULL},
    {"objective", "NAME", "what the search minimizes: time (default), energy (joules per call, NVML) or edp (their product); the runtime API serves the fastest", NULL},
    {"workload", "FILE", "problems to tune instead of the built-in list (lines: OP PROBLEM [note])", NULL},
    {"shard", "I/N", "tune only problems I, I+N, I+2N, ... of the list (for N machines)", NULL},
    {"dry-run", NULL, "print the problems the run would tune (after --workload and --shard), one 'OP PROBLEM' a line, "
                      "and stop: no GPU needed", NULL},
    {"seed", "S", "seed of the variant choice (default 1)", NULL},
    {"timeout", "SECONDS", "longest one variant may take (compile, verify, time) before its worker is killed (default 120)", NULL},
    {"jobs", "N", "parallel compilers building variants ahead of measurement (default: CPUs less one; 0: none)", NULL},
    {"runs", "N", "timed runs per variant (default: 20..200, until 200 ms)", NULL},
    {"db", "PATH", "record results here (default: $SPTUNE_DB or the XDG data folder)", NULL},
    {"no-db", NULL, "record nothing", NULL},
    {"cache-dir", "DIR", "kernel cache folder", NULL},
    {"quiet", NULL, "print only the final table", NULL},
    {"json", NULL, "instead of the table, one JSON object per problem and line (as 'tune --json')", NULL},
    {NULL, NULL, NULL, NULL}};

static cli_opt encode_opts[] = {
    {"out", "FILE", "where the encoded matrix goes (required)", NULL},
    {"tensor", "NAME", "the tensor to read from a safetensors checkpoint (e.g. model.layers.0.mlp.up_proj.weight)", NULL},
    {"shape", "RxC", "rows x columns of a raw file (a check for .npy and safetensors)", NULL},
    {"dtype", "T", "bf16 or fp16: the elements of a raw file or of a 2-byte .npy (a check otherwise)", NULL},
    {"config", "K=V,...", "a slotfill-spmm configuration whose encoding to use (window, dbits, fill, decode; "
                          "default: sp24 for weights pruned 2:4, else the template's default, bitmap; "
                          "sptune best shows the tuned one)", NULL},
    {"no-verify", NULL, "skip decoding the result back and comparing it with the input", NULL},
    {"json", NULL, "print a JSON summary", NULL},
    {NULL, NULL, NULL, NULL}};
static cli_cmd commands[] = {
    {"info", "", "Show the GPUs, driver, NVRTC, database and kernel cache of this machine.",
     "Without an NVIDIA GPU or driver it prints what needs none (version, NVRTC, paths), then one line\n"
     "saying why no GPU was found, and exits 3.", 0, 0, info_opts, cmd_info},
    {"ops", "", "List the kernel families (ops) and their tuning parameters.",
     "Each parameter's default is the template's generic one; a GPU may get another (its main loop, tiles):\n"
     "--gpu G shows the defaults G gets, the configuration 'sptune gen OP --gpu G' renders.", 0, 0, ops_opts, cmd_ops},
    {"space", "OP", "List (or count) the valid configurations of OP for a GPU.", NULL, 1, 1, space_opts, cmd_space},
    {"gen", "OP", "Print the CUDA C of one configuration of OP.", NULL, 1, 1, gen_opts, cmd_gen},
    {"compile", "OP", "Compile configurations of OP with NVRTC and report their resources.",
     "Columns: regs per thread, static shared memory, dynamic shared memory (bytes), stack frame and spill bytes.",
     1, 1, compile_opts, cmd_compile},
    {"check", "OP", "Verify configurations of OP against the reference on this machine's GPU, time them "
                    "against the baseline (cuBLAS) in the same run, and record them.",
     "Variants run in this process: one that never ends (--timeout) stops the command with a message naming it,\n"
     "the results before it recorded (sptune tune runs them in a worker it replaces instead).\n"
     "Exits 3 when the GPU is not present, 1 when any variant failed, 4 when one ran past --timeout.", 1, 1,
     check_opts, cmd_check},
    {"tune", "OP", "Search the valid space of OP for one problem on this machine's GPU within a budget, "
                   "recording every result; rerunning the same command resumes.",
     "Every variant is verified before it is timed; failures are recorded with their outcome and never win.\n"
     "Variants run in a worker process: one that faults or hangs (--timeout) is recorded and its worker\n"
     "replaced. Variants are compiled ahead in parallel (--jobs) while others are measured.\n"
     "The fastest few are re-measured in alternating order before the winner is printed (--objective time).\n"
     "Joules per call are measured through NVML where the GPU reports them (back-to-back runs for ~400 ms:\n"
     "the counter's steps; SPTUNE_ENERGY_MS sets it, 0 skips energy); with --objective time only for a variant\n"
     "as fast as every one timed before it, within 2%, and for the best few re-measured (the window is most\n"
     "of a measurement).\n"
     "Exits 3 when the GPU is not present, 1 when no variant passed.", 1, 1, tune_opts, cmd_tune},
    {"best", "OP", "Show the kernel the runtime API serves an application for a problem: its configuration, "
                   "where it came from (exact, nearest recorded problem, default) and its launches.",
     "The same lookup as sptune_kernel_get() in include/sptune.h; the kernel is compiled (through the cache).",
     1, 1, best_opts, cmd_best},
    {"encode", "INPUT", "Encode a pruned weight matrix (zeros are the pruned weights) in the Slot-Filling layers "
                        "for slotfill-spmm and write it as a checked file an application loads "
                        "(sptune_slotfill_read).",
     "INPUT: a safetensors checkpoint (with --tensor), a .npy file (2-D, C order, <f2 or 2-byte with --dtype), or\n"
     "raw little-endian 16-bit floats (with --shape and --dtype). W is rows = output features x columns = input\n"
     "features, as nn.Linear stores it. Prints where the nonzeros went and the bytes of each layer against dense.",
     1, 1, encode_opts, cmd_encode},
    {"db", "ACTION [FILE]", "Tuning databases: info; show (results per op and problem, fastest first, stale ones "
                            "marked); verify (integrity, and every result still valid for the local templates); "
                            "export [FILE|-] (reviewable text, or --t4 JSON); import FILE|- (or --t4 FILE); "
                            "merge OTHER.db.",
     "Imported and merged results are checked against the local templates (op, problem, configuration, GPU\n"
     "profile) and rejected otherwise; a malformed file is refused whole. A result never replaces a newer one\n"
     "for the same environment, template version, problem and configuration; the report counts what is new.\n"
     "Before anything is tuned here (no database at the default path), info, show, verify and export look at\n"
     "the results shipped with sptune, which are what the runtime serves until then.", 1, 2, db_opts, cmd_db},
};
static cli_cmd main_job = {
    "", "--gpu G", "Tune the default workload on every GPU found (--gpu auto) and print the best variant per "
                 "problem against cuBLAS; with a named target that is absent, generate and compile only.",
    "Every result is recorded as it is measured; rerunning the same command resumes (recorded results\n"
    "cost no budget). Exits 3 with one line when --gpu auto finds no GPU, 1 when a problem has no passing\n"
    "variant or a variant computed a wrong result.", 0, 0, auto_opts, cmd_auto};

static void usage(FILE *out)
{
    fprintf(out, "usage: sptune --gpu auto|all|h100|h200|rtx-pro-6000|sm_XX [options]   tune the default workload\n"
                 "       sptune COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'sptune COMMAND --help' and 'sptune --gpu auto --help' describe the options.\n"
                 "Environment: SPTUNE_DB, SPTUNE_CACHE_DIR, SPTUNE_TEMPLATES (a templates folder to use instead of the built-in one).\n"
                 "Exit status: 0 done; 1 the work failed (a variant, a write, the database while recording); 2 the input is\n"
                 "wrong (an option, a value, or a named file missing, unreadable or malformed); 3 no GPU where one is needed.\n");
}

static int run(cli_cmd *cmd, int argc, char **argv)
{
    char *pos[8];
    int npos = 0;
    int rc = cli_parse(cmd, argc, argv, &npos, pos);
    if (rc < 0) return CLI_OK; /* --help */
    if (rc != CLI_OK) return rc;
    return cmd->run(cmd, npos, pos);
}

int main(int argc, char **argv)
{
    /* progress (one line per variant, problem or op) reaches a pipe or a log as it happens */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "--version") == 0 || strcmp(a, "version") == 0) {
        printf("sptune %s\n", sptune_version());
        return CLI_OK;
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 || strcmp(a, "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strncmp(a, "--", 2) == 0) return run(&main_job, argc - 1, argv + 1);
    /* Internal: the measurement worker that tune and the main job start (tuner/sp_measure.h). */
    if (strcmp(a, "__worker") == 0) return sp_measure_main(argc - 2, argv + 2);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(a, commands[i].name) == 0) return run(&commands[i], argc - 2, argv + 2);
    fprintf(stderr, "sptune: unknown command '%s' (see 'sptune --help')\n", a);
    return CLI_USAGE;
}

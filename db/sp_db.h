/* The tuning database (SQLite). application_id and user_version identify it; WAL, busy_timeout,
 * writes in BEGIN IMMEDIATE transactions. A file that is not an sptune database, or whose schema
 * is newer than this build knows, is refused with a clear message and left untouched. */
#ifndef SP_DB_H
#define SP_DB_H

#include "sptune.h"
#include <stdint.h>

#define SP_DB_APPLICATION_ID 0x53505455 /* "SPTU" */
#define SP_DB_SCHEMA_VERSION 1  /* (the energy columns are additive: db/sp_db_schema.c) */

typedef struct sp_db sp_db;

/* Opens (and with create!=0 creates, with parent folders) the database at path, migrating an
 * older sptune schema forward inside one transaction. Without create, a missing file is
 * SPTUNE_ERR_NOT_FOUND, and an empty file (or empty SQLite database) is refused rather than
 * initialised. A foreign or newer file is SPTUNE_ERR_DB and is not modified.
 * sp_db_open_readonly neither creates nor migrates: it needs the current schema, and
 * sp_db_record on it is SPTUNE_ERR_INVALID. */
sptune_status sp_db_open(const char *path, int create, sp_db **out);
sptune_status sp_db_open_readonly(const char *path, sp_db **out);
void sp_db_close(sp_db *db);
int sp_db_schema_version(const sp_db *db);
const char *sp_db_path(const sp_db *db);   /* the file it was opened from */

/* The machine and software a result was measured with. */
typedef struct sp_env {
    const char *gpu_name;      /* "NVIDIA H200" */
    const char *gpu_profile;   /* "h200" */
    int cc_major, cc_minor;
    int sm_count;
    const char *driver_version;  /* "13.0" */
    const char *nvrtc_version;   /* "13.0" */
    const char *sptune_version;  /* "0.1.0" */
} sp_env;

typedef enum sp_outcome {
    SP_OUTCOME_OK = 0,
    SP_OUTCOME_COMPILE_FAILED,
    SP_OUTCOME_LAUNCH_FAILED,
    SP_OUTCOME_WRONG_RESULT,
    SP_OUTCOME_TIMED_OUT,
    SP_OUTCOME_INVALID,        /* rejected by the template's constraints */
    SP_OUTCOME__COUNT
} sp_outcome;
const char *sp_outcome_name(sp_outcome o); /* "ok", "compile_failed", ... */
int sp_outcome_parse(const char *s, sp_outcome *o);

typedef struct sp_timing {
    int runs;          /* timed repetitions */
    double median_ms, min_ms, max_ms, p10_ms, p90_ms;
    double baseline_ms;  /* cuBLAS (or other) baseline for the same problem in the same run; <0 none */
    double rel_error;    /* verification error against the reference; <0 not measured */
    const char *method;  /* how it was taken: "events;warmup=..;flush=l2;runs=.." */
    double energy_j;     /* joules per call (NVML, back-to-back runs); <= 0: not measured */
    double baseline_energy_j; /* the baseline's, in the same run; <= 0: not measured */
} sp_timing;

typedef struct sp_result {
    const sp_env *env;
    const char *template_name;  /* "gemm" */
    const char *template_hash;  /* 64 hex */
    const char *problem_key;    /* "M=4096,N=4096,K=4096" (plus dtype/sparsity fields per op) */
    const char *config;         /* "bm=128,bn=128,..." */
    sp_outcome outcome;
    const char *detail;         /* error text for failures, may be NULL */
    sp_timing timing;           /* meaningful for OK */
    int registers, smem_bytes, spill_bytes; /* resources; -1 unknown */
    long long recorded_at;      /* unix seconds; 0 when recording means "now"; set by sp_db_foreach */
} sp_result;

/* Records one result (environment, template, problem and configuration rows are created or
 * reused in the same transaction). A later result for the same (env, template hash, problem,
 * config) replaces the earlier one.
 * Validation (SPTUNE_ERR_INVALID): every string but detail and method is required; an OK
 * result needs runs >= 1 and finite, non-negative median/min/max/p10/p90 with
 * min <= median <= max. baseline_ms and rel_error < 0 mean "none" (stored as NULL); NaN or
 * infinity is refused. For a failed outcome the timing block is not stored, except rel_error
 * of a WRONG_RESULT (unknown when negative or not finite). Resources < 0 are stored as unknown. */
sptune_status sp_db_record(sp_db *db, const sp_result *r);

/* Whether a result exists for the key (for resume). *found=0/1; outcome set when found.
 * outcome and median_ms may be NULL; *median_ms is -1 when not found or not measured. */
sptune_status sp_db_lookup(sp_db *db, const sp_env *env, const char *template_name,
                           const char *template_hash, const char *problem_key, const char *config,
                           int *found, sp_outcome *outcome, double *median_ms);
/* The same with the joules per call (-1 when not measured; energy_j may be NULL). */
sptune_status sp_db_lookup_energy(sp_db *db, const sp_env *env, const char *template_name,
                                  const char *template_hash, const char *problem_key, const char *config,
                                  int *found, sp_outcome *outcome, double *median_ms, double *energy_j);

/* Best OK result (lowest median) for (gpu profile, template name, problem_key) across
 * environments of that GPU profile; *found=0 when none (then *config=NULL). config is malloc'd.
 * median_ms and baseline_ms may be NULL; *baseline_ms is -1 when that row has no baseline. */
sptune_status sp_db_best(sp_db *db, const char *gpu_profile, const char *template_name,
                         const char *problem_key, int *found, char **config, double *median_ms,
                         double *baseline_ms);

/* Visits every result row in insertion order (for export, listings, tests). cb returns
 * non-zero to stop. The strings of r (and r->env) are valid only during the callback; numbers
 * that are unknown read as -1 (runs as 0). */
typedef int (*sp_db_row_cb)(const sp_result *r, void *ud);
sptune_status sp_db_foreach(sp_db *db, sp_db_row_cb cb, void *ud);
sptune_status sp_db_count(sp_db *db, long long *results);
/* SQLite's quick_check over the whole file: SPTUNE_ERR_DB naming the first problem when it is damaged
 * (run on a database from elsewhere before anything is taken from it). */
sptune_status sp_db_quick_check(sp_db *db);

#endif

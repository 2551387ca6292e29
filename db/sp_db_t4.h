/* Kernel Tuner's T4 results format (the auto-tuning community's open results schema, version 1.0.0:
 * {"schema_version": "1.0.0", "results": [{"configuration": {...}, "times": {"runtimes": [...]},
 * "invalidity": "correct" | "compile" | "runtime" | "correctness" | "timeout" | "constraints",
 * "correctness": 1 | 0, "measurements": [{"name", "value", "unit"}], ...}]}), so that results move
 * to and from that ecosystem. One file holds one kernel's results for one problem on one device: the
 * op, problem and GPU are given by the caller. Reading goes through SQLite's JSON functions (no other
 * parser), and a file that is not such an object is refused whole. */
#ifndef SP_DB_T4_H
#define SP_DB_T4_H

#include "sp_db.h"

#include <stdio.h>

/* Outcomes and T4's invalidity names, both ways. */
const char *sp_t4_invalidity(sp_outcome o);
int sp_t4_outcome(const char *invalidity, sp_outcome *o);

/* One T4 result as read: the configuration as "name=value,..." (the file's order), the outcome, the
 * median of its runtimes (ms; -1 when none) and its "baseline" measurement (ms; -1 when none). */
typedef struct sp_t4_result {
    const char *config;
    sp_outcome outcome;
    double median_ms, baseline_ms;
    int runs;
} sp_t4_result;
typedef int (*sp_t4_fn)(const sp_t4_result *r, void *ud);   /* non-zero stops */

/* Reads a T4 results file, calling fn for each result in order. */
sptune_status sp_t4_read(const char *path, sp_t4_fn fn, void *ud);

#endif

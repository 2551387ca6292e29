/* A minimal test harness: CHECK records a failure and goes on; sp_test_done() prints the count
 * line and returns the exit status (0 pass, 1 fail, 77 skipped). */
#ifndef SP_TEST_H
#define SP_TEST_H

#include <stdio.h>

extern int sp_test_failures;
extern int sp_test_checks;

#define CHECK(cond) do { sp_test_checks++; if (!(cond)) { sp_test_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MSG(cond, ...) do { sp_test_checks++; if (!(cond)) { sp_test_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* CHECK that two integer expressions are equal, printing both values when they are not (floating-point operands
 * do not compile: compare those with a tolerance in CHECK_MSG). */
#define CHECK_EQ(a, b) do { \
    _Static_assert(_Generic((a) + (b), float: 0, double: 0, long double: 0, default: 1), "CHECK_EQ takes integers"); \
    const long long a_ = (long long)(a), b_ = (long long)(b); sp_test_checks++; if (a_ != b_) { sp_test_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld against %lld)\n", __FILE__, __LINE__, #a, #b, a_, b_); } \
    } while (0)
/* CHECK that an sptune call returned `want`; prints sptune_last_error() when it did not. */
#define CHECK_ST(call, want) do { sptune_status st_ = (call); sp_test_checks++; if (st_ != (want)) { \
    sp_test_failures++; fprintf(stderr, "%s:%d: %s returned %s (want %s): %s\n", __FILE__, __LINE__, \
    #call, sptune_status_name(st_), sptune_status_name(want), sptune_last_error()); } } while (0)

/* A fresh empty folder for this test under $SPTUNE_TEST_TMP (or /tmp); static storage. */
const char *sp_test_tmpdir(const char *test_name);
/* A kernel cache folder for compiles whose reuse a test does not check: $SPTUNE_TEST_CACHE when set (the test
 * command shares one between its two builds), else a fresh folder of its own. */
const char *sp_test_cache_dir(const char *test_name);
int sp_test_done(const char *test_name);
/* Whether msg (may be NULL) holds part; whether sptune_last_error() does. */
int sp_test_has(const char *msg, const char *part);
int sp_test_error_has(const char *part);
/* The GPU profile of that name (h100, h200, ...): a test that cannot have it exits at once, saying why. */
struct sp_gpu_profile sp_test_profile(const char *name);
int sp_test_skip(const char *test_name, const char *why);
/* Writes a safetensors file of n 2-D tensors (names, rows x cols 16-bit elements of dtype "BF16"/"F16", data);
 * 1 when written. */
int sp_test_write_safetensors(const char *path, int n, const char *const *names, const int *rows, const int *cols,
                              const char *dtype, const unsigned short *const *data);
/* CHECKs that a result is recorded in db: of template t, under `key` as it is, on env, outcome an sp_outcome, timed
 * at ms against a baseline timed at baseline_ms in the same run. */
struct sp_db;
struct sp_env;
struct sp_template;
void sp_test_record(struct sp_db *db, const struct sp_env *env, const struct sp_template *t, const char *key,
                    const char *config, double ms, double baseline_ms, int outcome);
/* CHECKs that `problem` is a problem op takes (its template parses it). */
void sp_test_problem_parses(const char *op, const char *problem);

#endif

/* The tuning loop over one problem: a search strategy proposes configurations, a backend
 * measures them, every result is recorded at once (nothing measured is lost if the process is
 * killed), results already recorded for this environment, template version, problem and
 * configuration are taken from the database instead of measured again (resume), and a budget
 * stops the loop while keeping the best so far. The backend is the GPU (tuner/sp_eval.h) or,
 * for tests, a simulation. */
#ifndef SP_TUNE_H
#define SP_TUNE_H

#include "sp_db.h"
#include "sp_eval.h"
#include "sp_search.h"

typedef struct sp_tune_budget {
    double seconds;   /* 0: no time limit */
    long long evals;  /* 0: no limit on new measurements */
} sp_tune_budget;

/* "15m", "90s", "2h", "300evals" (or "300e"); "" or "none" for no budget. */
int sp_budget_parse(const char *text, sp_tune_budget *b);

typedef struct sp_tune_backend {
    void *ud;
    /* Measures configuration c (already known valid); a failed candidate is an outcome in out,
     * not an error; an error return stops the loop (after what was recorded). */
    sptune_status (*evaluate)(void *ud, const sp_config *c, sp_eval *out);
} sp_tune_backend;

typedef struct sp_tune_progress {
    long long done, total;   /* proposals handled, size of the space */
    long long measured, resumed, failed;
    double best_ms, baseline_ms, elapsed_s;
    double best_energy_j;        /* the best's joules per call; <= 0 not measured */
    double eta_s;                /* estimated seconds left */
    long long best_index;        /* the best so far, an index into the space; -1 none */
    int eta_by_budget;           /* the budget, not the end of the space, sets eta_s */
} sp_tune_progress;

/* What the search minimizes: the median time, the energy per call (NVML), or their product. */
typedef enum sp_objective { SP_OBJECTIVE_TIME = 0, SP_OBJECTIVE_ENERGY = 1, SP_OBJECTIVE_EDP = 2 } sp_objective;
/* "time", "energy", "edp": 1 and *out set; 0 otherwise. */
int sp_objective_parse(const char *text, sp_objective *out);
const char *sp_objective_name(sp_objective o);
/* The objective's value of a measurement (lower is better); INFINITY when it needs an energy that was
 * not measured. */
double sp_objective_score(sp_objective o, double ms, double energy_j);

typedef struct sp_tune_opts {
    sp_search_kind strategy;
    unsigned long long seed;
    sp_tune_budget budget;
    int resume;                  /* take recorded results from db instead of measuring again */
    sp_db *db;                   /* may be NULL: nothing recorded, nothing resumed */
    const sp_env *env;           /* required with db */
    double baseline_ms;          /* stored with every result; <0 none */
    sp_objective objective;      /* what the search minimizes (default: time) */
    const char *method;          /* stored with failures (OK results carry their own) */
    void (*progress)(const sp_tune_progress *p, void *ud);
    void *progress_ud;
    long long first;             /* index into the space measured first (what the runtime API serves now,
                                    so that tuning starts from the best known), and where a descent
                                    starts; -1: the search's own start (the default) */
} sp_tune_opts;

void sp_tune_opts_default(sp_tune_opts *o);

/* Records evaluation e of configuration `config` (text) of t for problem_key in db, with the
 * baseline; failures carry `method` unless they have their own. */
sptune_status sp_tune_record(sp_db *db, const sp_env *env, sp_template *t, const char *problem_key,
                             const char *config, const sp_eval *e, double baseline_ms, const char *method);

#define SP_TUNE_TOP 3

typedef struct sp_tune_result {
    long long measured, resumed;
    long long failed[SP_OUTCOME__COUNT];
    long long best_index;       /* into the space; -1 when nothing passed */
    double best_ms, best_energy_j, best_score; /* the best by the objective: its time, energy, score */
    /* The best passing configurations by the objective, best first (for a paired re-measurement). */
    int ntop;
    long long top[SP_TUNE_TOP];
    double top_ms[SP_TUNE_TOP], top_energy_j[SP_TUNE_TOP], top_score[SP_TUNE_TOP];
    int stopped_by_budget;
} sp_tune_result;

sptune_status sp_tune_run(sp_template *t, const sp_problem *p, const sp_configs *space,
                          const sp_tune_backend *be, const sp_tune_opts *o, sp_tune_result *r);

#endif

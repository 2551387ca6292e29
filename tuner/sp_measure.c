#include "sp_measure.h"
#include "sp_eval.h"
#include "sp_space.h"
#include "sp_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The worker side: everything the evaluations share, built by the first request. */
typedef struct measure {
    sp_measure_spec spec;
    sp_bench bench;
    sp_template *t;
    sp_case kase;
    sp_cache *cache;
    double fastest_ms;      /* the fastest verified median so far */
    sp_configs no_energy;   /* variants timed without their energy: timed again (the tuner's paired
                               re-measurement of its best few), they get it */
} measure;

#define ENERGY_TIE 1.02     /* a median this close to the fastest is a tie within the timing's noise */

static sptune_status m_init(void *ud)
{
    measure *m = ud;
    sptune_status st;
    sp_bench_opts o;
    sp_problem p;
    sp_bench_opts_default(&o);
    if (m->spec.runs > 0) o.min_runs = o.max_runs = m->spec.runs;
    if ((st = sp_template_load(m->spec.op, &m->t)) != SPTUNE_OK) return st;
    if ((st = sp_problem_parse(m->t, m->spec.problem, &p)) != SPTUNE_OK) return st;
    if ((st = sp_cache_open(m->spec.cache_dir[0] ? m->spec.cache_dir : NULL, &m->cache)) != SPTUNE_OK) return st;
    if ((st = sp_bench_open(m->spec.ordinal, &o, &m->bench)) != SPTUNE_OK) return st;
    m->bench.data = m->spec.data[0] ? m->spec.data : NULL;
    m->bench.data_names = m->spec.data_names;
    return sp_case_create(&m->bench, m->spec.op, &p, &m->kase);
}

static sptune_status m_evaluate(void *ud, const sp_config *c, sp_eval *out)
{
    measure *m = ud;
    long long again = -1;
    for (long long i = 0; i < m->no_energy.n && again < 0; i++)
        if (sp_config_distance(&m->no_energy.v[i], c) == 0) again = i;
    m->bench.opts.energy_below_ms =
        m->spec.energy_all || again >= 0 || !(m->fastest_ms > 0) ? 0 : ENERGY_TIE * m->fastest_ms;
    sptune_status st = sp_eval_variant(&m->kase, m->t, c, m->cache, out);
    if (st != SPTUNE_OK || out->outcome != SP_OUTCOME_OK) return st;
    if (!(m->fastest_ms > 0) || out->timing.median_ms < m->fastest_ms) m->fastest_ms = out->timing.median_ms;
    if (out->timing.energy_j > 0 && again >= 0)
        m->no_energy.v[again] = m->no_energy.v[--m->no_energy.n];
    else if (!(out->timing.energy_j > 0) && again < 0 && m->bench.opts.energy_below_ms > 0)
        (void)sp_configs_push(&m->no_energy, c);   /* out of memory: only a re-measurement's energy is lost */
    return st;
}

static sptune_status m_baseline(void *ud, sp_eval *out)
{
    measure *m = ud;
    memset(out, 0, sizeof *out);
    out->timing.rel_error = -1;
    m->bench.opts.energy_below_ms = 0;
    sptune_status st = sp_case_time_baseline(&m->kase, &out->timing);
    if (st != SPTUNE_OK) return st;
    out->outcome = SP_OUTCOME_OK;
    out->timing.baseline_ms = out->timing.median_ms;
    out->timing.baseline_energy_j = out->timing.energy_j;
    out->timing.method = m->bench.method;
    return SPTUNE_OK;
}

sptune_status sp_measure_self(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1) return sp_fail(SPTUNE_ERR_IO, "cannot find this program's path (/proc/self/exe)");
    buf[n] = 0;
    return SPTUNE_OK;
}

sptune_status sp_measure_worker(const char *exe, const sp_measure_spec *spec, double timeout_s, sp_worker **out)
{
    char ordinal[16], runs[16];
    snprintf(ordinal, sizeof ordinal, "%d", spec->ordinal);
    snprintf(runs, sizeof runs, "%d", spec->runs);
    char *argv[] = {(char *)exe, "__worker", (char *)spec->op, (char *)spec->problem, ordinal, runs,
                    (char *)spec->cache_dir, (char *)spec->data, (char *)spec->data_names,
                    spec->energy_all ? "energy=all" : "energy=near", NULL};
    sp_worker_task task = {0};
    task.evaluate = m_evaluate; /* never called here: the executed worker has its own */
    task.argv = argv;
    return sp_worker_create(&task, timeout_s, out);
}

int sp_measure_main(int argc, char **argv)
{
    static measure m;
    if (argc != 8) {
        fprintf(stderr, "sptune __worker: internal command (started by sptune tune and the main job)\n");
        return 2;
    }
    memset(&m, 0, sizeof m);
    snprintf(m.spec.op, sizeof m.spec.op, "%s", argv[0]);
    snprintf(m.spec.problem, sizeof m.spec.problem, "%s", argv[1]);
    m.spec.ordinal = atoi(argv[2]);
    m.spec.runs = atoi(argv[3]);
    snprintf(m.spec.cache_dir, sizeof m.spec.cache_dir, "%s", argv[4]);
    snprintf(m.spec.data, sizeof m.spec.data, "%s", argv[5]);
    snprintf(m.spec.data_names, sizeof m.spec.data_names, "%s", argv[6]);
    m.spec.energy_all = strcmp(argv[7], "energy=all") == 0;
    sp_worker_task task = {&m, m_init, m_evaluate, m_baseline, NULL};
    int rc = sp_worker_serve(&task, SP_WORKER_FD_IN, SP_WORKER_FD_OUT);
    /* No teardown: the process ends here, and a faulted context must not be touched again. */
    return rc;
}

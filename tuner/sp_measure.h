/* Measurement in a worker process (tuner/sp_worker.h): one problem of one op on one GPU. The
 * worker is this program executed again with the hidden command `__worker`, so that it starts
 * with no CUDA state and a kernel that faults or hangs takes only the worker down. The worker
 * builds the case (inputs, reference, baseline) once and then verifies and times the
 * configurations it is sent. */
#ifndef SP_MEASURE_H
#define SP_MEASURE_H

#include "sp_worker.h"

typedef struct sp_measure_spec {
    char op[64];
    char problem[512];      /* sp_problem_format text */
    int ordinal;            /* device */
    int runs;               /* timed runs per variant; 0: the bench default */
    char cache_dir[1024];   /* "" for the default */
    char data[1024];        /* twell-ffn: a safetensors file with the layer's own tensors ("" none: drawn data) */
    char data_names[1024];  /* their names (sp_twell_layer.h), "" for the defaults */
    int energy_all;         /* energy for every configuration (an energy objective); else only for one as fast as
                               every one timed before it, within 2 %, or timed again without it so far (the window
                               is most of a measurement) */
} sp_measure_spec;

/* A worker measuring spec, started as `exe __worker ...` (exe: this program's path, for
 * instance from sp_measure_self). timeout_s bounds one evaluation (compile included). */
sptune_status sp_measure_worker(const char *exe, const sp_measure_spec *spec, double timeout_s, sp_worker **out);
/* The running program's path (/proc/self/exe). */
sptune_status sp_measure_self(char *buf, size_t len);

/* The `__worker` command: argv after it, as sp_measure_worker passes them. Serves until its
 * input closes; returns the process exit status. */
int sp_measure_main(int argc, char **argv);

#endif

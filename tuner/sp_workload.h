/* The default workload: problems per op from common LLM shapes, what `sptune --gpu auto` tunes. */
#ifndef SP_WORKLOAD_H
#define SP_WORKLOAD_H

typedef struct sp_workload_item {
    const char *op;
    const char *problem;   /* sp_problem_parse syntax */
    const char *why;       /* where the shape comes from */
} sp_workload_item;

/* Terminated by {NULL}. */
extern const sp_workload_item sp_default_workload[];

#endif

/* Search strategies over a list of valid configurations. A strategy proposes the next
 * configuration (an index into the list) and is told each result; the tuning loop owns the
 * budget. Every strategy proposes each configuration at most once. */
#ifndef SP_SEARCH_H
#define SP_SEARCH_H

#include "sp_space.h"

typedef enum sp_search_kind {
    SP_SEARCH_EXHAUSTIVE, /* the whole list in order */
    SP_SEARCH_RANDOM,     /* the whole list in a seeded random order */
    SP_SEARCH_DESCENT,    /* from the default: best-improvement over one-parameter neighbours, then
                             restarts from the best unexplored neighbour region; stops when the
                             budget ends or everything was proposed */
} sp_search_kind;

typedef struct sp_search sp_search;

/* "exhaustive", "random", "descent". */
int sp_search_parse(const char *name, sp_search_kind *kind);
const char *sp_search_name(sp_search_kind kind);

/* space must outlive the search. */
sptune_status sp_search_create(sp_search_kind kind, const sp_template *t, const sp_configs *space,
                               unsigned long long seed, sp_search **out);
/* Descent only, before the first proposal: start at space index `start` instead of the default
 * (to study the strategy from other starting points; other strategies ignore it). */
void sp_search_start_at(sp_search *s, long long start);
/* 1 and *index set when there is a next configuration; 0 when the strategy has nothing left. */
int sp_search_next(sp_search *s, long long *index);
/* The result of a proposed configuration: ok with its time, or a failure. */
void sp_search_report(sp_search *s, long long index, int ok, double ms);
void sp_search_free(sp_search *s);

#endif

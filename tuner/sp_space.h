/* A template's valid configurations as a list, and seeded samples of it. */
#ifndef SP_SPACE_H
#define SP_SPACE_H

#include "sp_template.h"

typedef struct sp_configs {
    sp_config *v;
    long long n, cap;
} sp_configs;

/* Every valid configuration for gpu (and problem, may be NULL), in space order. */
sptune_status sp_space_collect(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, sp_configs *out);
/* Keeps n configurations, in space order: the template's default (when valid) and a seeded
 * uniform choice of the rest. n >= the list's size keeps everything. */
sptune_status sp_space_sample(sp_configs *cs, const sp_template *t, long long n, unsigned long long seed);
/* n configurations of the valid space drawn without listing it: the default for gpu (when valid), then
 * seeded uniform draws over the parameters' product kept when valid and new, in space order. Where valid
 * configurations are too rare to draw that way (or fewer than n), the space is listed and sampled, or where it is
 * too large to list (SP_SPACE_LIST_MAX) the rest drawn from random subtrees (sp_space_draw_subtrees). */
sptune_status sp_space_draw(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                            unsigned long long seed, sp_configs *out);
/* Spaces too large to list (tuner/sp_space_large.c). A space whose parameters' product passes SP_SPACE_LIST_MAX
 * is sampled, never listed: twell-ffn's (1.8e10 combinations, 3 M valid) takes minutes to walk. */
#define SP_SPACE_LIST_MAX 1e9
double sp_space_raw(const sp_template *t);
/* The number of valid configurations: exact (a walk) up to SP_SPACE_LIST_MAX, else estimated from random subtrees
 * of the walk (their first parameters fixed, `subtrees` of them) walked for `seconds` (30 at least), with a 95 %
 * interval [lo, hi]. */
typedef struct sp_space_count {
    int exact;
    double count, lo, hi;
    long long samples;     /* subtrees walked */
    double subtrees;       /* of how many */
} sp_space_count;
sptune_status sp_space_count_valid(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, double seconds,
                                   unsigned long long seed, sp_space_count *out);
/* Appends to out, each once, one valid configuration (uniform within it) from each of random subtrees of the walk
 * until out holds n or 30 + 16 n subtrees were walked: sp_space_draw's way where valid configurations are too rare
 * to draw from the product and the space too large to list (then it may return fewer than n). */
sptune_status sp_space_draw_subtrees(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                                    unsigned long long seed, sp_configs *out);
/* What to search where the space is too large to list: each valid seed, every valid configuration one or two
 * parameters away from a seed, and one configuration from each of the random subtrees walked for `seconds` (30
 * at least); in space order, each once. */
sptune_status sp_space_candidates(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p,
                                  const sp_config *seeds, int nseeds, double seconds, unsigned long long seed,
                                  sp_configs *out);
/* qsort's order of two sp_config: space order (the walk's, the last parameter changing fastest). */
int sp_config_cmp(const void *a, const void *b);
/* How many parameters a and b differ in (a descent's neighbours are 1 apart). */
int sp_config_distance(const sp_config *a, const sp_config *b);
/* Appends c when it is valid and not in out yet (a linear search: the draws' short lists). */
sptune_status sp_configs_push_new(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, const sp_config *c,
                                  sp_configs *out);
/* Appends c when it is valid for gpu and p (the template's constraints); SPTUNE_ERR_NOMEM out of memory. */
sptune_status sp_configs_push_valid(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, const sp_config *c,
                                    sp_configs *out);
/* Appends c; nonzero when out of memory (the list is left as it was). */
int sp_configs_push(sp_configs *cs, const sp_config *c);
/* A list of one configuration. */
sptune_status sp_configs_one(sp_configs *cs, const sp_config *c);
void sp_configs_free(sp_configs *cs);

#endif

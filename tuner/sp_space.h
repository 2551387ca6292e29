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
 * configurations are too rare to draw that way (or fewer than n), the space is listed and sampled. */
sptune_status sp_space_draw(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *p, long long n,
                            unsigned long long seed, sp_configs *out);
/* Appends c; nonzero when out of memory (the list is left as it was). */
int sp_configs_push(sp_configs *cs, const sp_config *c);
/* A list of one configuration. */
sptune_status sp_configs_one(sp_configs *cs, const sp_config *c);
void sp_configs_free(sp_configs *cs);

#endif

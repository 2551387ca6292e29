/* The project's one pseudo-random generator: splitmix64 (a 64-bit state, every seed valid,
 * reproducible across machines). Test data, sampling and search strategies all draw from it. */
#ifndef SP_RNG_H
#define SP_RNG_H

#include <stdint.h>

/* The next 64 random bits; advances *state. */
uint64_t sp_rng_next(uint64_t *state);
/* Uniform in [0, 1) with 53 random bits. */
double sp_rng_unit(uint64_t *state);
/* Uniform in [0, n) for n > 0 (0 when n == 0). */
uint64_t sp_rng_below(uint64_t *state, uint64_t n);

/* Standard normal deviates from rng, two per Box-Muller step (the second kept for the next call). */
typedef struct sp_normals { uint64_t *rng; int have; double next; } sp_normals;
double sp_normal(sp_normals *n);

#endif

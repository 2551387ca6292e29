#include "sp_rng.h"

#include <math.h>

uint64_t sp_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double sp_rng_unit(uint64_t *state) { return (double)(sp_rng_next(state) >> 11) * 0x1p-53; }

uint64_t sp_rng_below(uint64_t *state, uint64_t n)
{
    /* multiply-shift: no modulo bias worth speaking of for n far below 2^64 */
    return n ? (uint64_t)(((unsigned __int128)sp_rng_next(state) * n) >> 64) : 0;
}

double sp_normal(sp_normals *n)
{
    if (n->have) { n->have = 0; return n->next; }
    double u = sp_rng_unit(n->rng), v = sp_rng_unit(n->rng), r = sqrt(-2.0 * log(u + 1e-300));
    n->next = r * sin(6.283185307179586 * v);
    n->have = 1;
    return r * cos(6.283185307179586 * v);
}

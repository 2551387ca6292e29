/* One problem measured on several kinds of data (a template's `across` dimensions: how the tuner made the data,
 * twell's two generators), and the configuration to serve for it: the one whose worst speed-up over those data is
 * best, since a user's data is none of them. The lookup's scan adds every result it keeps; each candidate problem
 * then asks for its pick. Internal to api/. */
#ifndef SP_API_ACROSS_H
#define SP_API_ACROSS_H

#include "sp_template.h"
#include "sptune.h"

#include <stddef.h>

typedef struct sp_across sp_across;

/* A collection for template t; *out is NULL (and nothing is collected) when t has no across dimension. */
sptune_status sp_across_new(const sp_template *t, sp_across **out);
void sp_across_free(sp_across *a);

/* 1 when values x and y of category dimension i name data a lookup treats as one: equal, or one of them the caller's
 * own tensors (ranges' own): results measured on an application's tensors are that problem's, whatever kind of data
 * a request names (a generator's results measured nearer in another dimension do not displace them). */
int sp_api_kinds_alike(const sp_template *t, int i, double x, double y);

/* 1 when a recorded key lacks a dimension that was added without as_before (it was measured on other data than
 * the default says: near, never the same problem). */
int sp_api_key_predates(const sp_template *t, const char *key);

/* One OK result: its problem (parsed from key), GPU profile, whether another template version measured it, its
 * configuration and times. Results without a baseline are not comparable across data and are passed over. */
sptune_status sp_across_add(sp_across *a, const sp_problem *p, const char *key, const char *gpu, int other_version,
                            const char *config, double median_ms, double baseline_ms);

typedef struct sp_across_pick {
    const char *config;        /* valid while the collection lives */
    double median_ms, baseline_ms; /* on the data where it did worst */
    const char *worst_key;     /* that problem's key */
    int kinds;                 /* kinds of data the problem was measured on (set whatever the answer) */
    int own;                   /* 1: the pick was measured on the caller's own tensors (ranges' own), not a worst case */
    char note[256];            /* "gen=0,spread=0.5: 1.80x; gen=1,spread=0.5: 1.05x"; with one kind, its name */
} sp_across_pick;

/* For problem p (key: as recorded) on gpu of that template version: 1 and *out when results of p's problem exist on
 * two or more kinds of data and some configuration was measured on every kind; the one of the best worst speed-up
 * (of those within 3 % of it, a run's noise, the best mean). Where p's problem has results measured on the caller's
 * own tensors (the own kind: autotune, `sptune tune --data`), 1 and the fastest of those instead (out->own). 0
 * otherwise (the fastest on p's own data stands; out->kinds and, for one kind, out->note say what it was measured
 * on). */
int sp_across_choose(const sp_across *a, const sp_problem *p, const char *key, const char *gpu, int other_version,
                     sp_across_pick *out);

#endif

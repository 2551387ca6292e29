/* The lookup policy of sptune_kernel_get (api/sp_api_lookup.c): the parameters a request fixes, and the best
 * recorded configuration for a problem on a GPU. */
#ifndef SP_API_LOOKUP_H
#define SP_API_LOOKUP_H

#include "sp_gpu.h"
#include "sp_template.h"
#include "sptune_kernel_object.h"

/* Parameters a request fixes ("window=128,decode=owner"): each as (parameter index, value index). */
typedef struct sp_fixed_params {
    int n;
    int param[SP_MAX_PARAMS], value[SP_MAX_PARAMS];
} sp_fixed_params;

/* The request's fixed parameters ("window=128,decode=owner") into f (SPTUNE_ERR_INVALID naming a bad one). */
sptune_status sp_api_fixed_parse(const sp_template *t, const char *text, sp_fixed_params *f);
/* Whether the request fixes parameter `param`. */
int sp_api_fixed_has(const sp_fixed_params *f, int param);

/* The best recorded configuration valid for want that takes the fixed parameters, into cfg (*found 1), with where it
 * came from in k's origin, times, recorded problem and detail; *found 0 (and the detail says what was searched) when
 * nothing recorded fits. */
sptune_status sp_api_lookup(sp_template *t, const sp_gpu_profile *gpu, const sp_problem *want,
                            const sptune_kernel_request *req, const sp_fixed_params *fixed, sptune_kernel *k,
                            sp_config *cfg, int *found);

#endif

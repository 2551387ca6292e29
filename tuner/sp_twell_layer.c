/* A user's TwELL layer read from a safetensors file (sp_twell_layer.h). */
#include "sp_twell_layer.h"
#include "sp_status.h"
#include "sp_tensor_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sp_twell_layer_free(sp_twell_layer *l)
{
    if (!l) return;
    free(l->x);
    free(l->gate);
    free(l->up);
    free(l->down);
    memset(l, 0, sizeof *l);
}

static sptune_status read_one(const char *path, const char *names, const char *role, sp_tensor *t, char *name,
                              size_t len)
{
    const char *def = !strcmp(role, "x") ? "x" : !strcmp(role, "gate") ? "w_gate" : !strcmp(role, "up") ? "w_up"
                                                                                                        : "w_down";
    sp_tensor_role_name(names, role, def, name, len);
    sp_tensor_request rq = {name, 0, 0, SP_TENSOR_UNKNOWN};
    sptune_status st = sp_tensor_read(path, &rq, t);
    if (st == SPTUNE_OK && t->format != SP_TENSOR_BF16) {
        sp_tensor_free(t);
        return sp_fail(SPTUNE_ERR_INVALID, "%s: tensor '%s' (%s) holds fp16; the TwELL kernels take bf16", path, name,
                       role);
    }
    return st;
}

sptune_status sp_twell_layer_read(const char *path, const char *names, int want_x_only, sp_twell_layer *out)
{
    memset(out, 0, sizeof *out);
    sp_tensor t[4] = {{0}};
    char name[4][256];
    static const char *const roles[4] = {"x", "gate", "up", "down"};
    sptune_status st = SPTUNE_OK;
    for (int i = 0; i < (want_x_only ? 2 : 4) && st == SPTUNE_OK; i++)
        st = read_one(path, names, roles[i], &t[i], name[i], sizeof name[i]);
    const long long D = t[0].cols, F = t[1].rows;
    if (st == SPTUNE_OK && (t[1].cols != D || D > 1000000 || F > 1000000))
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: X ('%s') is %lld x %lld and the gate weights ('%s') %lld x %lld: they "
                     "must share D (X tokens x D, gate F x D)", path, name[0], t[0].rows, D, name[1], F, t[1].cols);
    if (st == SPTUNE_OK && !want_x_only && (t[2].rows != F || t[2].cols != D))
        st = sp_fail(SPTUNE_ERR_INVALID, "%s: the up weights ('%s') are %lld x %lld, the gate weights %lld x %lld", path,
                     name[2], t[2].rows, t[2].cols, F, D);
    if (st == SPTUNE_OK && !want_x_only) {
        if (t[3].rows == D && t[3].cols == F) {   /* nn.Linear's D x F: transposed to F x D */
            unsigned short *tr = malloc((size_t)(F * D) * 2);
            if (!tr) st = sp_fail(SPTUNE_ERR_NOMEM, "out of memory transposing '%s'", name[3]);
            for (long long i = 0; tr && i < D; i++)
                for (long long j = 0; j < F; j++) tr[(size_t)(j * D + i)] = t[3].data[(size_t)(i * F + j)];
            free(t[3].data);
            t[3].data = tr;
        } else if (t[3].rows != F || t[3].cols != D) {
            st = sp_fail(SPTUNE_ERR_INVALID, "%s: the down weights ('%s') are %lld x %lld: want %lld x %lld (nn.Linear) "
                         "or %lld x %lld", path, name[3], t[3].rows, t[3].cols, D, F, F, D);
        }
    }
    if (st != SPTUNE_OK) {
        for (int i = 0; i < 4; i++) sp_tensor_free(&t[i]);
        return st;
    }
    *out = (sp_twell_layer){t[0].data, t[1].data, t[2].data, t[3].data, t[0].rows, (int)D, (int)F};
    return SPTUNE_OK;
}

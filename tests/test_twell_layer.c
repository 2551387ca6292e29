/* A user's TwELL layer read from a safetensors file (tuner/sp_twell_layer.h, what tune --data feeds the twell-ffn
 * harness): the four tensors by their checkpoint names, the down weights taken as nn.Linear keeps them (D x F,
 * transposed) or F x D, X and the gate alone when that is all that is asked; and the refusals, each naming what
 * is wrong: a missing tensor, fp16, shapes that disagree. */
#include "sp_status.h"
#include "sp_test.h"
#include "sp_twell_layer.h"

#include <stdio.h>
#include <string.h>

enum { T = 3, D = 4, F = 5 };


int main(void)
{
    const char *dir = sp_test_tmpdir("test_twell_layer");
    unsigned short x[T * D], g[F * D], u[F * D], dn[D * F], df[F * D], u6[(F + 1) * D];
    for (int i = 0; i < T * D; i++) x[i] = (unsigned short)(0x1000 + i);
    for (int i = 0; i < F * D; i++) {
        g[i] = (unsigned short)(0x2000 + i);
        u[i] = (unsigned short)(0x3000 + i);
        df[i] = (unsigned short)(0x4000 + i);   /* F x D: row j, what neuron j adds */
    }
    for (int j = 0; j < F; j++)
        for (int k = 0; k < D; k++) dn[k * F + j] = df[j * D + k];   /* the same as nn.Linear keeps it */
    for (int i = 0; i < (F + 1) * D; i++) u6[i] = (unsigned short)(0x5000 + i);   /* one neuron too many */
    char lin[512], rows_first[512], f16[512], odd[512];
    snprintf(lin, sizeof lin, "%s/linear.safetensors", dir);
    snprintf(rows_first, sizeof rows_first, "%s/rows.safetensors", dir);
    snprintf(f16, sizeof f16, "%s/f16.safetensors", dir);
    snprintf(odd, sizeof odd, "%s/odd.safetensors", dir);
    const char *const names[] = {"h", "mlp.gate.weight", "mlp.up.weight", "mlp.down.weight"};
    const int r_lin[] = {T, F, F, D}, c_lin[] = {D, D, D, F}, r_rows[] = {T, F, F, F}, c_rows[] = {D, D, D, D};
    const unsigned short *const d_lin[] = {x, g, u, dn}, *const d_rows[] = {x, g, u, df};
    CHECK(sp_test_write_safetensors(lin, 4, names, r_lin, c_lin, "BF16", d_lin));
    CHECK(sp_test_write_safetensors(rows_first, 4, names, r_rows, c_rows, "BF16", d_rows));
    CHECK(sp_test_write_safetensors(f16, 4, names, r_lin, c_lin, "F16", d_lin));
    const int r_odd[] = {T, F, F + 1, D}, c_odd[] = {D, D, D, F};
    const unsigned short *const d_odd[] = {x, g, u6, dn};
    CHECK(sp_test_write_safetensors(odd, 4, names, r_odd, c_odd, "BF16", d_odd));
    const char *spec = "x=h,gate=mlp.gate.weight,up=mlp.up.weight,down=mlp.down.weight";

    /* both layouts of the down weights give the layer F x D */
    const char *const files[] = {lin, rows_first};
    for (int i = 0; i < 2; i++) {
        sp_twell_layer l;
        CHECK_ST(sp_twell_layer_read(files[i], spec, 0, &l), SPTUNE_OK);
        CHECK(l.M == T && l.D == D && l.F == F);
        if (l.x) {
            CHECK(!memcmp(l.x, x, sizeof x) && !memcmp(l.gate, g, sizeof g) && !memcmp(l.up, u, sizeof u));
            CHECK_MSG(!memcmp(l.down, df, sizeof df), "%s: the down weights not row j = neuron j", files[i]);
        }
        sp_twell_layer_free(&l);
    }
    /* X and the gate alone: no up or down read (nor needed) */
    sp_twell_layer l;
    CHECK_ST(sp_twell_layer_read(lin, "x=h,gate=mlp.gate.weight", 1, &l), SPTUNE_OK);
    CHECK(l.x && l.gate && !l.up && !l.down && l.F == F);
    sp_twell_layer_free(&l);
    sp_twell_layer_free(NULL);

    /* refusals */
    CHECK_ST(sp_twell_layer_read(lin, NULL, 1, &l), SPTUNE_ERR_NOT_FOUND);   /* the default names are not there */
    CHECK_MSG(sp_test_error_has("no tensor named 'x'") && l.x == NULL, "%s", sptune_last_error());
    CHECK_ST(sp_twell_layer_read(lin, "x=h,gate=mlp.gate.weight", 0, &l), SPTUNE_ERR_NOT_FOUND);
    CHECK_MSG(sp_test_error_has("no tensor named 'w_up'"), "%s", sptune_last_error());
    CHECK_ST(sp_twell_layer_read(f16, spec, 0, &l), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("holds fp16; the TwELL kernels take bf16"), "%s", sptune_last_error());
    CHECK_ST(sp_twell_layer_read(odd, spec, 0, &l), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("the up weights ('mlp.up.weight') are 6 x 4, the gate weights 5 x 4"), "%s", sptune_last_error());
    CHECK_ST(sp_twell_layer_read(lin, "x=h,gate=mlp.down.weight", 1, &l), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("must share D"), "%s", sptune_last_error());
    CHECK_ST(sp_twell_layer_read(lin, "x=h,gate=mlp.gate.weight,up=mlp.up.weight,down=mlp.gate.weight", 0, &l),
             SPTUNE_OK);   /* 5 x 4 is F x D: taken as it is */
    sp_twell_layer_free(&l);
    CHECK_ST(sp_twell_layer_read(lin, "x=h,gate=mlp.gate.weight,up=mlp.up.weight,down=h", 0, &l), SPTUNE_ERR_INVALID);
    CHECK_MSG(sp_test_error_has("the down weights ('h') are 3 x 4: want 4 x 5 (nn.Linear) or 5 x 4"), "%s", sptune_last_error());
    return sp_test_done("test_twell_layer");
}

/* A user's own TwELL layer from a safetensors file: the calibration batch X and the gate, up and down weights,
 * for tuning on data the generators never made (sptune tune twell-ffn --data). Checkpoints name tensors their own
 * way: `names` is "x=NAME,gate=NAME,up=NAME,down=NAME", each optional (defaults x, w_gate, w_up, w_down, as the
 * Python API names them). The down weights may be F x D (row j: what neuron j adds) or D x F as nn.Linear keeps
 * them (transposed here; where D = F, nn.Linear's layout is assumed). bf16 only, as the TwELL kernels are. */
#ifndef SP_TWELL_LAYER_H
#define SP_TWELL_LAYER_H

#include "sptune.h"
#include <stddef.h>

typedef struct sp_twell_layer {
    unsigned short *x, *gate, *up, *down;   /* M x D, F x D, F x D, F x D (malloc'd) */
    long long M;
    int D, F;
} sp_twell_layer;

/* Reads the four tensors of path and checks their shapes agree (a refusal names what is wrong: NOT_FOUND for a
 * tensor the file lacks, INVALID for fp16 or shapes that disagree). With
 * want_x_only, only X and the gate weights are read (describing the data needs no more). */
sptune_status sp_twell_layer_read(const char *path, const char *names, int want_x_only, sp_twell_layer *out);
void sp_twell_layer_free(sp_twell_layer *l);

#endif

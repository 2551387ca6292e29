/* Reading one 2-D matrix of 16-bit floats from the files pruned weights live in: a named tensor of
 * a safetensors checkpoint (BF16 or F16), a NumPy .npy file (<f2, or 2-byte raw data with the
 * format given), or raw bytes with the shape and format given. Every file is untrusted: sizes,
 * offsets and headers are checked before anything is read, and a refusal says why. */
#ifndef SP_TENSOR_FILE_H
#define SP_TENSOR_FILE_H

#include "sptune.h"
#include <stddef.h>
#include <stdint.h>

/* The most elements a matrix may have (2^36: 128 GiB of 16-bit values); larger shapes are refused before reading. */
#define SP_TENSOR_MAX_ELEMS (1ll << 36)

typedef enum sp_tensor_format { SP_TENSOR_UNKNOWN = 0, SP_TENSOR_BF16, SP_TENSOR_F16 } sp_tensor_format;

typedef struct sp_tensor {
    uint16_t *data;           /* rows x cols, row-major (malloc'd) */
    long long rows, cols;
    sp_tensor_format format;
} sp_tensor;

typedef struct sp_tensor_request {
    const char *name;         /* safetensors: the tensor's name (required there); ignored elsewhere */
    long long rows, cols;     /* raw: the shape (required); npy/safetensors: 0, or a check */
    sp_tensor_format format;  /* raw and 2-byte npy: the format (required); otherwise 0 or a check */
} sp_tensor_request;

/* Reads path: a .safetensors file, a .npy file (by their headers, whatever the extension), else raw.
 * The matrix must be 2-D (safetensors and npy); SPTUNE_ERR_INVALID names what is wrong. */
sptune_status sp_tensor_read(const char *path, const sp_tensor_request *req, sp_tensor *out);
/* The same from bytes in memory (tests; name for messages). */
sptune_status sp_tensor_parse(const unsigned char *bytes, size_t size, const char *name, const sp_tensor_request *req,
                              sp_tensor *out);
void sp_tensor_free(sp_tensor *t);
/* The name given to `role` in "role=NAME,role=NAME" (names may be NULL), else def, into out: how the commands
 * that read several tensors of a checkpoint (--tensors) learn what the checkpoint calls them. */
void sp_tensor_role_name(const char *names, const char *role, const char *def, char *out, size_t len);
const char *sp_tensor_format_name(sp_tensor_format f); /* "bf16", "fp16", "?" */
int sp_tensor_format_parse(const char *s, sp_tensor_format *f); /* "bf16", "fp16"/"f16" */

#endif

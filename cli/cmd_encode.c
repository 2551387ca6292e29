/* sptune encode: a pruned weight matrix from a safetensors checkpoint, a .npy or a raw file, encoded
 * in the Slot-Filling layers for slotfill-spmm and written as a checked image file. */
#include "cli.h"
#include "sp_clock.h"
#include "sp_status.h"
#include "sp_tensor_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* ROWSxCOLS, the whole text (nothing after: "1024x1024abc", "1024x1024x1" refused), both from 1 to LLONG_MAX. */
static int parse_shape(const char *s, long long *rows, long long *cols)
{
    char *end;
    if (!isdigit((unsigned char)s[0])) return 0;
    errno = 0;
    *rows = strtoll(s, &end, 10);
    if (errno == ERANGE || *end != 'x' || !isdigit((unsigned char)end[1])) return 0;
    *cols = strtoll(end + 1, &end, 10);
    return errno != ERANGE && *end == 0 && *rows >= 1 && *cols >= 1;
}

int cmd_encode(cli_cmd *cmd, int npos, char **pos)
{
    (void)npos;
    const char *outp = cli_get(cmd, "out"), *shape = cli_get(cmd, "shape"), *dtype = cli_get(cmd, "dtype");
    if (!outp || !*outp) return cli_usage_error(cmd->name, "--out FILE is required (where the encoded matrix goes)");
    sp_tensor_request req = {cli_get(cmd, "tensor"), 0, 0, SP_TENSOR_UNKNOWN};
    if (shape && !parse_shape(shape, &req.rows, &req.cols))
        return cli_usage_error(cmd->name, "--shape wants ROWSxCOLS (e.g. 14336x4096), not '%s'", shape);
    if (shape && req.rows > SP_TENSOR_MAX_ELEMS / req.cols)
        return cli_usage_error(cmd->name, "--shape %s is more than the %lld (2^36) elements sptune reads", shape,
                               SP_TENSOR_MAX_ELEMS);
    /* a folder is refused before the work, not after it when the rename fails */
    struct stat sb;
    if (outp[strlen(outp) - 1] == '/' || (stat(outp, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return cli_usage_error(cmd->name, "--out %s names a folder; name the file to write (e.g. %s%sw.sf)", outp, outp,
                               outp[strlen(outp) - 1] == '/' ? "" : "/");
    if (dtype && !sp_tensor_format_parse(dtype, &req.format))
        return cli_usage_error(cmd->name, "--dtype wants bf16 or fp16, not '%s'", dtype);
    sp_tensor w;
    double t0 = sp_now_s();
    sptune_status st = sp_tensor_read(pos[0], &req, &w);
    if (st != SPTUNE_OK) return cli_input_error(cmd->name, st);
    double t1 = sp_now_s();
    sptune_slotfill *m = NULL;
    st = sptune_slotfill_encode(w.data, w.rows, w.cols, w.format == SP_TENSOR_F16, cli_get(cmd, "config"), &m);
    double t2 = sp_now_s();
    int rc = CLI_OK;
    if (st != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    if (!cli_get(cmd, "no-verify")) {
        /* the CPU decoder rebuilds W bit for bit, or nothing is written */
        void *back = malloc((size_t)(w.rows * w.cols) * 2);
        if (!back) { rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_NOMEM, "out of memory")); goto out; }
        st = sptune_slotfill_decode(m, back);
        int same = st == SPTUNE_OK && memcmp(back, w.data, (size_t)(w.rows * w.cols) * 2) == 0;
        free(back);
        if (st != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
        if (!same) {
            rc = cli_error(cmd->name, sp_fail(SPTUNE_ERR_WRONG_RESULT, "the encoding does not decode to the input: "
                                              "nothing written (please report)"));
            goto out;
        }
    }
    if ((st = sptune_slotfill_write(m, outp)) != SPTUNE_OK) { rc = cli_error(cmd->name, st); goto out; }
    sptune_slotfill_info in = {.size = sizeof(sptune_slotfill_info)};
    sptune_slotfill_info_get(m, &in);
    /* what an application asks for (its batch in place of N=16): the pruning measured from the encoding */
    char problem[128];
    if ((st = sptune_slotfill_problem(m, 16, problem, sizeof problem)) != SPTUNE_OK) {
        rc = cli_error(cmd->name, st);
        goto out;
    }
    const int bitmap = strstr(sptune_slotfill_fixed(m), "decode=bitmap") != NULL;
    double dense = (double)in.bytes_dense, total = (double)(in.bytes_tc + in.bytes_slots + in.bytes_residual + in.bytes_index);
    if (cli_get(cmd, "json")) {
        putchar('{');
        cli_json_key("input", 1); cli_json_str(pos[0]);
        printf(",\"rows\":%lld,\"cols\":%lld", in.M, in.K);
        cli_json_key("dtype", 0); cli_json_str(sp_tensor_format_name(w.format));
        cli_json_key("encoding", 0); cli_json_str(sptune_slotfill_fixed(m));
        /* the parts under the names the text gives them: the bitmap layout has no slots or residual */
        if (bitmap)
            printf(",\"nonzeros\":%lld,\"bytes_values\":%lld,\"bytes_bitmaps\":%lld,\"bytes_padding\":%lld",
                   in.nonzeros, in.bytes_tc, in.bytes_index, in.bytes_residual);
        else
            printf(",\"nonzeros\":%lld,\"in_tc\":%lld,\"in_slots\":%lld,\"in_residual\":%lld,\"bytes_tc\":%lld,"
                   "\"bytes_slots\":%lld,\"bytes_residual\":%lld,\"bytes_index\":%lld",
                   in.nonzeros, in.in_tc, in.in_slots, in.in_residual, in.bytes_tc, in.bytes_slots, in.bytes_residual,
                   in.bytes_index);
        printf(",\"bytes_total\":%.0f,\"bytes_dense\":%lld", total, in.bytes_dense);
        cli_json_key("problem", 0); cli_json_str(problem);
        cli_json_key("encode_s", 0); cli_json_num(t2 - t1, 3);
        cli_json_key("out", 0); cli_json_str(outp);
        printf("}\n");
    } else {
        double nz = in.nonzeros > 0 ? (double)in.nonzeros : 1;
        printf("%s: %lld x %lld %s, %lld nonzeros (%.1f%% sparse), read in %.2f s, encoded in %.2f s (one core)\n",
               pos[0], in.M, in.K, sp_tensor_format_name(w.format), in.nonzeros,
               100.0 * (1.0 - (double)in.nonzeros / ((double)in.M * in.K)), t1 - t0, t2 - t1);
        printf("  encoding   %s\n", sptune_slotfill_fixed(m));
        if (bitmap) {
            printf("  %-14s %6.2f%% of nonzeros %12lld bytes  %.3f of dense\n", "values", 100.0 * in.in_tc / nz,
                   in.bytes_tc, in.bytes_tc / dense);
            printf("  %-14s %21s %12lld bytes  %.3f of dense\n", "bitmaps", "", in.bytes_index, in.bytes_index / dense);
            printf("  %-14s %21s %12lld bytes  %.3f of dense\n", "padding", "", in.bytes_residual, in.bytes_residual / dense);
        } else {
            printf("  %-14s %6.2f%% of nonzeros %12lld bytes  %.3f of dense\n", "Sparse-TC", 100.0 * in.in_tc / nz,
                   in.bytes_tc, in.bytes_tc / dense);
            printf("  %-14s %6.2f%% of nonzeros %12lld bytes  %.3f of dense\n", "Slot-Filling", 100.0 * in.in_slots / nz,
                   in.bytes_slots, in.bytes_slots / dense);
            printf("  %-14s %6.2f%% of nonzeros %12lld bytes  %.3f of dense\n", "Residual", 100.0 * in.in_residual / nz,
                   in.bytes_residual, in.bytes_residual / dense);
            printf("  %-14s %21s %12lld bytes  %.3f of dense\n", "index", "", in.bytes_index, in.bytes_index / dense);
        }
        printf("  %-14s %21s %12.0f bytes  %.3f of dense (dense: %lld bytes)\n", "total", "", total, total / dense,
               in.bytes_dense);
        printf("  written to %s%s\n", outp, cli_get(cmd, "no-verify") ? "" : " (decoded back bit for bit first)");
        printf("  problem    %s (N: the largest batch; sptune best slotfill-spmm --shape ... shows what is served)\n",
               problem);
    }
    /* an encoding no smaller than ~0.9 of dense cannot beat a dense product that streams W as well */
    if (total > 0.9 * dense)
        fprintf(stderr, "sptune encode: warning: %s is %.1f%% sparse; its encoding is %.2f of dense bytes, so the dense "
                "product will be faster (Slot-Filling is for weights pruned to ~50%% or more)\n", pos[0],
                100.0 * (1.0 - (double)in.nonzeros / ((double)in.M * in.K)), total / dense);
out:
    sptune_slotfill_free(m);
    sp_tensor_free(&w);
    return rc;
}

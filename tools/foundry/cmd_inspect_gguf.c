/* foundry inspect FILE.gguf: a GGUF file's header, metadata and tensors. */
#include "cli.h"

#include "foundry/gguf.h"

#include <inttypes.h>
#include <string.h>

#define ARRAY_SHOWN 8   /* array elements printed before "... (N total)" */
#define STRING_SHOWN 80 /* string bytes printed before "... (N bytes)" */

/* A string on one line: control bytes escaped, long ones cut. */
static void print_str(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n && i < STRING_SHOWN; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            printf("\\n");
        else if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (n > STRING_SHOWN)
        printf("... (%zu bytes)", n);
}

static void print_value(const tm_gguf_value *v, int depth)
{
    tm_gguf_type t = tm_gguf_value_type(v);
    if (t == TM_GGUF_STRING) {
        size_t n = 0;
        const char *s = tm_gguf_value_str(v, &n);
        print_str(s ? s : "", s ? n : 0);
    } else if (t == TM_GGUF_ARRAY) {
        int64_t n = tm_gguf_array_len(v);
        printf("%s[", depth ? "" : "");
        for (int64_t j = 0; j < n && j < ARRAY_SHOWN; j++) {
            if (j)
                printf(", ");
            const tm_gguf_value *e = tm_gguf_array_get(v, j);
            if (e)
                print_value(e, depth + 1);
        }
        if (n > ARRAY_SHOWN)
            printf(", ... (%" PRId64 " total)", n);
        putchar(']');
    } else if (t == TM_GGUF_FLOAT32 || t == TM_GGUF_FLOAT64) {
        double d = 0;
        tm_gguf_value_f64(v, &d);
        printf("%.9g", d);
    } else if (t == TM_GGUF_BOOL) {
        uint64_t u = 0;
        tm_gguf_value_u64(v, &u);
        printf("%s", u ? "true" : "false");
    } else if (t == TM_GGUF_INT8 || t == TM_GGUF_INT16 || t == TM_GGUF_INT32 || t == TM_GGUF_INT64) {
        int64_t i = 0;
        tm_gguf_value_i64(v, &i);
        printf("%" PRId64, i);
    } else {
        uint64_t u = 0;
        tm_gguf_value_u64(v, &u);
        printf("%" PRIu64, u);
    }
}

int cli_inspect_gguf(const char *path)
{
    tm_gguf *g = tm_gguf_open(path);
    if (!g)
        return cli_lib_error("inspect");
    int64_t nkv = tm_gguf_n_kv(g), nt = tm_gguf_n_tensors(g);
    printf("%s: GGUF version %u, alignment %zu, data at byte %zu, %" PRId64 " metadata entr%s, %" PRId64
           " tensor%s\n",
           path, tm_gguf_version(g), tm_gguf_alignment(g), tm_gguf_data_offset(g), nkv, nkv == 1 ? "y" : "ies",
           nt, nt == 1 ? "" : "s");
    printf("metadata:\n");
    for (int64_t i = 0; i < nkv; i++) {
        const tm_gguf_value *v = tm_gguf_kv_value(g, i);
        tm_gguf_type t = tm_gguf_value_type(v);
        printf("  %s (%s", tm_gguf_key(g, i), tm_gguf_type_name(t));
        if (t == TM_GGUF_ARRAY)
            printf(" of %s", tm_gguf_type_name(tm_gguf_array_type(v)));
        printf("): ");
        print_value(v, 0);
        putchar('\n');
    }
    printf("tensors:\n");
    uint64_t total = 0;
    for (int64_t i = 0; i < nt; i++) {
        tm_gguf_tensor_info ti;
        if (tm_gguf_tensor_info_at(g, i, &ti) != TM_OK)
            continue;
        char shape[96], type[32];
        int k = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < ti.ndim && k < (int)sizeof shape; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%" PRId64, d ? ", " : "", ti.shape[d]);
        if (k < (int)sizeof shape)
            snprintf(shape + k, sizeof shape - (size_t)k, "]");
        if ((int)ti.dtype >= 0)
            snprintf(type, sizeof type, "%s", tm_dtype_name(ti.dtype));
        else
            snprintf(type, sizeof type, "ggml type %u", ti.ggml_type);
        printf("  %-48s %-8s %-16s %10zu bytes at %zu\n", ti.name, type, shape, ti.nbytes, ti.offset);
        total += ti.nbytes;
    }
    printf("total: %" PRIu64 " bytes of tensor data\n", total);
    tm_gguf_close(g);
    return CLI_OK;
}

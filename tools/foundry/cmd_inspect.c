/* foundry inspect FILE: what a safetensors file holds. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* A GGUF file by its magic (any name), else by its name. */
static bool is_gguf(const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    bool yes = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "GGUF", 4);
    if (f)
        fclose(f);
    return yes || (!f && cli_ends_with(path, ".gguf"));
}

static void print_bytes(uint64_t b)
{
    if (b >= (1ull << 30))
        printf("%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        printf("%.2f MiB", (double)b / (1ull << 20));
    else if (b >= 1024)
        printf("%.1f KiB", (double)b / 1024);
    else
        printf("%llu B", (unsigned long long)b);
}

/* Names are UTF-8 but may hold control characters: escape them so one tensor
 * stays one line. */
static void print_name(const char *s)
{
    int w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, w++) {
        if (*p < 0x20 || *p == 0x7f) {
            printf("\\x%02x", *p);
            w += 3;
        } else {
            putchar(*p);
        }
    }
    for (; w < 48; w++)
        putchar(' ');
}

int cmd_inspect(int argc, char **argv)
{
    cli_cmd cmd = {
        .name = "inspect", .usage = "inspect FILE",
        .summary = "Lists every tensor of a safetensors file (name, dtype, shape, bytes), the totals\n"
                   "and the file's __metadata__; for a GGUF file (by its magic) the version, alignment,\n"
                   "metadata (long arrays and strings cut short) and tensors (name, type, shape, bytes,\n"
                   "offset).  The whole header is validated first.",
        .flags = NULL, .n_flags = 0, .min_pos = 1, .max_pos = 1,
    };
    const char **pos = NULL;
    int npos = 0, rc = cli_parse(&cmd, argc, argv, &pos, &npos);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    if (is_gguf(pos[0])) {
        rc = cli_inspect_gguf(pos[0]);
        goto done;
    }
    tm_safetensors *f = tm_safetensors_open(pos[0]);
    if (!f) {
        rc = cli_lib_error("inspect");
        goto done;
    }
    int n = tm_safetensors_count(f);
    uint64_t total = 0, data_start = 0;
    int64_t numel_total = 0;
    printf("%s: %d tensor%s\n", pos[0], n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        uint64_t b, e;
        tm_safetensors_offsets(f, i, &b, &e, &data_start);
        int nd = tm_safetensors_ndim(f, i);
        const int64_t *sh = tm_safetensors_shape(f, i);
        int64_t numel = 1;
        printf("  ");
        print_name(tm_safetensors_name(f, i));
        printf(" %-8s [", tm_safetensors_dtype_name(f, i));
        for (int d = 0; d < nd; d++) {
            printf("%s%lld", d ? ", " : "", (long long)sh[d]);
            numel *= sh[d];
        }
        printf("]  %llu bytes\n", (unsigned long long)(e - b));
        total += e - b;
        numel_total += numel;
    }
    printf("total: %lld elements, ", (long long)numel_total);
    print_bytes(total);
    if (n > 0)
        printf(" of tensor data (header %llu bytes)\n", (unsigned long long)data_start);
    else
        printf(" of tensor data\n");
    if (tm_safetensors_has_metadata(f)) {
        int m = tm_safetensors_metadata_count(f);
        printf("metadata: %d entr%s\n", m, m == 1 ? "y" : "ies");
        for (int i = 0; i < m; i++)
            printf("  %s: %s\n", tm_safetensors_metadata_key(f, i), tm_safetensors_metadata_value(f, i));
    } else {
        printf("metadata: none\n");
    }
    tm_safetensors_close(f);
done:
    free(pos);
    return rc;
}

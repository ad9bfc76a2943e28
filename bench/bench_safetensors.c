/*
 * bench_safetensors.c — safetensors save and load throughput.
 *
 *   bench_safetensors [--mb N] [--path FILE] [--keep]
 *
 * Writes a file of about N MiB (default 1024) of F32 tensors (16 tensors,
 * default /tmp/foundry_bench_<pid>.safetensors), then times:
 *   save          tm_safetensors_save (includes fsync and rename)
 *   first_element open + get one tensor (a view of the mapping) + read its
 *                 first element + close: no copy, so it should not depend
 *                 on the file size
 *   full_load     open + tm_safetensors_load of every tensor (copies, so
 *                 every byte is read) + close
 * and prints one JSON object per line.  Reads are warm (the file is in the
 * page cache after saving); each timing is the best of several runs.  The
 * file is removed at the end unless --keep is given.
 */
#include "foundry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NT 16

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const char *what)
{
    fprintf(stderr, "bench_safetensors: %s: %s\n", what, tm_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    long mb = 1024;
    char path[512];
    bool keep = false;
    snprintf(path, sizeof path, "/tmp/foundry_bench_%ld.safetensors",
             (long)getpid());
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = atol(argv[++i]);
        else if (!strcmp(argv[i], "--path") && i + 1 < argc)
            snprintf(path, sizeof path, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--keep")) keep = true;
        else {
            fprintf(stderr, "usage: %s [--mb N] [--path FILE] [--keep]\n",
                    argv[0]);
            return 2;
        }
    }
    if (mb < 1) mb = 1;
    int64_t per = mb * (1 << 20) / 4 / NT; /* floats per tensor */
    tm_tensor *t[NT];
    char names[NT][32];
    const char *np[NT];
    for (int i = 0; i < NT; i++) {
        t[i] = tm_empty((int64_t[]){per / 1024, 1024}, 2, TM_F32);
        if (!t[i]) return die("allocating");
        float *d = tm_data(t[i]);
        for (int64_t k = 0; k < tm_numel(t[i]); k++) d[k] = (float)(k + i);
        snprintf(names[i], sizeof names[i], "layer.%02d.weight", i);
        np[i] = names[i];
    }
    size_t bytes = 0;
    for (int i = 0; i < NT; i++) bytes += tm_nbytes(t[i]);
    double mib = (double)bytes / (1 << 20);

    double best_save = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        if (tm_safetensors_save(path, np, t, NT, (const char *[]){"bench"},
                                (const char *[]){"foundry"}, 1))
            return die("save");
        double dt = now() - t0;
        if (dt < best_save) best_save = dt;
    }
    printf("{\"bench\":\"safetensors\",\"op\":\"save\",\"bytes\":%zu,"
           "\"seconds\":%.6f,\"mb_per_s\":%.1f}\n", bytes, best_save,
           mib / best_save);

    double best_first = 1e30;
    volatile float sink = 0;
    for (int r = 0; r < 20; r++) {
        double t0 = now();
        tm_safetensors *f = tm_safetensors_open(path);
        if (!f) return die("open");
        tm_tensor *v = tm_safetensors_get(f, names[NT / 2]);
        if (!v) return die("get");
        sink += ((const float *)tm_data(v))[0];
        tm_free(v);
        tm_safetensors_close(f);
        double dt = now() - t0;
        if (dt < best_first) best_first = dt;
    }
    printf("{\"bench\":\"safetensors\",\"op\":\"first_element\",\"bytes\":%zu,"
           "\"seconds\":%.6f}\n", bytes, best_first);

    double best_full = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        tm_safetensors *f = tm_safetensors_open(path);
        if (!f) return die("open");
        for (int i = 0; i < NT; i++) {
            tm_tensor *c = tm_safetensors_load(f, names[i]);
            if (!c) return die("load");
            sink += ((const float *)tm_data(c))[tm_numel(c) - 1];
            tm_free(c);
        }
        tm_safetensors_close(f);
        double dt = now() - t0;
        if (dt < best_full) best_full = dt;
    }
    printf("{\"bench\":\"safetensors\",\"op\":\"full_load\",\"bytes\":%zu,"
           "\"seconds\":%.6f,\"mb_per_s\":%.1f}\n", bytes, best_full,
           mib / best_full);
    printf("{\"bench\":\"safetensors\",\"op\":\"first_over_full\","
           "\"ratio\":%.6f}\n", best_first / best_full);

    for (int i = 0; i < NT; i++) tm_free(t[i]);
    if (!keep) unlink(path);
    return sink == -1.0f; /* keeps the reads */
}

/* standalone.h — the `main` of a fuzz target built without libFuzzer
 * (-DTM_FUZZ_STANDALONE): runs LLVMFuzzerTestOneInput over every file
 * named on the command line (directories: every plain file in them), so
 * CI can replay the committed corpus (make fuzz-corpus).  Include it at
 * the end of a target after defining TM_FUZZ_NAME ("fuzz_idx"). */
#ifndef FOUNDRY_FUZZ_STANDALONE_H
#define FOUNDRY_FUZZ_STANDALONE_H
#ifdef TM_FUZZ_STANDALONE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, TM_FUZZ_NAME ": cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
    }
    fclose(fp);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Runs every file named (directories: every plain file in them). */
int main(int argc, char **argv)
{
    int files = 0, errors = 0;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0) {
            fprintf(stderr, TM_FUZZ_NAME ": no such path %s\n", argv[a]);
            errors++;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            errors += run_file(argv[a]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[a], e->d_name);
            if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
            errors += run_file(p);
            files++;
        }
        if (d) closedir(d);
    }
    printf(TM_FUZZ_NAME ": %d inputs, %d errors\n", files, errors);
    return errors || !files;
}
#endif

#endif

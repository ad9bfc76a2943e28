/* tmpfiles.c — see tmpfiles.h. */
#include "tmpfiles.h"
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool tt_tmpdir(char *dir)
{
    snprintf(dir, TT_PATH_MAX, "/tmp/foundry_test_XXXXXX");
    if (!mkdtemp(dir)) {
        tt_fail(__FILE__, __LINE__, "mkdtemp failed");
        return false;
    }
    return true;
}

char *tt_path(char *out, const char *dir, const char *name)
{
    snprintf(out, TT_PATH_MAX, "%s/%s", dir, name);
    return out;
}

void tt_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[TT_PATH_MAX];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlink(tt_path(p, dir, e->d_name));
        closedir(d);
    }
    rmdir(dir);
}

int tt_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

bool tt_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

unsigned char *tt_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (len < cap) break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) *n = len;
    return buf;
}

/*
 * tmpfiles.h — scratch directories and whole-file reads for tests that
 * touch the file system.  Every test that makes a directory removes it.
 */
#ifndef FOUNDRY_TEST_TMPFILES_H
#define FOUNDRY_TEST_TMPFILES_H

#include <stdbool.h>
#include <stddef.h>

#define TT_PATH_MAX 256

/* Creates a fresh directory /tmp/foundry_test_XXXXXX; its path goes to
 * dir[TT_PATH_MAX].  False (with a test failure recorded) on error. */
bool tt_tmpdir(char *dir);
/* out[TT_PATH_MAX] = dir + "/" + name; returns out. */
char *tt_path(char *out, const char *dir, const char *name);
/* Removes every plain file in dir, then dir itself. */
void tt_rmdir(const char *dir);
/* Number of entries in dir other than "." and ".." (-1 on error). */
int tt_count_entries(const char *dir);
/* Writes n bytes to path (replacing it); false on error. */
bool tt_write_file(const char *path, const void *data, size_t n);
/* The whole file in a malloc'd buffer (free with free()), size in *n;
 * NULL on error. */
unsigned char *tt_read_file(const char *path, size_t *n);

#endif

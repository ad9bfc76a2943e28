/*
 * fuzz_trainer_state.c — fuzz target for the reader of a run directory's
 * trainer.json (tools/foundry/train_ckpt.c: ckpt_read_trainer), the one
 * parser of outside bytes in the `foundry` program.
 *
 * With libFuzzer (make fuzz-trainer-state) LLVMFuzzerTestOneInput is the
 * entry point; built with -DTM_FUZZ_STANDALONE it runs every file named on
 * its command line (make fuzz-corpus).
 *
 * Each input is written as trainer.json into a private directory and read
 * back against a command with one flag of every kind.  Invariants: the
 * result is CLI_OK or CLI_RUNTIME (no flag is given on the "command line",
 * so no usage error); a runtime failure leaves a negative status and a
 * message; on success the step and loader position are >= 0, every flag
 * holds a value of its kind (the list's strings are non-NULL), and the
 * restored strings stay readable until ckpt_release.  A broken invariant
 * aborts (a finding), as does a crash or a sanitizer report.
 */
#include "../../tools/foundry/train.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_ASSERT(c)                                                           \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "fuzz_trainer_state: invariant failed: %s (%s:%d)\n", \
                    #c, __FILE__, __LINE__);                                     \
            abort();                                                             \
        }                                                                        \
    } while (0)

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_trainer_state.XXXXXX");
        FUZZ_ASSERT(mkdtemp(dir));
    }
    char path[128];
    snprintf(path, sizeof path, "%s/trainer.json", dir);
    FILE *f = fopen(path, "wb");
    FUZZ_ASSERT(f);
    FUZZ_ASSERT(fwrite(data, 1, size, f) == size);
    FUZZ_ASSERT(fclose(f) == 0);

    cli_strs list = {0};
    int64_t steps = 7;
    double lr = 0.5;
    const char *out = NULL;
    bool rope = false;
    cli_flag flags[] = {
        {.name = "--data", .kind = CLI_STRS, .dst = &list, .meta = "P", .help = "h"},
        {.name = "--steps", .kind = CLI_INT, .dst = &steps, .lo = 1, .hi = 1e12, .meta = "N", .help = "h"},
        {.name = "--lr", .kind = CLI_DOUBLE, .dst = &lr, .lo = 0, .hi = 10, .meta = "LR", .help = "h"},
        {.name = "--out", .kind = CLI_STR, .dst = &out, .meta = "D", .help = "h"},
        {.name = "--rope", .kind = CLI_BOOL, .dst = &rope, .help = "h"},
    };
    cli_cmd cmd = {.name = "train", .usage = "u", .summary = "s", .flags = flags, .n_flags = 5,
                   .min_pos = 0, .max_pos = 0};
    static const char *const may_change[] = {"--steps", NULL};
    train_state st = {0};
    tm_clear_error();
    int rc = ckpt_read_trainer(dir, &st, &cmd, may_change);
    FUZZ_ASSERT(rc == CLI_OK || rc == CLI_RUNTIME);
    if (rc == CLI_RUNTIME) {
        FUZZ_ASSERT(tm_last_status() < 0 && tm_last_error()[0] != '\0');
    } else {
        FUZZ_ASSERT(st.step >= 0 && st.loader_position >= 0);
        for (int i = 0; i < list.n; i++)
            FUZZ_ASSERT(list.v[i] && strlen(list.v[i]) < size);
        FUZZ_ASSERT(!out || strlen(out) < size);
    }
    cli_strs_free(&list);
    ckpt_release();
    return 0;
}

#define TM_FUZZ_NAME "fuzz_trainer_state"
#include "standalone.h"

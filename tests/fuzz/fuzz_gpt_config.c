/*
 * fuzz_gpt_config.c — fuzz target for the model's config.json reader
 * (tm_gpt_config_from_json) and writer.
 *
 * libFuzzer entry point, or with -DTM_FUZZ_STANDALONE a plain program over
 * the committed corpus (make fuzz-corpus).  Any accepted input must pass
 * the range check, write back to JSON, and read back to a config that
 * writes the same text (the writer is a fixed point after one round).
 */
#include "foundry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_gpt_config: invariant failed: %s (%s:%d)"   \
                    "\n", #c, __FILE__, __LINE__);                            \
            abort();                                                          \
        }                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tm_gpt_config c, back;
    tm_status st = tm_gpt_config_from_json((const char *)data, size, &c);
    if (st) {
        FUZZ_ASSERT(st == TM_EFORMAT || st == TM_EINVAL ||
                    st == TM_EUNSUPPORTED || st == TM_ENOMEM);
        FUZZ_ASSERT(strstr(tm_last_error(), "tm_gpt_config_from_json: "));
        return 0;
    }
    FUZZ_ASSERT(tm_gpt_config_check(&c) == TM_OK);
    char *json = tm_gpt_config_to_json(&c);
    if (!json) {
        FUZZ_ASSERT(tm_last_status() == TM_ENOMEM);
        return 0;
    }
    FUZZ_ASSERT(tm_gpt_config_from_json(json, strlen(json), &back) == TM_OK);
    char *again = tm_gpt_config_to_json(&back);
    FUZZ_ASSERT(again && !strcmp(json, again));
    free(json);
    free(again);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_gpt_config"
#include "standalone.h"

/*
 * fuzz_quant_desc.c — fuzz target for the two parsers of outside strings
 * in quantized model files and the quantize command: the
 * "foundry.quant.<name>" descriptions of a safetensors file
 * ("<dtype>[d0,...]") and the glob rules of type plans (`--keep`
 * patterns against tensor names).
 *
 * Input: description '\n' pattern '\n' name.  An accepted description
 * must name a quantized dtype with 1..4 non-negative dims and print back
 * to itself when written canonically; the glob matcher must agree with a
 * dynamic-programming matcher (on inputs of up to 64 characters) and
 * give the rule's dtype exactly when they match.
 */
#include "foundry.h"

#include "../../nn/gpt_impl.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                        \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "fuzz_quant_desc: invariant failed: %s (%s:%d)\n",\
                    #c, __FILE__, __LINE__);                                  \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* The textbook dynamic program: m[i][j] = pattern suffix i matches name
 * suffix j.  Quadratic, for inputs of at most REF_MAX characters. */
#define REF_MAX 64
static bool ref_glob(const char *p, const char *s)
{
    size_t np = strlen(p), ns = strlen(s);
    static bool m[REF_MAX + 1][REF_MAX + 1];
    for (size_t i = np + 1; i-- > 0;)
        for (size_t j = ns + 1; j-- > 0;) {
            if (i == np) m[i][j] = j == ns;
            else if (p[i] == '*') m[i][j] = m[i + 1][j] || (j < ns && m[i][j + 1]);
            else m[i][j] = j < ns && (p[i] == '?' || p[i] == s[j]) && m[i + 1][j + 1];
        }
    return m[0][0];
}

static void check_desc(const char *d)
{
    tm_dtype dt;
    int64_t shape[4];
    int nd = -1;
    if (tm__gpt_parse_quant_desc(d, &dt, shape, &nd) != TM_OK) return;
    FUZZ_ASSERT(tm_dtype_is_quantized(dt));
    FUZZ_ASSERT(nd >= 1 && nd <= 4);
    char back[160];
    int k = snprintf(back, sizeof back, "%s[", tm_dtype_name(dt));
    for (int i = 0; i < nd; i++) {
        FUZZ_ASSERT(shape[i] >= 0);
        k += snprintf(back + k, sizeof back - (size_t)k, "%s%" PRId64,
                      i ? "," : "", shape[i]);
    }
    snprintf(back + k, sizeof back - (size_t)k, "]");
    /* Canonical input (lower-case name, no leading zeros) reads back as
     * itself; anything accepted reparses to the same values. */
    tm_dtype dt2;
    int64_t s2[4];
    int nd2 = -1;
    FUZZ_ASSERT(tm__gpt_parse_quant_desc(back, &dt2, s2, &nd2) == TM_OK);
    FUZZ_ASSERT(dt2 == dt && nd2 == nd);
    for (int i = 0; i < nd; i++) FUZZ_ASSERT(s2[i] == shape[i]);
}

static void check_glob(const char *pat, const char *name)
{
    tm_quant_rule r = {pat, TM_Q8_0};
    tm_quant_plan plan = {TM_F16, TM_F16, &r, 1, TM_F32};
    int64_t shape[2] = {2, 64};
    tm_dtype got = tm_quant_plan_pick(&plan, name, shape, 2, NULL);
    FUZZ_ASSERT(got == TM_Q8_0 || got == TM_F16);
    if (strlen(pat) <= REF_MAX && strlen(name) <= REF_MAX)
        FUZZ_ASSERT((got == TM_Q8_0) == ref_glob(pat, name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *pat = strchr(buf, '\n'), *name = NULL;
    if (pat) {
        *pat++ = '\0';
        name = strchr(pat, '\n');
        if (name) *name++ = '\0';
    }
    check_desc(buf);
    if (pat && name) check_glob(pat, name);
    tm_clear_error();
    free(buf);
    return 0;
}

#define TM_FUZZ_NAME "fuzz_quant_desc"
#include "standalone.h"

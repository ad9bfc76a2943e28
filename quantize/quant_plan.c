/*
 * quant_plan.c — which dtype each tensor of a model gets when it is
 * quantized (foundry/quantize.h): glob rules, the 1-D / >= 2-D defaults,
 * the fallback for rows the type's block does not divide, and the named
 * mixes of `foundry quantize --type`.
 */
#include "foundry/quantize.h"

#include "../tensor/runtime/runtime_impl.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

/* `*` any run (possibly empty), `?` one character.  Iterative with one
 * backtrack point: linear in practice, never recursive on hostile input. */
static bool glob_match(const char *pat, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*pat == '*') {
            star = pat++;
            resume = s;
        } else if (*pat == '?' || *pat == *s) {
            pat++;
            s++;
        } else if (star) {
            pat = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*pat == '*') pat++;
    return *pat == '\0';
}

/* True when a row of `n` values is whole blocks of `dt` (always for dense
 * dtypes). */
static bool rows_fit(tm_dtype dt, int64_t n)
{
    if (!tm_dtype_is_quantized(dt)) return true;
    int64_t b = tm_dtype_block_elems(dt);
    return b > 0 && n > 0 && n % b == 0;
}

tm_dtype tm_quant_plan_pick(const tm_quant_plan *plan, const char *name,
                            const int64_t *shape, int ndim, bool *fell_back)
{
    if (fell_back) *fell_back = false;
    if (!plan || !name || (ndim > 0 && !shape) || ndim < 0) {
        TM_ERR(TM_EINVAL, "plan, name or shape is NULL (ndim %d)", ndim);
        return (tm_dtype)-1;
    }
    tm_dtype dt = ndim >= 2 ? plan->default_type : plan->vector_type;
    for (int i = 0; i < plan->n_rules; i++) {
        const char *p = plan->rules[i].pattern;
        if (p && glob_match(p, name)) {
            dt = plan->rules[i].dtype;
            break;
        }
    }
    /* A 0-d tensor has no row: it stays as it is stored, in F32. */
    if (ndim == 0) return tm_dtype_is_quantized(dt) ? TM_F32 : dt;
    int64_t row = shape[ndim - 1];
    if (rows_fit(dt, row)) return dt;
    if (fell_back) *fell_back = true;
    return rows_fit(plan->fallback_type, row) ? plan->fallback_type : TM_F32;
}

/* llama.cpp's Q4_K_M / Q5_K_M give Q6_K to the output head and to half of
 * the attn_v and ffn_down layers (its use_more_bits: the first and last
 * eighth and every third layer between, which needs the layer count).  A
 * static plan takes the even layers instead: also half, spread the same
 * way over depth.  Token embeddings get Q6_K too: llama.cpp does so when
 * they are tied to the head (the usual case for small models, and the
 * head is the most error-sensitive matrix); untied, a gather's error goes
 * straight into the residual stream, and the only cost is file size. */
#define EVEN_LAYERS(suffix)                                                 \
    {"model.layers.*0." suffix, TM_Q6_K}, {"model.layers.*2." suffix, TM_Q6_K}, \
    {"model.layers.*4." suffix, TM_Q6_K}, {"model.layers.*6." suffix, TM_Q6_K}, \
    {"model.layers.*8." suffix, TM_Q6_K}

static const tm_quant_rule K_M_RULES[] = {
    {"lm_head.weight", TM_Q6_K},
    {"model.embed_tokens.weight", TM_Q6_K},
    EVEN_LAYERS("self_attn.v_proj.weight"),
    EVEN_LAYERS("mlp.down_proj.weight"),
};
#define N_K_M_RULES ((int)(sizeof K_M_RULES / sizeof K_M_RULES[0]))

typedef struct named_plan {
    const char *name;
    tm_dtype type;
    tm_dtype fallback;  /* llama.cpp's fallbacks for rows not of 256 */
    bool k_m;
} named_plan;

static const named_plan PLANS[] = {
    {"q8_0", TM_Q8_0, TM_F32, false}, {"q4_0", TM_Q4_0, TM_F32, false},
    {"q4_1", TM_Q4_1, TM_F32, false}, {"q5_0", TM_Q5_0, TM_F32, false},
    {"q5_1", TM_Q5_1, TM_F32, false}, {"q4_k", TM_Q4_K, TM_Q5_0, false},
    {"q5_k", TM_Q5_K, TM_Q5_1, false}, {"q6_k", TM_Q6_K, TM_Q8_0, false},
    {"q4_k_m", TM_Q4_K, TM_Q5_0, true}, {"q5_k_m", TM_Q5_K, TM_Q5_1, true},
};
#define N_PLANS ((int)(sizeof PLANS / sizeof PLANS[0]))

static bool same_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

tm_status tm_quant_plan_named(const char *name, tm_quant_plan *plan)
{
    if (!name || !plan) return TM_ERR(TM_EINVAL, "name or plan is NULL");
    for (int i = 0; i < N_PLANS; i++) {
        if (!same_ci(name, PLANS[i].name)) continue;
        tm_quant_plan p = {0};
        p.default_type = PLANS[i].type;
        p.vector_type = TM_F32;
        p.fallback_type = PLANS[i].fallback;
        if (PLANS[i].k_m) {
            p.rules = K_M_RULES;
            p.n_rules = N_K_M_RULES;
        }
        *plan = p;
        return TM_OK;
    }
    return TM_ERR(TM_EINVAL, "unknown quantization type '%.64s' (known: q8_0, "
                  "q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m)",
                  name);
}

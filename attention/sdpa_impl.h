/*
 * sdpa_impl.h — what the files of tm_sdpa share (internal): the geometry
 * of one call, the kernel views of its operands and the two paths (the
 * fused entries in sdpa.c, the composed ops in sdpa_composed.c).
 */
#ifndef FOUNDRY_ATTENTION_SDPA_IMPL_H
#define FOUNDRY_ATTENTION_SDPA_IMPL_H

#include "foundry/attention.h"
#include "foundry/backend.h"

#include "../tensor/autograd/autograd_impl.h"
#include "../tensor/autograd/backward.h"

/* The sizes of one call.  The caller's leading dims (before H) fold into
 * b; lead keeps them for the result's shape. */
typedef struct tm__sdpa_geom {
    int nlead;
    int64_t lead[TM_MAX_DIMS];
    int64_t b, h, hkv, tq, tk, d, dv;
} tm__sdpa_geom;

/* An operand as the kernels see it: a tensor (a new reference: the
 * caller's own or a converted / compacted copy) and its 4-d view. */
typedef struct tm__sdpa_opnd {
    tm_tensor *t;
    tm_buf b;
} tm__sdpa_opnd;

/* Validates q, k, v and the options (everything tm_sdpa's header lists)
 * and fills *g and the kernel parameters *p (scale resolved, rng not yet
 * taken).  TM_OK or the error, named for fn. */
tm_status tm__sdpa_check(const char *fn, const tm_tensor *q,
                         const tm_tensor *k, const tm_tensor *v,
                         const tm_sdpa_opts *o, tm__sdpa_geom *g,
                         tm_attn_params *p);

/* t as a kernel operand in dtype dt: its leading g->nlead dims folded
 * into one, a unit last stride; converted or compacted only when needed.
 * Runs with grad mode off (the node of tm_sdpa records the inputs). */
tm_status tm__sdpa_operand(const char *fn, const tm_tensor *t, tm_dtype dt,
                           int nlead, tm__sdpa_opnd *o);
/* The mask as a kernel operand broadcast to (B, H, Tq, Tk): stride 0 over
 * its broadcast dims; a float mask in dtype ct, a BOOL one kept, or made
 * the additive float mask (0 / -inf in ct) when as_float. */
tm_status tm__sdpa_mask_operand(const char *fn, const tm_tensor *mask,
                                const tm__sdpa_geom *g, tm_dtype ct,
                                bool as_float, tm__sdpa_opnd *o);

/* Whether AUTO takes the composed path for this problem (grad: the
 * backward will run): the one place the dispatch rule lives. */
bool tm__sdpa_prefer_composed(const tm__sdpa_geom *g, bool grad);

/* The composed path (matmul, mask, softmax, dropout, matmul through
 * ordinary differentiable ops) on checked inputs; p carries the scale and
 * the dropout state already taken from the generator.  New reference. */
tm_tensor *tm__sdpa_composed(const char *fn, const tm_tensor *q,
                             const tm_tensor *k, const tm_tensor *v,
                             const tm_tensor *mask, const tm__sdpa_geom *g,
                             const tm_attn_params *p);

#endif

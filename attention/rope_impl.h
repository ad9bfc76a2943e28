/*
 * rope_impl.h — the host-side mathematics of rotary embeddings (internal):
 * the checks of a tm_rope_config and its frequencies, in double, shared by
 * the tm_rope object (rope.c) and its frequency rules (rope_freq.c).
 */
#ifndef FOUNDRY_ATTENTION_ROPE_IMPL_H
#define FOUNDRY_ATTENTION_ROPE_IMPL_H

#include "foundry/attention.h"

#include "../tensor/core/tensor_impl.h"

/* TM_OK, or TM_EINVAL naming fn, the field and its value. */
tm_status tm__rope_check(const char *fn, const tm_rope_config *c);

/* The rotary_dim / 2 frequencies of c into inv (rad per position) and the
 * factor multiplying cos and sin into *attn.  len: the length DYNAMIC is
 * made for (ignored by the other kinds). */
void tm__rope_freqs(const tm_rope_config *c, int64_t len, double *inv,
                    double *attn);

#endif

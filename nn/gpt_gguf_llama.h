/*
 * gpt_gguf_llama.h — llama.cpp-layout GGUF models (gpt_gguf_llama*.c).
 * Internal; never installed.
 */
#ifndef FOUNDRY_NN_GPT_GGUF_LLAMA_H
#define FOUNDRY_NN_GPT_GGUF_LLAMA_H

#include "gpt_impl.h"

#include "foundry/gguf.h"

/* An integer key (any GGUF integer type; bool, float, string or array is
 * TM_EFORMAT naming the key and its type) >= lo into *out; absent: TM_OK
 * with *out unchanged unless required (TM_EFORMAT "missing key K"). */
tm_status tm__gguf_key_int(const tm_gguf *g, const char *path, const char *key,
                           bool required, int64_t lo, int64_t *out,
                           const char *fn);
/* The configuration the <arch>.* keys give (a checked config), errors
 * naming the file and the key. */
tm_status tm__gguf_llama_config(const tm_gguf *g, const char *path,
                                const char *arch, tm_gpt_config *out,
                                const char *fn);
/* The model of config c with g's tensors (llama.cpp names) under
 * Foundry's names: quantized ones zero-copy views of the mapping, dense
 * ones copied to F32.  Missing, mis-shaped and unexpected tensors are
 * TM_EFORMAT naming the tensor. */
tm_gpt *tm__gguf_llama_build(const tm_gguf *g, const char *path,
                             const tm_gpt_config *c, const char *fn);
/* By general.architecture: "llama" builds the model; "foundry_gpt" sets
 * *foundry and returns NULL without an error (tm__gpt_load_file reads
 * those); anything else, or no key, NULL with an error. */
tm_gpt *tm__gpt_load_gguf_arch(tm_gguf *g, const char *path, bool *foundry,
                               const char *fn);

#endif

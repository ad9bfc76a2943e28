/*
 * foundry.h — the whole public API of Foundry.
 *
 * Link with -lfoundry -lpthread -lm.  No global initialisation is needed.
 * Module manuals: foundry/base.h (errors, logging, memory, threads),
 * foundry/tensor.h (tensors and views), foundry/random.h (RNG),
 * foundry/ops.h (math), foundry/autograd.h (gradients), foundry/nn.h
 * (parameters, initialisers, layers), foundry/nn_functional.h (losses,
 * conv, pooling), foundry/optim.h (optimizers, schedules, clipping),
 * foundry/io.h (safetensors, IDX), foundry/attention.h (attention, RoPE,
 * KV cache), foundry/models.h (GPT / Llama models), foundry/bert.h (BERT
 * encoders, sentence embeddings), foundry/backend.h (device backends).
 */
#ifndef FOUNDRY_H
#define FOUNDRY_H

#include "foundry/base.h"
#include "foundry/tensor.h"
#include "foundry/random.h"
#include "foundry/ops.h"
#include "foundry/autograd.h"
#include "foundry/nn.h"
#include "foundry/nn_functional.h"
#include "foundry/optim.h"
#include "foundry/io.h"
#include "foundry/backend.h"
#include "foundry/attention.h"
#include "foundry/data.h"
#include "foundry/tokenizer.h"
#include "foundry/models.h"
#include "foundry/bert.h"
#include "foundry/gguf.h"
#include "foundry/quantize.h"
#include "foundry/swarm.h"

#endif

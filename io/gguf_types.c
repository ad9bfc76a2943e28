/*
 * gguf_types.c — the ggml tensor types GGUF files name (every one, so the
 * sizes of types Foundry cannot compute with still validate) and the
 * metadata value types.  The block sizes and bytes are the ones the gguf
 * Python package publishes (GGML_QUANT_SIZES, gguf/constants.py), except
 * Q8_1, whose table entry there predates ggml's 36-byte block.
 */
#include "gguf_impl.h"

static const tm__gguf_ggml_type ggml_types[] = {
    {0, "F32", 1, 4, TM_F32},
    {1, "F16", 1, 2, TM_F16},
    {2, "Q4_0", 32, 18, TM_Q4_0},
    {3, "Q4_1", 32, 20, TM_Q4_1},
    {6, "Q5_0", 32, 22, TM_Q5_0},
    {7, "Q5_1", 32, 24, TM_Q5_1},
    {8, "Q8_0", 32, 34, TM_Q8_0},
    {9, "Q8_1", 32, 36, TM_Q8_1}, /* half2 + 32: ggml's block */
    {10, "Q2_K", 256, 84, -1},
    {11, "Q3_K", 256, 110, -1},
    {12, "Q4_K", 256, 144, TM_Q4_K},
    {13, "Q5_K", 256, 176, TM_Q5_K},
    {14, "Q6_K", 256, 210, TM_Q6_K},
    {15, "Q8_K", 256, 292, TM_Q8_K},
    {16, "IQ2_XXS", 256, 66, -1},
    {17, "IQ2_XS", 256, 74, -1},
    {18, "IQ3_XXS", 256, 98, -1},
    {19, "IQ1_S", 256, 50, -1},
    {20, "IQ4_NL", 32, 18, -1},
    {21, "IQ3_S", 256, 110, -1},
    {22, "IQ2_S", 256, 82, -1},
    {23, "IQ4_XS", 256, 136, -1},
    {24, "I8", 1, 1, TM_I8},
    {25, "I16", 1, 2, TM_I16},
    {26, "I32", 1, 4, TM_I32},
    {27, "I64", 1, 8, TM_I64},
    {28, "F64", 1, 8, TM_F64},
    {29, "IQ1_M", 256, 56, -1},
    {30, "BF16", 1, 2, TM_BF16},
    {34, "TQ1_0", 256, 54, -1},
    {35, "TQ2_0", 256, 66, -1},
    {39, "MXFP4", 32, 17, -1},
    {40, "NVFP4", 64, 36, -1},
    {41, "Q1_0", 128, 18, -1},
};

#define N_GGML_TYPES (sizeof ggml_types / sizeof *ggml_types)

const tm__gguf_ggml_type *tm__gguf_ggml_type_of(uint32_t id)
{
    for (size_t i = 0; i < N_GGML_TYPES; i++)
        if (ggml_types[i].id == id) return &ggml_types[i];
    return NULL;
}

int tm_gguf_type_of_dtype(tm_dtype dt)
{
    for (size_t i = 0; i < N_GGML_TYPES; i++)
        if (ggml_types[i].dtype >= 0 && ggml_types[i].dtype == (int)dt)
            return (int)ggml_types[i].id;
    return -1;
}

int tm_dtype_of_gguf_type(uint32_t ggml_type)
{
    const tm__gguf_ggml_type *t = tm__gguf_ggml_type_of(ggml_type);
    return t ? t->dtype : -1;
}

const char *tm_gguf_type_name(tm_gguf_type t)
{
    static const char *const names[] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64"};
    if ((unsigned)t >= sizeof names / sizeof *names) return "invalid";
    return names[t];
}

size_t tm__gguf_scalar_size(uint32_t type)
{
    switch (type) {
    case TM_GGUF_UINT8: case TM_GGUF_INT8: case TM_GGUF_BOOL: return 1;
    case TM_GGUF_UINT16: case TM_GGUF_INT16: return 2;
    case TM_GGUF_UINT32: case TM_GGUF_INT32: case TM_GGUF_FLOAT32: return 4;
    case TM_GGUF_UINT64: case TM_GGUF_INT64: case TM_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

void tm__gguf_scalar_load(tm_gguf_value *v, uint32_t type,
                          const unsigned char *p)
{
    size_t n = tm__gguf_scalar_size(type);
    uint64_t u = 0;
    for (size_t k = n; k-- > 0;) u = (u << 8) | p[k];
    v->type = (uint8_t)type;
    switch (type) {
    case TM_GGUF_INT8: v->num.i = (int8_t)(uint8_t)u; break;
    case TM_GGUF_INT16: v->num.i = (int16_t)(uint16_t)u; break;
    case TM_GGUF_INT32: v->num.i = (int32_t)(uint32_t)u; break;
    case TM_GGUF_INT64: memcpy(&v->num.i, &u, 8); break;
    case TM_GGUF_FLOAT32: {
        uint32_t b = (uint32_t)u;
        float f;
        memcpy(&f, &b, 4);
        v->num.f = f;
        break;
    }
    case TM_GGUF_FLOAT64: memcpy(&v->num.f, &u, 8); break;
    default: v->num.u = u; break;
    }
}

/* op_table.c — the op tables of foundry/ops.h expanded into what the
 * library needs at run time: names, classes, result-dtype rules and
 * autograd node names. */
#include "op_table.h"

#define TM__ROW(E, name, cls, dt, grad)                                       \
    {name, TM__CLASS_##cls, TM__DT_##dt, grad},

const tm__op_info tm__unary_ops[TM_UNARY_OP_COUNT] = {TM_UNARY_OPS(TM__ROW)};
const tm__op_info tm__binary_ops[TM_BINARY_OP_COUNT] = {
    TM_BINARY_OPS(TM__ROW)};
const tm__op_info tm__reduce_ops[TM_REDUCE_OP_COUNT] = {
    TM_REDUCE_OPS(TM__ROW)};

#undef TM__ROW

/* Enum values are shared with backends and only ever appended: a changed
 * count means a row was added (append it last, and give every backend its
 * kernel) or removed (never). */
_Static_assert(TM_UNARY_OP_COUNT == 43, "unary op table changed size");
_Static_assert(TM_BINARY_OP_COUNT == 29, "binary op table changed size");
_Static_assert(TM_REDUCE_OP_COUNT == 11, "reduce op table changed size");

/* Why a NO_BOOL op refuses bool operands, and what to use instead. */
static const char *tm__no_bool_message(const tm__op_info *op)
{
    if (op == &tm__unary_ops[TM_OP_NEG])
        return "negation of a bool tensor is not supported; use "
               "tm_logical_not";
    if (op == &tm__binary_ops[TM_OP_SUB])
        return "subtraction of bool tensors is not supported; use "
               "logical_xor";
    if (op == &tm__binary_ops[TM_OP_BITWISE_LEFT_SHIFT] ||
        op == &tm__binary_ops[TM_OP_BITWISE_RIGHT_SHIFT])
        return "shifts of bool tensors are not supported (PyTorch has none "
               "either); convert to an integer dtype first";
    if (op == &tm__binary_ops[TM_OP_FLOOR_DIVIDE] ||
        op == &tm__binary_ops[TM_OP_REMAINDER] ||
        op == &tm__binary_ops[TM_OP_FMOD])
        return "division of bool tensors is not supported (PyTorch has "
               "none either); convert to an integer dtype first";
    return "bool tensors are not supported";
}

tm_status tm__rule_dtype(const char *fn, const tm__op_info *op, tm_dtype dt,
                         tm_dtype *out)
{
    bool is_float = tm_dtype_is_float(dt);
    if (op->cls == TM__CLASS_BITS && is_float)
        return tm__errf(TM_EDTYPE, fn, "%s is only defined on integer and "
                        "bool tensors, not %s", op->name, tm_dtype_name(dt));
    switch (op->dtype) {
    case TM__DT_SAME: *out = dt; return TM_OK;
    case TM__DT_FLOAT: *out = is_float ? dt : TM_F32; return TM_OK;
    case TM__DT_BOOL: *out = TM_BOOL; return TM_OK;
    case TM__DT_BOOL_I64: *out = dt == TM_BOOL ? TM_I64 : dt; return TM_OK;
    case TM__DT_INT_I64: *out = is_float ? dt : TM_I64; return TM_OK;
    case TM__DT_NO_BOOL:
        if (dt != TM_BOOL) {
            *out = dt;
            return TM_OK;
        }
        return tm__errf(TM_EDTYPE, fn, "%s", tm__no_bool_message(op));
    case TM__DT_BOUNDS: break;
    }
    return tm__errf(TM_ESTATE, fn, "internal error: %s has no fixed result "
                    "dtype rule", op->name);
}

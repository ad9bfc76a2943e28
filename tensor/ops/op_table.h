/*
 * op_table.h — what the library knows about each op of the families
 * declared in foundry/ops.h (TM_UNARY_OPS, TM_BINARY_OPS, TM_REDUCE_OPS),
 * generated from those rows (internal).
 */
#ifndef FOUNDRY_OP_TABLE_H
#define FOUNDRY_OP_TABLE_H

#include "../core/tensor_impl.h"

typedef enum tm__op_class {
    TM__CLASS_FLOAT, TM__CLASS_INT, TM__CLASS_PRED, TM__CLASS_BITS
} tm__op_class;

typedef enum tm__dtype_rule {
    TM__DT_SAME, TM__DT_FLOAT, TM__DT_BOOL, TM__DT_NO_BOOL, TM__DT_BOOL_I64,
    TM__DT_INT_I64, TM__DT_BOUNDS
} tm__dtype_rule;

typedef struct tm__op_info {
    const char *name;    /* "exp" */
    tm__op_class cls;
    tm__dtype_rule dtype;
    const char *grad_fn; /* "ExpBackward", or NULL: no gradient */
} tm__op_info;

extern const tm__op_info tm__unary_ops[TM_UNARY_OP_COUNT];
extern const tm__op_info tm__binary_ops[TM_BINARY_OP_COUNT];
extern const tm__op_info tm__reduce_ops[TM_REDUCE_OP_COUNT];

/* The result dtype of `rule` for an input (or promoted) dtype dt, in *out.
 * NO_BOOL with BOOL fails (TM_EDTYPE, naming fn and what to use instead);
 * BOUNDS is worked out by tm_clamp itself and is not accepted here. */
tm_status tm__rule_dtype(const char *fn, const tm__op_info *op, tm_dtype dt,
                         tm_dtype *out);

#endif

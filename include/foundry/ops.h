/*
 * foundry/ops.h — math on tensors: elementwise, reductions, matmul,
 * indexing and shaping.
 *
 * Common rules
 * - Inputs may have any strides (views are fine) and are borrowed.
 * - Binary ops broadcast by numpy rules: shapes are right-aligned and a dim
 *   of size 1 stretches to match ([3,1] with [4] gives [3,4]).
 * - Result dtype follows tm_promote_types (PyTorch's rules).  F16/BF16 are
 *   computed in F32 and rounded once at the end.  Integer arithmetic wraps
 *   (two's complement).  Ops that only make sense on floats (exp, div, ...)
 *   give F32 for integer/bool inputs, as PyTorch does.
 * - Scalar variants take a double that behaves like a Python number: it
 *   does not widen a float tensor's dtype; an integer tensor with a
 *   non-integral scalar gives F32.
 * - In-place variants end in '_' and write into their first argument; the
 *   other operands broadcast to its shape, and the result dtype must be
 *   castable to it (float into an integer tensor is an error).
 * - 0-d tensors and tensors with zero elements are fine everywhere.
 * - Results are new references (release with tm_free); failures return NULL
 *   or a negative tm_status with tm_last_error() set.
 * - Large ops are split over the thread pool (see tm_set_num_threads).
 * - Arguments come in one order: the input tensors, then the dims an op
 *   works along (`dims, ndims` or `dim`), then the op's own parameters
 *   (a norm's order p, var's correction, a slope), then keepdim; outputs
 *   written through pointers come last.
 */
#ifndef FOUNDRY_OPS_H
#define FOUNDRY_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- op tables
 * Each op family is declared once, here, one row per op; the enums below,
 * the library's name tables, result-dtype rules and autograd node names
 * are all generated from these rows, so they cannot disagree.  Rows are in
 * enum order and only ever appended (values are part of the ABI shared
 * with backends, foundry/backend.h).  Columns:
 *   X(ENUM, name, class, dtype, grad)
 *   ENUM   the enum value's suffix (TM_OP_<ENUM>, TM_RED_<ENUM>);
 *   name   the op's name in messages and in Python;
 *   class  FLOAT  floating-point maths (integer inputs compute in F32),
 *          INT    defined on integers too, computed exactly there,
 *          PRED   a predicate: the result is BOOL,
 *          BITS   bitwise: integer and bool operands only (a float
 *                 operand is TM_EDTYPE);
 *   dtype  the result dtype for an input of dtype dt (binary ops: for the
 *          promoted dtype of both operands, tm_promote_types):
 *          SAME       dt,
 *          FLOAT      dt if a float dtype, else F32,
 *          BOOL       BOOL,
 *          NO_BOOL    dt, and a BOOL input is an error (TM_EDTYPE),
 *          BOOL_I64   dt, but BOOL gives I64,
 *          INT_I64    dt if a float dtype, else I64,
 *          BOUNDS     clamp: see tm_clamp;
 *   grad   the autograd node's name (tm_grad_fn_name), or NULL for an op
 *          without a gradient (its result is BOOL).
 * Parameters (p0, p1 of the backend's unary entry; tm_reduce's p):
 * leaky_relu p0 = slope; softplus p0 = beta, p1 = threshold; clamp p0 =
 * min, p1 = max (NaN: no bound); var and std p = correction; norm p = the
 * order.  gelu is the erf form, gelu_tanh the tanh approximation. */

#define TM_UNARY_OPS(X)                                                       \
    X(NEG,         "neg",         INT,   NO_BOOL,  "NegBackward")             \
    X(ABS,         "abs",         INT,   SAME,     "AbsBackward")             \
    X(SIGN,        "sign",        INT,   SAME,     "SignBackward")            \
    X(EXP,         "exp",         FLOAT, FLOAT,    "ExpBackward")             \
    X(LOG,         "log",         FLOAT, FLOAT,    "LogBackward")             \
    X(LOG1P,       "log1p",       FLOAT, FLOAT,    "Log1PBackward")           \
    X(EXPM1,       "expm1",       FLOAT, FLOAT,    "Expm1Backward")           \
    X(SQRT,        "sqrt",        FLOAT, FLOAT,    "SqrtBackward")            \
    X(RSQRT,       "rsqrt",       FLOAT, FLOAT,    "RsqrtBackward")           \
    X(SIN,         "sin",         FLOAT, FLOAT,    "SinBackward")             \
    X(COS,         "cos",         FLOAT, FLOAT,    "CosBackward")             \
    X(TANH,        "tanh",        FLOAT, FLOAT,    "TanhBackward")            \
    X(SIGMOID,     "sigmoid",     FLOAT, FLOAT,    "SigmoidBackward")         \
    X(RELU,        "relu",        INT,   SAME,     "ReluBackward")            \
    X(LEAKY_RELU,  "leaky_relu",  FLOAT, FLOAT,    "LeakyReluBackward")       \
    X(GELU,        "gelu",        FLOAT, FLOAT,    "GeluBackward")            \
    X(GELU_TANH,   "gelu_tanh",   FLOAT, FLOAT,    "GeluBackward")            \
    X(SILU,        "silu",        FLOAT, FLOAT,    "SiluBackward")            \
    X(SOFTPLUS,    "softplus",    FLOAT, FLOAT,    "SoftplusBackward")        \
    X(LOGICAL_NOT, "logical_not", PRED,  BOOL,     NULL)                      \
    X(FLOOR,       "floor",       INT,   SAME,     "FloorBackward")           \
    X(CEIL,        "ceil",        INT,   SAME,     "CeilBackward")            \
    X(ROUND,       "round",       INT,   SAME,     "RoundBackward")           \
    X(TRUNC,       "trunc",       INT,   SAME,     "TruncBackward")           \
    X(RECIPROCAL,  "reciprocal",  FLOAT, FLOAT,    "ReciprocalBackward")      \
    X(SQUARE,      "square",      INT,   BOOL_I64, "PowBackward")             \
    X(ERF,         "erf",         FLOAT, FLOAT,    "ErfBackward")             \
    X(LOG2,        "log2",        FLOAT, FLOAT,    "Log2Backward")            \
    X(ISNAN,       "isnan",       PRED,  BOOL,     NULL)                      \
    X(ISINF,       "isinf",       PRED,  BOOL,     NULL)                      \
    X(ISFINITE,    "isfinite",    PRED,  BOOL,     NULL)                      \
    X(CLAMP,       "clamp",       INT,   BOUNDS,   "ClampBackward")          \
    X(EXP2,        "exp2",        FLOAT, FLOAT,    "Exp2Backward")          \
    X(TAN,         "tan",         FLOAT, FLOAT,    "TanBackward")         \
    X(ASIN,        "asin",        FLOAT, FLOAT,    "AsinBackward")        \
    X(ACOS,        "acos",        FLOAT, FLOAT,    "AcosBackward")        \
    X(ATAN,        "atan",        FLOAT, FLOAT,    "AtanBackward")        \
    X(SINH,        "sinh",        FLOAT, FLOAT,    "SinhBackward")        \
    X(COSH,        "cosh",        FLOAT, FLOAT,    "CoshBackward")        \
    X(ASINH,       "asinh",       FLOAT, FLOAT,    "AsinhBackward")       \
    X(ACOSH,       "acosh",       FLOAT, FLOAT,    "AcoshBackward")       \
    X(ATANH,       "atanh",       FLOAT, FLOAT,    "AtanhBackward")       \
    X(LOG10,       "log10",       FLOAT, FLOAT,    "Log10Backward")

#define TM_BINARY_OPS(X)                                                      \
    X(ADD,          "add",          INT,   SAME,    "AddBackward")            \
    X(SUB,          "sub",          INT,   NO_BOOL, "SubBackward")            \
    X(MUL,          "mul",          INT,   SAME,    "MulBackward")            \
    X(DIV,          "div",          FLOAT, FLOAT,   "DivBackward")            \
    X(POW,          "pow",          INT,   SAME,    "PowBackward")            \
    X(MAXIMUM,      "maximum",      INT,   SAME,    "MaximumBackward")        \
    X(MINIMUM,      "minimum",      INT,   SAME,    "MinimumBackward")        \
    X(EQ,           "eq",           PRED,  BOOL,    NULL)                     \
    X(NE,           "ne",           PRED,  BOOL,    NULL)                     \
    X(LT,           "lt",           PRED,  BOOL,    NULL)                     \
    X(LE,           "le",           PRED,  BOOL,    NULL)                     \
    X(GT,           "gt",           PRED,  BOOL,    NULL)                     \
    X(GE,           "ge",           PRED,  BOOL,    NULL)                     \
    X(LOGICAL_AND,  "logical_and",  PRED,  BOOL,    NULL)                     \
    X(LOGICAL_OR,   "logical_or",   PRED,  BOOL,    NULL)                     \
    X(LOGICAL_XOR,  "logical_xor",  PRED,  BOOL,    NULL)                     \
    X(FLOOR_DIVIDE, "floor_divide", INT,   NO_BOOL, "FloorDivideBackward")    \
    X(REMAINDER,    "remainder",    INT,   NO_BOOL, "RemainderBackward")      \
    X(BITWISE_AND,  "bitwise_and",  BITS,  SAME,    NULL)                     \
    X(BITWISE_OR,   "bitwise_or",   BITS,  SAME,    NULL)                     \
    X(BITWISE_XOR,  "bitwise_xor",  BITS,  SAME,    NULL)                     \
    X(BITWISE_LEFT_SHIFT,  "bitwise_left_shift",  BITS, NO_BOOL, NULL)        \
    X(BITWISE_RIGHT_SHIFT, "bitwise_right_shift", BITS, NO_BOOL, NULL)        \
    X(FMOD,         "fmod",         INT,   NO_BOOL, "FmodBackward")           \
    X(ATAN2,        "atan2",        FLOAT, FLOAT,   "Atan2Backward")          \
    X(LOGADDEXP,    "logaddexp",    FLOAT, FLOAT,   "LogaddexpBackward")      \
    X(LOGADDEXP2,   "logaddexp2",   FLOAT, FLOAT,   "Logaddexp2Backward")     \
    X(COPYSIGN,     "copysign",     FLOAT, FLOAT,   "CopysignBackward")       \
    X(HYPOT,        "hypot",        FLOAT, FLOAT,   "HypotBackward")

#define TM_REDUCE_OPS(X)                                                      \
    X(SUM,       "sum",       INT,   INT_I64, "SumBackward")                  \
    X(MEAN,      "mean",      FLOAT, FLOAT,   "MeanBackward")                 \
    X(PROD,      "prod",      INT,   INT_I64, "ProdBackward")                 \
    X(MAX,       "max",       INT,   SAME,    "MaxBackward")                  \
    X(MIN,       "min",       INT,   SAME,    "MinBackward")                  \
    X(VAR,       "var",       FLOAT, FLOAT,   "VarBackward")                  \
    X(STD,       "std",       FLOAT, FLOAT,   "StdBackward")                  \
    X(LOGSUMEXP, "logsumexp", FLOAT, FLOAT,   "LogsumexpBackward")            \
    X(NORM,      "norm",      FLOAT, FLOAT,   "NormBackward")                 \
    X(ANY,       "any",       PRED,  BOOL,    NULL)                           \
    X(ALL,       "all",       PRED,  BOOL,    NULL)

#define TM__OP_ENUM(E, name, cls, dt, grad) TM_OP_##E,
#define TM__RED_ENUM(E, name, cls, dt, grad) TM_RED_##E,
typedef enum tm_unary_op {
    TM_UNARY_OPS(TM__OP_ENUM)
    TM_UNARY_OP_COUNT
} tm_unary_op;
typedef enum tm_binary_op {
    TM_BINARY_OPS(TM__OP_ENUM)
    TM_BINARY_OP_COUNT
} tm_binary_op;
typedef enum tm_reduce_op {
    TM_REDUCE_OPS(TM__RED_ENUM)
    TM_REDUCE_OP_COUNT
} tm_reduce_op;
#undef TM__OP_ENUM
#undef TM__RED_ENUM

/* ------------------------------------------------------ elementwise: binary
 * out = a OP b, broadcast.  Comparisons and logical ops give TM_BOOL.
 * div is true division (integers give F32); floor_divide rounds toward
 * -inf; remainder has the sign of the divisor (Python's %).  Integer
 * floor_divide/remainder by zero is an error (TM_EINVAL). pow on integers
 * with a negative exponent is an error, as in PyTorch (in-place forms then
 * leave `a` unchanged). maximum/minimum propagate NaN.  A scalar with an
 * integral value counts as an integer: it keeps an integer tensor's dtype
 * (computed exactly in I64, then wrapped to it) and gives I64 with a bool
 * tensor.  bool + bool is logical or; subtraction with any bool operand
 * (a bool number too) and floor_divide, remainder and fmod of two bools
 * are errors (TM_EDTYPE), as in PyTorch.
 * An in-place op into an expanded (stride 0) tensor is an error. */
tm_tensor *tm_binary(tm_binary_op op, const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_binary_scalar(tm_binary_op op, const tm_tensor *a, double s);
/* s OP a (for sub, div, pow with the scalar on the left). */
tm_tensor *tm_binary_rscalar(tm_binary_op op, double s, const tm_tensor *a);
tm_status tm_binary_(tm_binary_op op, tm_tensor *a, const tm_tensor *b);
tm_status tm_binary_scalar_(tm_binary_op op, tm_tensor *a, double s);

tm_tensor *tm_add(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_sub(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_mul(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_div(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_pow(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_maximum(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_minimum(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_eq(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_ne(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_lt(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_le(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_gt(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_ge(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_logical_and(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_logical_or(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_logical_xor(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_floor_divide(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_remainder(const tm_tensor *a, const tm_tensor *b);

tm_tensor *tm_add_scalar(const tm_tensor *a, double s);
tm_tensor *tm_sub_scalar(const tm_tensor *a, double s);
tm_tensor *tm_mul_scalar(const tm_tensor *a, double s);
tm_tensor *tm_div_scalar(const tm_tensor *a, double s);
tm_tensor *tm_pow_scalar(const tm_tensor *a, double s);
tm_tensor *tm_maximum_scalar(const tm_tensor *a, double s);
tm_tensor *tm_minimum_scalar(const tm_tensor *a, double s);
tm_tensor *tm_remainder_scalar(const tm_tensor *a, double s);

tm_status tm_add_(tm_tensor *a, const tm_tensor *b);
tm_status tm_sub_(tm_tensor *a, const tm_tensor *b);
tm_status tm_mul_(tm_tensor *a, const tm_tensor *b);
tm_status tm_div_(tm_tensor *a, const tm_tensor *b);
tm_status tm_add_scalar_(tm_tensor *a, double s);
tm_status tm_mul_scalar_(tm_tensor *a, double s);

/* ------------------------------------------ bitwise, fmod and binary maths
 * bitwise_and/or/xor take integer and bool operands (bool with bool is the
 * logical op and gives BOOL); a float operand is TM_EDTYPE.  The shifts
 * take integer operands only and compute in the promoted dtype, as
 * PyTorch: a count below 0 or at least 64 gives 0 (left) or the sign fill
 * (right: -1 for a negative a, else 0); a count at least the dtype's width
 * wraps to the same values.  tm_bitwise_not is ~t on integers and logical
 * not on BOOL.
 * fmod is C's fmod: a - trunc(a / b) * b, with the sign of a (remainder
 * has the sign of b); integer fmod by zero is TM_EINVAL.
 * atan2(a, b) is the angle of the point (b, a); logaddexp(a, b) =
 * log(e^a + e^b) and logaddexp2(a, b) = log2(2^a + 2^b), both stable for
 * large |a - b|; copysign(a, b) is |a| with the sign bit of b (-0.0
 * counts as negative); hypot(a, b) = sqrt(a^2 + b^2) without overflow.
 * These five are FLOAT ops: integer and bool operands give F32. */
tm_tensor *tm_bitwise_and(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_bitwise_or(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_bitwise_xor(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_bitwise_left_shift(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_bitwise_right_shift(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_bitwise_not(const tm_tensor *t);
tm_status tm_bitwise_not_(tm_tensor *t);
tm_tensor *tm_fmod(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_fmod_scalar(const tm_tensor *a, double s);
tm_tensor *tm_atan2(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_logaddexp(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_logaddexp2(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_copysign(const tm_tensor *a, const tm_tensor *b);
tm_tensor *tm_hypot(const tm_tensor *a, const tm_tensor *b);

/* What kind of number a scalar operand is, for type promotion (PyTorch's
 * rules for a Python bool, int or float): a number of a higher category
 * than the tensor (bool < integer < float) gives that category's default
 * dtype (I64, F32); otherwise the tensor's dtype wins.  So an I32 tensor
 * times the float 2.0 is F32, and a BOOL tensor and the bool true stay
 * BOOL.  TM_SCALAR_AUTO is the rule of tm_binary_scalar: an integral value
 * counts as an integer, any other as a float. */
typedef enum tm_scalar_kind {
    TM_SCALAR_AUTO = 0,
    TM_SCALAR_BOOL = 1,
    TM_SCALAR_INT = 2,
    TM_SCALAR_FLOAT = 3
} tm_scalar_kind;
/* a OP s, s OP a and a OP= s with s of kind k (otherwise as
 * tm_binary_scalar, tm_binary_rscalar and tm_binary_scalar_). */
tm_tensor *tm_binary_scalar_as(tm_binary_op op, const tm_tensor *a, double s,
                               tm_scalar_kind k);
tm_tensor *tm_binary_rscalar_as(tm_binary_op op, double s, const tm_tensor *a,
                                tm_scalar_kind k);
tm_status tm_binary_scalar_as_(tm_binary_op op, tm_tensor *a, double s,
                               tm_scalar_kind k);

/* a + w * (end - a), computed as end - (end - a) * (1 - w) where |w| >= 0.5
 * (PyTorch's form, exact at w = 0 and w = 1).  a, end and weight broadcast
 * and must be float tensors of one dtype (TM_EDTYPE otherwise); the scalar
 * form takes w as a number.  Differentiable in all three. */
tm_tensor *tm_lerp(const tm_tensor *a, const tm_tensor *end,
                   const tm_tensor *weight);
tm_tensor *tm_lerp_scalar(const tm_tensor *a, const tm_tensor *end,
                          double weight);
/* BOOL: |a - b| <= atol + rtol * |b|, or a == b (equal infinities);
 * NaNs are equal only with equal_nan.  a and b broadcast and must have one
 * dtype (TM_EDTYPE otherwise, as PyTorch); integers compare in F64.  rtol
 * and atol must be >= 0 (TM_EINVAL). */
tm_tensor *tm_isclose(const tm_tensor *a, const tm_tensor *b, double rtol,
                      double atol, bool equal_nan);
/* t with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf`;
 * posinf/neginf NaN mean the dtype's largest/lowest finite value.
 * Integer and bool tensors are copied unchanged.  Differentiable (the
 * gradient is 0 where an element was replaced). */
tm_tensor *tm_nan_to_num(const tm_tensor *t, double nan, double posinf,
                         double neginf);

/* cond ? a : b, all three broadcast.  `cond` (any dtype) is read as
 * (x != 0); the result has the promoted dtype of a and b. */
tm_tensor *tm_where(const tm_tensor *cond, const tm_tensor *a,
                    const tm_tensor *b);
/* Limits to [lo, hi]; pass NAN for "no bound".  NaN inputs stay NaN;
 * lo > hi gives hi (min(max(x, lo), hi), as PyTorch).  Float tensors keep
 * their dtype; integer tensors keep theirs when the bounds are integral
 * (BOOL then gives I64) and give F32 otherwise.  Integral bounds outside
 * the integer dtype's range saturate to it (i16 with lo 1e9 gives 32767). */
tm_tensor *tm_clamp(const tm_tensor *t, double lo, double hi);
tm_status tm_clamp_(tm_tensor *t, double lo, double hi);
/* Tensor bounds (either may be NULL, not both), broadcast:
 * min(max(t, lo), hi) in the promoted dtype of all three; NaN in t or in a
 * bound gives NaN. */
tm_tensor *tm_clamp_tensor(const tm_tensor *t, const tm_tensor *lo,
                           const tm_tensor *hi);

/* ------------------------------------------------------- elementwise: unary
 * sigmoid and softplus are stable for large |x|; gelu is x*Phi(x) with
 * the erf form, gelu_tanh the tanh approximation; softplus(x) =
 * log(1+exp(beta*x))/beta, and x where beta*x > threshold.
 * Result dtypes (PyTorch's rules):
 * - exp exp2 log log1p expm1 sqrt rsqrt sin cos tanh sigmoid gelu gelu_tanh
 *   silu softplus erf log2 reciprocal leaky_relu tan asin acos atan sinh
 *   cosh asinh acosh atanh and log10: float inputs keep their dtype;
 *   integer and bool inputs give F32.
 * - neg abs sign relu square floor ceil round trunc keep every dtype (floor
 *   etc. are the identity on integers; integer neg/abs/square wrap, so
 *   abs(INT64_MIN) is INT64_MIN).  neg of BOOL is an error (TM_EDTYPE);
 *   square of BOOL gives I64.
 * - logical_not isnan isinf isfinite give BOOL.
 * round is half to even.  sign(NaN) is NaN.  tm_unary uses the default
 * parameters (leaky_relu slope 0.01, softplus beta 1 and threshold 20,
 * clamp without bounds).  tm_unary_ writes into t and fails (TM_EDTYPE)
 * when the result dtype differs from t's (exp of an integer tensor, isnan
 * of a non-bool tensor), or when t has broadcast (stride 0) dims. */
tm_tensor *tm_unary(tm_unary_op op, const tm_tensor *t);
tm_status tm_unary_(tm_unary_op op, tm_tensor *t);

tm_tensor *tm_neg(const tm_tensor *t);
tm_tensor *tm_abs(const tm_tensor *t);
tm_tensor *tm_sign(const tm_tensor *t);
tm_tensor *tm_exp(const tm_tensor *t);
tm_tensor *tm_exp2(const tm_tensor *t); /* 2^x */
tm_tensor *tm_log(const tm_tensor *t);
tm_tensor *tm_log1p(const tm_tensor *t);
tm_tensor *tm_expm1(const tm_tensor *t);
tm_tensor *tm_sqrt(const tm_tensor *t);
tm_tensor *tm_rsqrt(const tm_tensor *t);
tm_tensor *tm_sin(const tm_tensor *t);
tm_tensor *tm_cos(const tm_tensor *t);
tm_tensor *tm_tanh(const tm_tensor *t);
tm_tensor *tm_sigmoid(const tm_tensor *t);
tm_tensor *tm_relu(const tm_tensor *t);
tm_tensor *tm_leaky_relu(const tm_tensor *t, double slope);
tm_tensor *tm_gelu(const tm_tensor *t);
tm_tensor *tm_gelu_tanh(const tm_tensor *t);
tm_tensor *tm_silu(const tm_tensor *t);
tm_tensor *tm_softplus(const tm_tensor *t, double beta, double threshold);
tm_tensor *tm_logical_not(const tm_tensor *t);
tm_tensor *tm_isnan(const tm_tensor *t);
tm_tensor *tm_isinf(const tm_tensor *t);
tm_tensor *tm_isfinite(const tm_tensor *t);
tm_tensor *tm_floor(const tm_tensor *t);
tm_tensor *tm_ceil(const tm_tensor *t);
tm_tensor *tm_round(const tm_tensor *t);
tm_tensor *tm_trunc(const tm_tensor *t);
tm_tensor *tm_reciprocal(const tm_tensor *t);
tm_tensor *tm_square(const tm_tensor *t);
tm_tensor *tm_erf(const tm_tensor *t);
tm_tensor *tm_log2(const tm_tensor *t);
/* Trigonometric and hyperbolic functions and their inverses (radians; C99
 * libm semantics: NaN outside asin/acos's [-1, 1], acosh's [1, inf) and
 * atanh's [-1, 1], +-inf at atanh(+-1)), and the base-10 logarithm. */
tm_tensor *tm_tan(const tm_tensor *t);
tm_tensor *tm_asin(const tm_tensor *t);
tm_tensor *tm_acos(const tm_tensor *t);
tm_tensor *tm_atan(const tm_tensor *t);
tm_tensor *tm_sinh(const tm_tensor *t);
tm_tensor *tm_cosh(const tm_tensor *t);
tm_tensor *tm_asinh(const tm_tensor *t);
tm_tensor *tm_acosh(const tm_tensor *t);
tm_tensor *tm_atanh(const tm_tensor *t);
tm_tensor *tm_log10(const tm_tensor *t);

/* ------------------------------------------------------------- reductions
 * `dims` lists `ndims` distinct dims to reduce (negative allowed); dims ==
 * NULL or ndims == 0 reduces over all dims (a 0-d tensor also accepts dim
 * 0 or -1).  keepdim leaves reduced dims with size 1.  Sum/prod of
 * integers or bool give I64 (wrapping); float results keep the input dtype
 * (accumulated in F64 and rounded once; F64 sums add blocks of 256 with
 * compensation); mean, var, std, logsumexp and norm of integers give F32.
 * Reducing zero elements gives 0 (sum, norm), 1 (prod), NaN (mean, var),
 * -inf (logsumexp), false (any), true (all) and is an error for
 * max/min/argmax/argmin.  Deterministic for a given thread count. */
tm_tensor *tm_reduce(tm_reduce_op op, const tm_tensor *t, const int *dims,
                     int ndims, double p, bool keepdim);
tm_tensor *tm_sum(const tm_tensor *t, const int *dims, int ndims, bool keepdim);
tm_tensor *tm_mean(const tm_tensor *t, const int *dims, int ndims,
                   bool keepdim);
tm_tensor *tm_prod(const tm_tensor *t, const int *dims, int ndims,
                   bool keepdim);
/* Largest / smallest value over the dims (NaN propagates). */
tm_tensor *tm_max(const tm_tensor *t, const int *dims, int ndims, bool keepdim);
tm_tensor *tm_min(const tm_tensor *t, const int *dims, int ndims, bool keepdim);
/* Variance / standard deviation with Bessel-style `correction` (1:
 * unbiased, 0: population): sum((x - mean)^2) / max(0, count -
 * correction), so inf (NaN for 0/0) there, as in PyTorch and numpy. */
tm_tensor *tm_var(const tm_tensor *t, const int *dims, int ndims,
                  double correction, bool keepdim);
tm_tensor *tm_std(const tm_tensor *t, const int *dims, int ndims,
                  double correction, bool keepdim);
/* log(sum(exp(x))) computed stably (max subtracted first); NaN if any x
 * is NaN, else +inf if any x is +inf. */
tm_tensor *tm_logsumexp(const tm_tensor *t, const int *dims, int ndims,
                        bool keepdim);
/* Vector p-norm over the dims: p = 2 (scaled: no overflow), 1, INFINITY
 * (max |x|), -INFINITY (min |x|), 0 (count of non-zeros) or any other p:
 * (sum |x|^p)^(1/p).  NaN propagates; p = NaN is an error. */
tm_tensor *tm_norm(const tm_tensor *t, const int *dims, int ndims, double p,
                   bool keepdim);
/* Logical any / all (result BOOL; x != 0, so NaN is true). */
tm_tensor *tm_any(const tm_tensor *t, const int *dims, int ndims, bool keepdim);
tm_tensor *tm_all(const tm_tensor *t, const int *dims, int ndims, bool keepdim);
/* Index (I64) of the first largest / smallest element along `dim`; NaN
 * counts as largest (and smallest), as in PyTorch.  The _all forms reduce
 * over every dim and index into the flattened tensor. */
tm_tensor *tm_argmax(const tm_tensor *t, int dim, bool keepdim);
tm_tensor *tm_argmin(const tm_tensor *t, int dim, bool keepdim);
tm_tensor *tm_argmax_all(const tm_tensor *t);
tm_tensor *tm_argmin_all(const tm_tensor *t);
/* Values and indices of the max / min along one dim.  *values and
 * *indices receive new references (both NULL on failure). */
tm_status tm_max_dim(const tm_tensor *t, int dim, bool keepdim,
                     tm_tensor **values, tm_tensor **indices);
tm_status tm_min_dim(const tm_tensor *t, int dim, bool keepdim,
                     tm_tensor **values, tm_tensor **indices);
/* Running sum along `dim`; integers and bool give I64 (wrapping); floats
 * accumulate in F64 and round each output once. */
tm_tensor *tm_cumsum(const tm_tensor *t, int dim);
/* Running product along `dim`, with cumsum's dtypes (integers and bool
 * give I64, wrapping; floats accumulate in F64). */
tm_tensor *tm_cumprod(const tm_tensor *t, int dim);
/* Running max / min along `dim` and where each was taken: *values (t's
 * dtype) and *indices (I64, may be NULL when not wanted) receive new
 * references of t's shape (NULL on failure).  On ties the index is the
 * latest position; a NaN, once seen, is the value from then on (its
 * index that of the latest NaN), as in PyTorch. */
tm_status tm_cummax(const tm_tensor *t, int dim, tm_tensor **values,
                    tm_tensor **indices);
tm_status tm_cummin(const tm_tensor *t, int dim, tm_tensor **values,
                    tm_tensor **indices);
/* Running log(sum(exp(x))) along `dim`, without overflow; float dtypes
 * only (TM_EDTYPE otherwise), accumulated in F64. */
tm_tensor *tm_logcumsumexp(const tm_tensor *t, int dim);

/* ----------------------------------------------------------------- matmul
 * numpy semantics: 1-D x 1-D is a dot product (0-d result); 2-D x 2-D is a
 * matrix product [m,k] x [k,n] -> [m,n]; a 1-D left operand is a row
 * vector and a 1-D right operand a column vector (the added dim is removed
 * afterwards); more dims are batches that broadcast: [b,1,m,k] x [c,k,n] ->
 * [b,c,m,n].  The result dtype is promoted; F32 accumulates in F32 (as
 * BLAS does), F16/BF16 in F32 rounded once, F64 in F64; integers
 * accumulate in 64 bits and wrap to the result dtype.  bool x bool is an
 * error (TM_EDTYPE), as in PyTorch.  Each output element is summed in
 * order of k, so results are identical for any thread count.  k == 0
 * gives zeros.  Errors: a 0-d operand (TM_EINVAL), inner dims that differ
 * ("shapes [3,4] and [5,6] do not match: 4 != 5") or batch dims that do
 * not broadcast (TM_ESHAPE). */
tm_tensor *tm_matmul(const tm_tensor *a, const tm_tensor *b);
/* C = alpha * op(A) @ op(B) + beta * C, written into c in place, where
 * op(X) is X, or X with its last two dims swapped when trans_x is set (a
 * view: nothing is transposed in memory).  op(A) is [..., m, k], op(B)
 * [..., k, n] and c [..., m, n]; batch dims of a and b broadcast to c's.
 * Float dtypes, all three the same.  beta == 0 ignores c's old values (NaN
 * included).  F32 and F64 run on the packed SIMD GEMM (cpu/gemm/). */
tm_status tm_gemm(bool trans_a, bool trans_b, double alpha, const tm_tensor *a,
                  const tm_tensor *b, double beta, tm_tensor *c);
/* y = x @ w^T + bias: x [..., in], w [out, in], bias [out] or NULL;
 * y [..., out].  Float dtypes, all the same. */
tm_tensor *tm_linear(const tm_tensor *x, const tm_tensor *w,
                     const tm_tensor *bias);

/* ------------------------------------------------------------- row ops
 * Over one dim (softmax) or the last dim (norms) of float tensors, computed
 * in F32 (F64 in F64), stable for large inputs. */
/* exp(x - max) / sum(exp(x - max)) along dim; log_softmax likewise.
 * Result: a new contiguous tensor of t's shape and dtype (integer dtypes
 * fail with TM_EDTYPE).  Plain-formula special values, as in PyTorch: a
 * row with NaN or +inf, or of only -inf, is all NaN.  A 0-d t gives 1
 * (log: 0). */
tm_tensor *tm_softmax(const tm_tensor *t, int dim);
tm_tensor *tm_log_softmax(const tm_tensor *t, int dim);
/* (x - mean) / sqrt(var + eps) * weight + bias over the last dim (biased
 * variance); weight and bias are [C] or NULL, of x's dtype; x has >= 1
 * dim; eps is finite and >= 0.  Sums are accumulated in F64. */
tm_tensor *tm_layer_norm(const tm_tensor *x, const tm_tensor *weight,
                         const tm_tensor *bias, double eps);
/* x / sqrt(mean(x^2) + eps) * weight over the last dim; weight [C] or
 * NULL. */
tm_tensor *tm_rms_norm(const tm_tensor *x, const tm_tensor *weight,
                       double eps);

/* ---------------------------------------------------- indexing & shaping
 * Index tensors are I64 or I32; negative indices count from the end of the
 * indexed dim; any index out of range is an error (TM_ERANGE) naming it. */

/* out[i][j][k] = t[index[i][j][k]][j][k] for dim 0 (and so on); index has
 * t's ndim and each of its other dims <= t's; out has index's shape. */
tm_tensor *tm_gather(const tm_tensor *t, int dim, const tm_tensor *index);
/* A copy of `t` with out[index[i][j]][j] = src[i][j] (dim 0).  Where
 * several indices collide, the last write in row-major order wins.  src
 * has t's dtype, index's ndim and each dim >= index's (only the leading
 * index-shaped block is read).  The in-place form checks every index
 * before writing: on failure `t` is unchanged. */
tm_tensor *tm_scatter(const tm_tensor *t, int dim, const tm_tensor *index,
                      const tm_tensor *src);
tm_status tm_scatter_(tm_tensor *t, int dim, const tm_tensor *index,
                      const tm_tensor *src);
/* Same, with `value` as every source element. */
tm_tensor *tm_scatter_value(const tm_tensor *t, int dim,
                            const tm_tensor *index, double value);
/* Adds instead of writing, so colliding indices accumulate (in row-major
 * order of index, one rounding per add; integers wrap; BOOL ors). */
tm_tensor *tm_scatter_add(const tm_tensor *t, int dim, const tm_tensor *index,
                          const tm_tensor *src);
tm_status tm_scatter_add_(tm_tensor *t, int dim, const tm_tensor *index,
                          const tm_tensor *src);
/* How tm_scatter_reduce combines the values landing on one place.  Values
 * only ever appended. */
typedef enum tm_scatter_reduce_kind {
    TM_SCATTER_SUM = 0,
    TM_SCATTER_PROD = 1,
    TM_SCATTER_MEAN = 2,
    TM_SCATTER_AMAX = 3,
    TM_SCATTER_AMIN = 4
} tm_scatter_reduce_kind;
/* A copy of `t` where each place that index points at (along dim, as
 * tm_scatter) holds the reduction of the src values sent there, together
 * with t's own value when include_self (PyTorch's scatter_reduce).  Places
 * no index points at keep t's value.  MEAN divides by the number of values
 * reduced (t's counting when include_self); for integer dtypes it rounds
 * toward -inf, as PyTorch.  AMAX / AMIN propagate NaN.  Shapes and checks
 * as tm_scatter (src has t's dtype).  Gradients, as PyTorch: SUM passes g
 * through; MEAN divides it by the count; PROD gives each factor the
 * product of the others (exact with zeros); AMAX / AMIN split g evenly
 * between the values equal to the result.  With include_self false, t gets
 * no gradient at the places written.  The in-place form checks everything
 * before writing. */
tm_tensor *tm_scatter_reduce(const tm_tensor *t, int dim,
                             const tm_tensor *index, const tm_tensor *src,
                             tm_scatter_reduce_kind reduce,
                             bool include_self);
tm_status tm_scatter_reduce_(tm_tensor *t, int dim, const tm_tensor *index,
                             const tm_tensor *src,
                             tm_scatter_reduce_kind reduce,
                             bool include_self);
/* Picks entries of a 1-D `index` along `dim`: out's `dim` has index's
 * length (a 0-d index counts as length 1). */
tm_tensor *tm_index_select(const tm_tensor *t, int dim,
                           const tm_tensor *index);
/* A copy of `t` with `value` (converted to t's dtype) where `mask` is
 * true.  mask must be BOOL (TM_EDTYPE otherwise) and broadcast to t's
 * shape. */
tm_tensor *tm_masked_fill(const tm_tensor *t, const tm_tensor *mask,
                          double value);
tm_status tm_masked_fill_(tm_tensor *t, const tm_tensor *mask, double value);
/* Joins n tensors along an existing dim (their other dims must match;
 * dtypes promote).  1-D empty tensors of shape [0] are skipped, as in
 * PyTorch. */
tm_tensor *tm_cat(tm_tensor *const *ts, int n, int dim);
/* Joins n same-shaped tensors along a new dim (dim in [-(ndim+1), ndim];
 * dtypes promote). */
tm_tensor *tm_stack(tm_tensor *const *ts, int n, int dim);
/* Views of consecutive pieces of `size` along `dim` (the last may be
 * shorter; size 0 only for a dim of size 0, which gives one empty piece,
 * as does any size there).  Writes up to `max_out` new references to out[] and returns
 * the number of pieces, or a negative tm_status (nothing written) — also
 * when max_out is too small. */
int tm_split(const tm_tensor *t, int64_t size, int dim, tm_tensor **out,
             int max_out);
/* Pieces of the given sizes, which must add up to the dim's size. */
int tm_split_sizes(const tm_tensor *t, const int64_t *sizes, int n, int dim,
                   tm_tensor **out, int max_out);
/* `chunks` pieces of ceil(size/chunks) (fewer if the dim is short), as
 * torch.chunk; a dim of size 0 gives `chunks` empty pieces. */
int tm_chunk(const tm_tensor *t, int chunks, int dim, tm_tensor **out,
             int max_out);
/* Constant padding, as torch.nn.functional.pad: pad[0], pad[1] are the
 * (before, after) amounts of the last dim, pad[2], pad[3] of the one
 * before, and so on; npad is even and <= 2*ndim.  Negative amounts crop; a resulting size
 * below 0 is an error (TM_EINVAL). */
tm_tensor *tm_pad(const tm_tensor *t, const int64_t *pad, int npad,
                  double value);
/* index (any integer dtype, values in [0, num_classes)) -> I64 tensor
 * with one more trailing dim of size num_classes.  num_classes < 0:
 * max(index) + 1 (an error for an empty index). */
tm_tensor *tm_one_hot(const tm_tensor *index, int64_t num_classes);
/* Sorts along `dim` (stable, also descending: equal elements keep their
 * order).  NaN sorts as larger than every number (last ascending, first
 * descending); -0.0 equals 0.0.  *values (t's dtype) and *indices (I64)
 * receive new references (NULL on failure); either pointer may be NULL if
 * not wanted, not both.  A 0-d tensor sorts to itself with index 0. */
tm_status tm_sort(const tm_tensor *t, int dim, bool descending,
                  tm_tensor **values, tm_tensor **indices);
tm_tensor *tm_argsort(const tm_tensor *t, int dim, bool descending);
/* The k largest (or smallest) along `dim`, in sorted order; ties keep the
 * lower index first; NaN counts as largest.  k in [0, size of dim] (k == 1
 * for a 0-d tensor), else TM_EINVAL.  Outputs as for tm_sort. */
tm_status tm_topk(const tm_tensor *t, int64_t k, int dim, bool largest,
                  tm_tensor **values, tm_tensor **indices);
/* Tiles `t`: repeats[i] copies along each dim, as torch.Tensor.repeat
 * (nrep >= ndim; extra leading entries add dims). */
tm_tensor *tm_repeat(const tm_tensor *t, const int64_t *repeats, int nrep);
/* Lower / upper triangle of the last two dims (t needs >= 2 dims); the
 * rest set to 0.  diagonal 0 is the main diagonal, > 0 above it, < 0
 * below. */
tm_tensor *tm_tril(const tm_tensor *t, int64_t diagonal);
tm_tensor *tm_triu(const tm_tensor *t, int64_t diagonal);
tm_status tm_tril_(tm_tensor *t, int64_t diagonal);
tm_status tm_triu_(tm_tensor *t, int64_t diagonal);

/* ------------------------------------------- reordering, diagonals, einsum
 * Composed of the ops above (index_select, gather, scatter, cat, pad,
 * views, matmul), so they run on every device and record autograd through
 * them.  Dims may be negative; a 0-d tensor accepts dim 0 and -1 in
 * flip, unfold and repeat_interleave (not in roll and take_along_dim, as
 * in PyTorch).  Results are new references (release with tm_free). */

/* A copy with the order of elements reversed along each of dims[ndims]
 * (a dim listed twice is TM_EINVAL).  fliplr flips dim 1 (t needs >= 2
 * dims), flipud dim 0 (>= 1 dim). */
tm_tensor *tm_flip(const tm_tensor *t, const int *dims, int ndims);
tm_tensor *tm_fliplr(const tm_tensor *t);
tm_tensor *tm_flipud(const tm_tensor *t);
/* A copy with the elements shifted by shifts[i] (may be negative) along
 * dims[i], wrapping around; nshifts == ndims.  ndims == 0: the flattened
 * tensor is rolled by shifts[0] (nshifts == 1) and keeps t's shape. */
tm_tensor *tm_roll(const tm_tensor *t, const int64_t *shifts, int nshifts,
                   const int *dims, int ndims);
/* A view of the diagonal `offset` (> 0 above the main one) of dims dim1
 * and dim2, which are removed; the diagonal becomes the last dim (length
 * 0 when offset is beyond the matrix).  Writes through to t. */
tm_tensor *tm_diagonal(const tm_tensor *t, int64_t offset, int dim1,
                       int dim2);
/* 1-D t of n elements: the square (n + |diagonal|)-matrix with t on that
 * diagonal and zeros elsewhere.  2-D t: a copy of its diagonal (1-D).
 * Other ranks are TM_EINVAL. */
tm_tensor *tm_diag(const tm_tensor *t, int64_t diagonal);
/* A view of every window of `size` elements along `dim`, `step` apart
 * (torch.Tensor.unfold): dim gets (n - size) / step + 1 entries and a new
 * last dim of `size` is added.  0 <= size <= n and step > 0 (TM_EINVAL
 * otherwise). */
tm_tensor *tm_unfold(const tm_tensor *t, int dim, int64_t size, int64_t step);
/* The indices of the non-zero elements (NaN counts as non-zero): I64
 * [count, ndim], in row-major order.  A host synchronization point: the
 * count is read back from t's device. */
tm_tensor *tm_nonzero(const tm_tensor *t);
/* The elements of t where mask (BOOL, TM_EDTYPE otherwise) is true, both
 * broadcast together, as a 1-D tensor in row-major order.  Synchronizes
 * as tm_nonzero does. */
tm_tensor *tm_masked_select(const tm_tensor *t, const tm_tensor *mask);
/* Gathers along *dim, with t and indices (integer, same ndim) broadcast
 * together in every other dim (torch.take_along_dim); dim NULL: the
 * flattened t indexed by the flattened indices. */
tm_tensor *tm_take_along_dim(const tm_tensor *t, const tm_tensor *indices,
                             const int *dim);
/* Each slice i along *dim repeated repeats[i] times in place (dim NULL:
 * of the flattened t).  repeats is a 0-d or 1-D integer tensor of
 * non-negative counts, of length 1 or the dim's size; it is read on the
 * host (a synchronization point).  output_size >= 0 must equal the
 * result's length along the dim (-1: not checked).  The _int form takes
 * one count for every slice. */
tm_tensor *tm_repeat_interleave(const tm_tensor *t, const tm_tensor *repeats,
                                const int *dim, int64_t output_size);
tm_tensor *tm_repeat_interleave_int(const tm_tensor *t, int64_t repeats,
                                    const int *dim, int64_t output_size);
/* Einstein summation, as torch.einsum: "ij,jk->ik" (explicit output) or
 * "ij,jk" (implicit: the labels seen once, in alphabetical order with
 * A-Z before a-z); "..." stands for broadcast dims; a label repeated in
 * one operand takes a diagonal; labels missing from the output are
 * summed.  Sizes of one label must match or be 1 (broadcast).  Pairs of
 * operands contract left to right as batched matmuls.  Spaces are
 * ignored.  Errors (TM_EINVAL / TM_ESHAPE): a term count other than n, a
 * character outside [a-zA-Z.], a term whose labels do not match its
 * operand's dims, mismatched sizes, output labels repeated or not in any
 * input. */
tm_tensor *tm_einsum(const char *equation, tm_tensor *const *operands, int n);
/* t's bytes as dtype dt (a view sharing t's storage, as
 * torch.Tensor.view(dtype)).  When element sizes differ t needs >= 1 dim
 * and a last dim of stride 1, which scales by the size ratio; to a wider
 * dtype its size, the other strides and the offset must be divisible by
 * the ratio (TM_EINVAL otherwise).  No gradient flows through a change of
 * dtype (a view with t's own dtype is tm_view). */
tm_tensor *tm_view_dtype(const tm_tensor *t, tm_dtype dt);

#ifdef __cplusplus
}
#endif
#endif

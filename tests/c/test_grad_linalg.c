/* test_grad_linalg.c — gradients of tm_matmul (every numpy form, batch
 * broadcasting, transposed and sliced operands), tm_linear, softmax /
 * log_softmax, layer_norm and rms_norm: central-difference checks in F64
 * (gradcheck.h; tol 1e-6: all are smooth, and the inputs are O(1) normal
 * values, so layer_norm's variance stays far from eps), plus one F32 run
 * per op (gradient shapes and dtypes).  tm_gemm records nothing. */
#include "gradcheck.h"

#define TOL 1e-6

/* How f sees input i: as is, transposed (last two dims), or every second
 * element of the last dim. */
enum { V_NONE, V_T, V_STEP };

static tm_tensor *view_of(tm_tensor *x, int v)
{
    if (!x) return NULL;
    if (v == V_T) return tm_transpose(x, -2, -1);
    if (v == V_STEP) return tm_slice(x, -1, 0, TM_END, 2);
    return tm_retain(x);
}

enum { K_MATMUL, K_LINEAR, K_SOFTMAX, K_LOGSOFTMAX, K_LN, K_RMS };

typedef struct {
    int kind;
    int view[3];
    int dim;     /* softmax */
    int nin;     /* inputs used (linear, norms: 1 = no weight/bias ...) */
} lctx;

static tm_tensor *f_lin(tm_tensor *const *in, void *vc)
{
    const lctx *c = vc;
    tm_tensor *v[3] = {NULL, NULL, NULL}, *y = NULL;
    for (int i = 0; i < c->nin; i++)
        if (!(v[i] = view_of(in[i], c->view[i]))) goto done;
    switch (c->kind) {
    case K_MATMUL: y = tm_matmul(v[0], v[1]); break;
    case K_LINEAR: y = tm_linear(v[0], v[1], v[2]); break;
    case K_SOFTMAX: y = tm_softmax(v[0], c->dim); break;
    case K_LOGSOFTMAX: y = tm_log_softmax(v[0], c->dim); break;
    case K_LN: y = tm_layer_norm(v[0], v[1], v[2], 1e-5); break;
    case K_RMS: y = tm_rms_norm(v[0], v[1], 1e-5); break;
    }
done:
    for (int i = 0; i < 3; i++) tm_free(v[i]);
    return y;
}

static void check(const char *file, int line, const char *name, lctx c,
                  tm_tensor *a, tm_tensor *b, tm_tensor *d)
{
    tm_tensor *in[3] = {a, b, d};
    bool ok = true;
    for (int i = 0; i < c.nin; i++) ok = ok && in[i];
    if (!ok)
        tt_fail(file, line, "%s: no leaf: %s", name, tm_last_error());
    else
        tt_gradcheck_at(file, line, name, f_lin, &c, in, c.nin, TOL);
    for (int i = 0; i < 3; i++) tm_free(in[i]);
}
#define GC(name, c, a, b, d) check(__FILE__, __LINE__, (name), (c), (a), (b), (d))

/* f on F32 copies of the inputs: backward from sum(out); each gradient
 * must have its input's shape and dtype F32. */
static void smoke(const char *file, int line, lctx c, tm_tensor *a,
                  tm_tensor *b, tm_tensor *d)
{
    tm_tensor *in[3] = {a, b, d}, *x[3] = {NULL, NULL, NULL}, *y = NULL,
              *l = NULL;
    bool prev = tm_no_grad_begin();
    for (int i = 0; i < c.nin; i++) x[i] = in[i] ? tm_to_dtype(in[i], TM_F32) : NULL;
    tm_no_grad_end(prev);
    for (int i = 0; i < c.nin; i++)
        if (!x[i] || tm_requires_grad_(x[i], true)) goto fail;
    y = f_lin(x, &c);
    l = y ? tm_sum(y, NULL, 0, false) : NULL;
    if (!l || tm_backward(l)) goto fail;
    for (int i = 0; i < c.nin; i++) {
        tm_tensor *g = tm_grad(x[i]);
        if (!g || tm_dtype_of(g) != TM_F32 || tm_ndim(g) != tm_ndim(x[i]) ||
            memcmp(tm_shape(g), tm_shape(x[i]),
                   sizeof(int64_t) * (size_t)tm_ndim(x[i])))
            tt_fail(file, line, "F32 gradient %d: wrong shape or dtype", i);
    }
    goto done;
fail:
    tt_fail(file, line, "F32 run failed: %s", tm_last_error());
done:
    tm_free(l);
    tm_free(y);
    for (int i = 0; i < 3; i++) {
        tm_free(x[i]);
        tm_free(in[i]);
    }
}
#define SMOKE(c, a, b, d) smoke(__FILE__, __LINE__, (c), (a), (b), (d))

#define MM(...) ((lctx){K_MATMUL, {__VA_ARGS__}, 0, 2})

TEST(grad_matmul_all_numpy_forms)
{
    GC("dot", MM(0, 0), TT_LEAF(1, 4), TT_LEAF(2, 4), NULL);
    GC("vec-mat", MM(0, 0), TT_LEAF(3, 4), TT_LEAF(4, 4, 3), NULL);
    GC("mat-vec", MM(0, 0), TT_LEAF(5, 2, 4), TT_LEAF(6, 4), NULL);
    GC("mat-mat", MM(0, 0), TT_LEAF(7, 2, 4), TT_LEAF(8, 4, 3), NULL);
    GC("batch-mat", MM(0, 0), TT_LEAF(9, 2, 3, 4), TT_LEAF(10, 4, 5), NULL);
    GC("mat-batch", MM(0, 0), TT_LEAF(11, 3, 4), TT_LEAF(12, 2, 4, 5), NULL);
    GC("vec-batch", MM(0, 0), TT_LEAF(13, 4), TT_LEAF(14, 2, 4, 3), NULL);
    GC("batch-vec", MM(0, 0), TT_LEAF(15, 2, 3, 4), TT_LEAF(16, 4), NULL);
    GC("batch-batch", MM(0, 0), TT_LEAF(17, 2, 3, 4), TT_LEAF(18, 2, 4, 2),
       NULL);
    /* broadcast batch dims on both sides: [2,1,3,4] x [3,4,2] */
    GC("broadcast batch", MM(0, 0), TT_LEAF(19, 2, 1, 3, 4),
       TT_LEAF(20, 3, 4, 2), NULL);
    GC("broadcast batch 1", MM(0, 0), TT_LEAF(21, 1, 3, 4),
       TT_LEAF(22, 2, 1, 4, 2), NULL);
    GC("empty k", MM(0, 0), TT_LEAF(23, 2, 0), TT_LEAF(24, 0, 3), NULL);
}

TEST(grad_matmul_non_contiguous_operands)
{
    GC("aT b", MM(V_T, 0), TT_LEAF(30, 4, 2), TT_LEAF(31, 4, 3), NULL);
    GC("a bT", MM(0, V_T), TT_LEAF(32, 2, 4), TT_LEAF(33, 3, 4), NULL);
    GC("aT bT batch", MM(V_T, V_T), TT_LEAF(34, 2, 4, 3), TT_LEAF(35, 5, 4),
       NULL);
    GC("a step", MM(V_STEP, 0), TT_LEAF(36, 3, 8), TT_LEAF(37, 4, 2), NULL);
    GC("vec step", MM(V_STEP, V_T), TT_LEAF(38, 8), TT_LEAF(39, 2, 3, 4),
       NULL);
    /* mixed dtypes: an F32 leaf times an F64 leaf gives F64 */
    tm_tensor *a = TT_LEAF(40, 2, 3), *b = TT_LEAF(41, 3, 2), *a32 = NULL;
    REQUIRE(a && b);
    bool prev = tm_no_grad_begin();
    a32 = tm_to_dtype(a, TM_F32);
    tm_no_grad_end(prev);
    REQUIRE(a32 && tm_requires_grad_(a32, true) == TM_OK);
    tm_tensor *y = tm_matmul(a32, b), *l = y ? tm_sum(y, NULL, 0, false) : NULL;
    CHECK(l && tm_backward(l) == TM_OK);
    CHECK(tm_grad(a32) && tm_dtype_of(tm_grad(a32)) == TM_F32);
    CHECK(tm_grad(b) && tm_dtype_of(tm_grad(b)) == TM_F64);
    CHECK(y && strcmp(tm_grad_fn_name(y), "MatmulBackward") == 0);
    tm_free(l);
    tm_free(y);
    tm_free(a32);
    tm_free(a);
    tm_free(b);
    SMOKE(MM(V_T, 0), TT_LEAF(42, 2, 4, 3), TT_LEAF(43, 4, 5), NULL);
    SMOKE(MM(0, 0), TT_LEAF(44, 4), TT_LEAF(45, 4), NULL);
}

TEST(grad_gemm_records_nothing)
{
    tm_tensor *a = TT_LEAF(50, 2, 3), *b = TT_LEAF(51, 3, 2);
    tm_tensor *c = tm_zeros((int64_t[]){2, 2}, 2, TM_F64);
    REQUIRE(a && b && c);
    CHECK(tm_gemm(false, false, 1.0, a, b, 0.0, c) == TM_OK);
    CHECK(!tm_requires_grad(c) && tm_is_leaf(c));
    tm_free(a);
    tm_free(b);
    tm_free(c);
}

#define LIN(v0, v1, v2, nin) ((lctx){K_LINEAR, {v0, v1, v2}, 0, nin})

TEST(grad_linear)
{
    GC("linear", LIN(0, 0, 0, 3), TT_LEAF(60, 5, 3), TT_LEAF(61, 4, 3),
       TT_LEAF(62, 4));
    GC("linear no bias", LIN(0, 0, 0, 2), TT_LEAF(63, 5, 3),
       TT_LEAF(64, 4, 3), NULL);
    GC("linear 1-D x", LIN(0, 0, 0, 3), TT_LEAF(65, 3), TT_LEAF(66, 4, 3),
       TT_LEAF(67, 4));
    GC("linear batch", LIN(0, 0, 0, 3), TT_LEAF(68, 2, 3, 3),
       TT_LEAF(69, 2, 3), TT_LEAF(70, 2));
    GC("linear xT wT", LIN(V_T, V_T, 0, 3), TT_LEAF(71, 2, 3, 4),
       TT_LEAF(72, 3, 2), TT_LEAF(73, 2));
    GC("linear step", LIN(V_STEP, 0, V_STEP, 3), TT_LEAF(74, 4, 6),
       TT_LEAF(75, 2, 3), TT_LEAF(76, 4));
    SMOKE(LIN(V_T, 0, 0, 3), TT_LEAF(77, 2, 3, 4), TT_LEAF(78, 2, 3),
          TT_LEAF(79, 2));
}

#define SM(kind, v, dim) ((lctx){kind, {v, 0, 0}, dim, 1})

TEST(grad_softmax_and_log_softmax_any_dim)
{
    for (int k = 0; k < 2; k++) {
        int kind = k ? K_LOGSOFTMAX : K_SOFTMAX;
        uint64_t s = 100 + 10 * (uint64_t)k;
        GC("softmax last", SM(kind, 0, -1), TT_LEAF(s, 3, 4), NULL, NULL);
        GC("softmax dim 0", SM(kind, 0, 0), TT_LEAF(s + 1, 3, 4, 2), NULL,
           NULL);
        GC("softmax dim 1", SM(kind, 0, 1), TT_LEAF(s + 2, 2, 3, 4), NULL,
           NULL);
        GC("softmax transposed", SM(kind, V_T, -1), TT_LEAF(s + 3, 4, 3),
           NULL, NULL);
        GC("softmax step", SM(kind, V_STEP, 0), TT_LEAF(s + 4, 3, 6), NULL,
           NULL);
        GC("softmax 0-d", SM(kind, 0, 0), tt_leaf(NULL, 0, s + 5), NULL,
           NULL);
        SMOKE(SM(kind, V_T, 0), TT_LEAF(s + 6, 3, 4), NULL, NULL);
    }
}

#define NORM(kind, v0, nin) ((lctx){kind, {v0, 0, 0}, 0, nin})

TEST(grad_layer_norm_and_rms_norm)
{
    GC("layer_norm", NORM(K_LN, 0, 3), TT_LEAF(200, 3, 5), TT_LEAF(201, 5),
       TT_LEAF(202, 5));
    GC("layer_norm plain", NORM(K_LN, 0, 1), TT_LEAF(203, 2, 3, 4), NULL,
       NULL);
    GC("layer_norm weight only", NORM(K_LN, 0, 2), TT_LEAF(204, 3, 4),
       TT_LEAF(205, 4), NULL);
    GC("layer_norm 1-D", NORM(K_LN, 0, 3), TT_LEAF(206, 6), TT_LEAF(207, 6),
       TT_LEAF(208, 6));
    GC("layer_norm transposed", NORM(K_LN, V_T, 3), TT_LEAF(209, 5, 3),
       TT_LEAF(210, 5), TT_LEAF(211, 5));
    GC("layer_norm step", NORM(K_LN, V_STEP, 3), TT_LEAF(212, 2, 8),
       TT_LEAF(213, 4), TT_LEAF(214, 4));
    GC("rms_norm", NORM(K_RMS, 0, 2), TT_LEAF(220, 3, 5), TT_LEAF(221, 5),
       NULL);
    GC("rms_norm plain", NORM(K_RMS, 0, 1), TT_LEAF(222, 2, 3, 4), NULL,
       NULL);
    GC("rms_norm transposed", NORM(K_RMS, V_T, 2), TT_LEAF(223, 5, 3),
       TT_LEAF(224, 5), NULL);
    GC("rms_norm step", NORM(K_RMS, V_STEP, 2), TT_LEAF(225, 2, 8),
       TT_LEAF(226, 4), NULL);
    SMOKE(NORM(K_LN, V_T, 3), TT_LEAF(230, 5, 3), TT_LEAF(231, 5),
          TT_LEAF(232, 5));
    SMOKE(NORM(K_RMS, V_T, 2), TT_LEAF(233, 5, 3), TT_LEAF(234, 5), NULL);
}

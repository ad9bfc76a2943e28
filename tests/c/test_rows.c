/* test_rows.c — softmax, log_softmax, layer_norm and rms_norm: numpy
 * references (tests/data/rows.ref from tests/gen/gen_rows.py) on every
 * kernel family and on 1 and 3 threads, error messages, and bitwise
 * thread-count invariance on a large input. */
#include "ref_dispatch.h"
#include "../../cpu/cpu_features.h"

#include <string.h>

TEST(rows_match_numpy_references)
{
    tt_run_ref_file("rows.ref", tt_rows_dispatch);
}

TEST(rows_references_hold_on_three_threads)
{
    tm_set_num_threads(3);
    tt_run_ref_file("rows.ref", tt_rows_dispatch);
    tm_set_num_threads(0);
}

/* Every kernel family this CPU runs (portable C included). */
TEST(rows_references_hold_for_every_kernel_family)
{
    tm__isa best = tm__cpu_isa();
    for (int i = 0; i < TM__ISA_COUNT; i++) {
        if (!tm__set_isa((tm__isa)i)) continue;
        tt_run_ref_file("rows.ref", tt_rows_dispatch);
    }
    tm__set_isa(best);
}

TEST(rows_errors_name_the_problem)
{
    tm_tensor *x = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *xi = tm_zeros((int64_t[]){2, 3}, 2, TM_I32);
    tm_tensor *s = tm_zeros(NULL, 0, TM_F32);
    tm_tensor *w4 = tm_ones((int64_t[]){4}, 1, TM_F32);
    tm_tensor *w23 = tm_ones((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *w3d = tm_ones((int64_t[]){3}, 1, TM_F64);
    tm_tensor *w3 = tm_ones((int64_t[]){3}, 1, TM_F32);
    REQUIRE(x && xi && s && w4 && w23 && w3d && w3);
    CHECK_NULL_ERR(tm_softmax(NULL, 0), TM_EINVAL,
                   "tm_softmax: tensor is NULL");
    CHECK_NULL_ERR(tm_log_softmax(xi, 1), TM_EDTYPE,
                   "tm_log_softmax: tensor has dtype i32; a float dtype");
    CHECK_NULL_ERR(tm_softmax(x, 2), TM_ERANGE,
                   "tm_softmax: dim 2 is out of range for a 2-d tensor");
    CHECK_NULL_ERR(tm_log_softmax(x, -3), TM_ERANGE, "tm_log_softmax: dim");
    CHECK_NULL_ERR(tm_layer_norm(NULL, NULL, NULL, 1e-5), TM_EINVAL,
                   "tm_layer_norm: input is NULL");
    CHECK_NULL_ERR(tm_rms_norm(NULL, w3, 1e-5), TM_EINVAL,
                   "tm_rms_norm: input is NULL");
    CHECK_NULL_ERR(tm_layer_norm(xi, NULL, NULL, 1e-5), TM_EDTYPE,
                   "tm_layer_norm: input has dtype i32; a float dtype");
    CHECK_NULL_ERR(tm_layer_norm(x, w4, NULL, 1e-5), TM_ESHAPE,
                   "tm_layer_norm: weight has shape [4]; expected [3] (the "
                   "last dim of input shape [2,3])");
    CHECK_NULL_ERR(tm_layer_norm(x, w3, w23, 1e-5), TM_ESHAPE,
                   "tm_layer_norm: bias has shape [2,3]; expected [3]");
    CHECK_NULL_ERR(tm_layer_norm(x, w3, w3d, 1e-5), TM_EDTYPE,
                   "tm_layer_norm: bias has dtype f64 but the input has "
                   "dtype f32");
    CHECK_NULL_ERR(tm_rms_norm(x, w3d, 1e-5), TM_EDTYPE,
                   "tm_rms_norm: weight has dtype f64 but the input has "
                   "dtype f32");
    CHECK_NULL_ERR(tm_rms_norm(x, w4, 1e-5), TM_ESHAPE,
                   "tm_rms_norm: weight has shape [4]; expected [3]");
    CHECK_NULL_ERR(tm_rms_norm(s, NULL, 1e-5), TM_ESHAPE,
                   "tm_rms_norm: input is 0-d; normalizing over the last "
                   "dim needs at least 1 dim");
    CHECK_NULL_ERR(tm_layer_norm(x, NULL, NULL, -1), TM_EINVAL,
                   "tm_layer_norm: eps -1 must be finite and >= 0");
    CHECK_NULL_ERR(tm_rms_norm(x, NULL, NAN), TM_EINVAL,
                   "tm_rms_norm: eps nan must be finite and >= 0");
    CHECK_NULL_ERR(tm_rms_norm(x, NULL, INFINITY), TM_EINVAL,
                   "tm_rms_norm: eps inf must be finite and >= 0");
    tm_free(x);
    tm_free(xi);
    tm_free(s);
    tm_free(w4);
    tm_free(w23);
    tm_free(w3d);
    tm_free(w3);
}

/* softmax of a 0-d tensor is 1 (log: 0), as in PyTorch. */
TEST(rows_softmax_of_a_scalar_is_one)
{
    tm_tensor *s = tm_full(NULL, 0, -7.5, TM_F32);
    REQUIRE(s);
    tm_tensor *a = tm_softmax(s, 0), *b = tm_log_softmax(s, -1);
    REQUIRE(a && b);
    CHECK_INT(tm_ndim(a), 0);
    CHECK_VALUES(a, ((double[]){1.0}), 1, 0, 0);
    CHECK_VALUES(b, ((double[]){0.0}), 1, 0, 0);
    tm_free(a);
    tm_free(b);
    tm_free(s);
}

static bool same_bytes(const tm_tensor *a, const tm_tensor *b)
{
    return a && b && tm_numel(a) == tm_numel(b) &&
           !memcmp(tm_data(a), tm_data(b),
                   (size_t)tm_numel(a) * tm_dtype_size(tm_dtype_of(a)));
}

/* Row results do not depend on how rows are split over threads. */
TEST(rows_are_bitwise_identical_for_any_thread_count)
{
    tm_manual_seed(44);
    tm_tensor *x = tm_randn((int64_t[]){512, 1000}, 2, TM_F32);
    tm_tensor *w = tm_randn((int64_t[]){1000}, 1, TM_F32);
    tm_tensor *b = tm_randn((int64_t[]){1000}, 1, TM_F32);
    tm_tensor *xt = x ? tm_transpose(x, 0, 1) : NULL;
    REQUIRE(x && w && b && xt);
    tm_tensor *r[2][6];
    for (int k = 0; k < 2; k++) {
        tm_set_num_threads(k ? 3 : 1);
        r[k][0] = tm_softmax(x, 1);
        r[k][1] = tm_log_softmax(x, -1);
        r[k][2] = tm_layer_norm(x, w, b, 1e-5);
        r[k][3] = tm_rms_norm(x, w, 1e-6);
        r[k][4] = tm_softmax(x, 0);
        r[k][5] = tm_layer_norm(xt, NULL, NULL, 1e-5);
    }
    tm_set_num_threads(0);
    for (int i = 0; i < 6; i++) {
        if (!same_bytes(r[0][i], r[1][i]))
            tt_fail(__FILE__, __LINE__, "result %d differs between 1 and 3 "
                    "threads", i);
        tm_free(r[0][i]);
        tm_free(r[1][i]);
    }
    tm_free(xt);
    tm_free(x);
    tm_free(w);
    tm_free(b);
}

/* Every row of a softmax sums to 1, also for long rows (several blocks)
 * and values that would overflow exp without the max shift. */
TEST(rows_softmax_rows_sum_to_one)
{
    tm_manual_seed(45);
    tm_tensor *x = tm_randn((int64_t[]){3, 5001}, 2, TM_F32);
    REQUIRE(x);
    tm_tensor *y = tm_mul_scalar(x, 100.0);
    tm_tensor *s = y ? tm_softmax(y, 1) : NULL;
    tm_tensor *t = s ? tm_sum(s, (int[]){1}, 1, false) : NULL;
    REQUIRE(t);
    CHECK_VALUES(t, ((double[]){1, 1, 1}), 3, 1e-6, 0);
    tm_free(t);
    tm_free(s);
    tm_free(y);
    tm_free(x);
}

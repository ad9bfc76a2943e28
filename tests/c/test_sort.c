/* test_sort.c — tm_sort / tm_argsort / tm_topk against numpy references,
 * stability with many equal keys, thread-count invariance, optional
 * outputs, errors and allocation failures. */
#include "ref_dispatch.h"

#include <stdlib.h>

TEST(sort_matches_numpy_references)
{
    tt_run_ref_file("sort.ref", tt_sort_dispatch);
}

/* rows x n F32 values in {0, 1, 2} (many ties) from a fixed LCG. */
static tm_tensor *tied_values(int64_t rows, int64_t n, uint32_t seed)
{
    float *v = malloc(sizeof(float) * (size_t)(rows * n));
    if (!v) return NULL;
    for (int64_t i = 0; i < rows * n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 16) % 3);
    }
    tm_tensor *t = tm_from_buffer(v, (int64_t[]){rows, n}, 2, TM_F32);
    free(v);
    return t;
}

/* Checks that rows of (vals, idx) are a stable sort of `in` (contiguous
 * F32 [rows, n]): ordered, equal keys with rising indices, and
 * vals[j] == in[idx[j]]. */
static void check_stable_sort(const tm_tensor *in, const tm_tensor *vals,
                              const tm_tensor *idx, bool desc)
{
    int64_t rows = tm_shape(in)[0], n = tm_shape(in)[1];
    const float *x = tm_data(in), *v = tm_data(vals);
    const int64_t *ix = tm_data(idx);
    int bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            int64_t p = r * n + j;
            bool ok = ix[p] >= 0 && ix[p] < n && v[p] == x[r * n + ix[p]];
            if (ok && j > 0) {
                float a = v[p - 1], b = v[p];
                ok = desc ? a >= b : a <= b;
                if (a == b) ok = ok && ix[p - 1] < ix[p];
            }
            if (!ok && bad++ < 3)
                tt_fail(__FILE__, __LINE__, "row %lld position %lld is not "
                        "a stable sort", (long long)r, (long long)j);
        }
}

TEST(sort_is_stable_with_many_equal_keys)
{
    tm_tensor *t = tied_values(3, 5000, 7);
    REQUIRE(t);
    for (int desc = 0; desc < 2; desc++) {
        tm_tensor *v = NULL, *i = NULL;
        CHECK_INT(tm_sort(t, 1, desc, &v, &i), TM_OK);
        REQUIRE(v && i);
        check_stable_sort(t, v, i, desc);
        tm_free(v);
        tm_free(i);
    }
    tm_free(t);
}

TEST(sort_is_identical_for_any_thread_count)
{
    tm_tensor *t = tied_values(64, 1500, 11);
    REQUIRE(t);
    tm_tensor *v1 = NULL, *i1 = NULL, *v3 = NULL, *i3 = NULL;
    tm_set_num_threads(1);
    CHECK_INT(tm_sort(t, -1, true, &v1, &i1), TM_OK);
    tm_set_num_threads(3);
    CHECK_INT(tm_sort(t, -1, true, &v3, &i3), TM_OK);
    tm_set_num_threads(0);
    REQUIRE(v1 && i1 && v3 && i3);
    check_stable_sort(t, v3, i3, true);
    CHECK(memcmp(tm_data(v1), tm_data(v3), tm_nbytes(v1)) == 0);
    CHECK(memcmp(tm_data(i1), tm_data(i3), tm_nbytes(i1)) == 0);
    tm_free(v1);
    tm_free(i1);
    tm_free(v3);
    tm_free(i3);
    tm_free(t);
}

TEST(sort_outputs_are_optional)
{
    double x[] = {3, 1, 2};
    tm_tensor *t = tt_tensor(x, (int64_t[]){3}, 1, TM_I16);
    REQUIRE(t);
    tm_tensor *v = NULL, *i = NULL;
    CHECK_INT(tm_sort(t, 0, false, &v, NULL), TM_OK);
    double wv[] = {1, 2, 3}, wi[] = {1, 2, 0}, wk[] = {0, 2};
    REQUIRE(v);
    CHECK(tm_dtype_of(v) == TM_I16);
    CHECK_VALUES(v, wv, 3, 0, 0);
    CHECK_INT(tm_sort(t, 0, false, NULL, &i), TM_OK);
    REQUIRE(i);
    CHECK(tm_dtype_of(i) == TM_I64);
    CHECK_VALUES(i, wi, 3, 0, 0);
    tm_free(i);
    i = NULL;
    CHECK_INT(tm_topk(t, 2, 0, true, NULL, &i), TM_OK);
    REQUIRE(i);
    CHECK_VALUES(i, wk, 2, 0, 0);
    tm_free(i);
    tm_free(v);
    tm_free(t);
}

TEST(sort_errors_name_the_problem)
{
    tm_tensor *t = tm_zeros((int64_t[]){2, 3}, 2, TM_F32);
    tm_tensor *s = tm_scalar(1, TM_F32);
    REQUIRE(t && s);
    tm_tensor *v = (tm_tensor *)1, *i = (tm_tensor *)1;
    CHECK_STATUS(tm_sort(NULL, 0, false, &v, &i), TM_EINVAL,
                 "tm_sort: tensor is NULL");
    CHECK(v == NULL && i == NULL); /* outputs cleared on failure */
    CHECK_STATUS(tm_sort(t, 0, false, NULL, NULL), TM_EINVAL,
                 "tm_sort: values and indices are both NULL");
    CHECK_STATUS(tm_sort(t, -3, false, &v, &i), TM_ERANGE,
                 "tm_sort: dim -3 is out of range for a 2-d tensor");
    CHECK_NULL_ERR(tm_argsort(t, 2, true), TM_ERANGE,
                   "tm_argsort: dim 2 is out of range");
    CHECK_NULL_ERR(tm_argsort(NULL, 0, true), TM_EINVAL,
                   "tm_argsort: tensor is NULL");
    CHECK_STATUS(tm_topk(t, 4, 1, true, &v, &i), TM_EINVAL,
                 "tm_topk: k 4 is out of range for dim 1 of size 3");
    CHECK_STATUS(tm_topk(t, -1, 0, true, &v, &i), TM_EINVAL,
                 "tm_topk: k -1 is out of range for dim 0 of size 2");
    CHECK_STATUS(tm_topk(s, 0, 0, true, &v, &i), TM_EINVAL,
                 "tm_topk: k 0 is out of range for a 0-d tensor");
    CHECK_STATUS(tm_topk(t, 1, 5, true, &v, &i), TM_ERANGE,
                 "tm_topk: dim 5 is out of range");
    CHECK_STATUS(tm_topk(NULL, 1, 0, true, &v, &i), TM_EINVAL,
                 "tm_topk: tensor is NULL");
    CHECK(v == NULL && i == NULL);
    tm_free(t);
    tm_free(s);
}

/* Every allocation of a topk (sort, then cut) fails in turn. */
TEST(topk_survives_every_allocation_failure)
{
    double x[] = {5, 1, 4, 1, 5, 9, 2, 6};
    tm_tensor *t = tt_tensor(x, (int64_t[]){2, 4}, 2, TM_F32);
    tm_tensor *tt = t ? tm_transpose(t, 0, 1) : NULL;
    REQUIRE(tt);
    int failures = 0;
    for (int64_t n = 1; n < 100; n++) {
        tm_tensor *v = NULL, *i = NULL;
        tm_clear_error();
        tm_alloc_fail_after(n);
        tm_status st = tm_topk(tt, 1, 0, true, &v, &i);
        tm_alloc_fail_after(0);
        if (st == TM_OK) {
            double wv[] = {5, 9}, wi[] = {0, 1};
            CHECK_VALUES(v, wv, 2, 0, 0);
            CHECK_VALUES(i, wi, 2, 0, 0);
            tm_free(v);
            tm_free(i);
            break;
        }
        failures++;
        CHECK_INT(st, TM_ENOMEM);
        CHECK(v == NULL && i == NULL);
    }
    CHECK(failures >= 4);
    tm_free(tt);
    tm_free(t);
}

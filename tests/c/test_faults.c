/* test_faults.c — out-of-memory injection at every allocation of a
 * sequence of ops: each failure must surface as NULL/TM_ENOMEM with a
 * message, leak nothing (the harness checks the allocator's byte count
 * after each test) and never crash. */
#include "harness.h"

#define STEP(var, expr)                                                       \
    do {                                                                      \
        if (!((var) = (expr))) goto fail;                                     \
    } while (0)

/* A little of everything: creation, views, conversion, elementwise with
 * broadcasting, reductions, matmul, indexing, shaping and sorting. */
static tm_status run_sequence(void)
{
    tm_tensor *t[24] = {0};
    tm_status st = TM_OK;
    tm_rng rng = tm_rng_new(1);
    STEP(t[0], tm_randn((int64_t[]){6, 5}, 2, TM_F32));
    STEP(t[1], tm_transpose(t[0], 0, 1));
    STEP(t[2], tm_contiguous(t[1]));
    STEP(t[3], tm_to_dtype(t[2], TM_F16));
    STEP(t[4], tm_arange(0, 5, 1, TM_F32));
    STEP(t[5], tm_add(t[0], t[4]));                  /* broadcast [6,5]+[5] */
    STEP(t[6], tm_exp(t[3]));
    STEP(t[7], tm_sum(t[5], (int[]){1}, 1, true));
    STEP(t[8], tm_matmul(t[0], t[1]));               /* [6,6] */
    STEP(t[9], tm_argmax(t[8], 1, true));
    STEP(t[10], tm_gather(t[8], 1, t[9]));
    STEP(t[11], tm_cat((tm_tensor *[]){t[7], t[10]}, 2, 1));
    STEP(t[12], tm_where(t[9], t[7], t[10]));
    tm_tensor *vals = NULL, *idx = NULL;
    if ((st = tm_sort(t[5], -1, true, &vals, &idx))) goto done;
    t[13] = vals;
    t[14] = idx;
    STEP(t[15], tm_var(t[13], NULL, 0, 1, false));
    STEP(t[16], tm_pad(t[13], (int64_t[]){1, 2}, 2, 0.5));
    STEP(t[17], tm_zeros((int64_t[]){3, 4}, 2, TM_F64));
    if ((st = tm_normal_(t[17], 0, 1, &rng))) goto done;
    STEP(t[18], tm_reshape(t[1], (int64_t[]){30}, 1)); /* copies */
    STEP(t[19], tm_cumsum(t[18], 0));
    STEP(t[20], tm_one_hot(t[14], -1));
    STEP(t[21], tm_logsumexp(t[6], NULL, 0, false));
    goto done;
fail:
    st = tm_last_status();
done:
    for (int i = 0; i < 24; i++) tm_free(t[i]);
    return st;
}

TEST(every_allocation_failure_in_a_sequence_is_clean)
{
    CHECK_EVERY_ALLOC_FAILURE(run_sequence, 40);
}

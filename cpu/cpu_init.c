/* cpu_init.c — the element loops of the truncated-normal initialiser
 * (nn/init.c; contracts in cpu_nn.h): counting the draws outside [a, b]
 * and replacing them, in index order, with the next round of draws.  One
 * thread, in order of i: which draw lands where must depend only on the
 * generator. */
#include "cpu_nn.h"

/* !(x >= a && x <= b) rather than x < a || x > b: NaN is outside. */
static bool outside(double x, double a, double b)
{
    return !(x >= a && x <= b);
}

int64_t tm__trunc_count_outside(const double *v, int64_t n, double a,
                                double b)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += outside(v[i], a, b);
    return bad;
}

void tm__trunc_replace_outside(double *v, int64_t n, double a, double b,
                               const double *m)
{
    for (int64_t i = 0, k = 0; i < n; i++)
        if (outside(v[i], a, b)) v[i] = m[k++];
}

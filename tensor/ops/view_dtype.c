/* view_dtype.c — a tensor's bytes reinterpreted as another dtype (a view,
 * as torch.Tensor.view(dtype)).  Only the geometry changes, so it works
 * on every device; no gradient flows across a change of dtype. */
#include "compose_impl.h"

tm_tensor *tm_view_dtype(const tm_tensor *t, tm_dtype dt)
{
    if (tm__check_tensor(__func__, t, "tensor")) return NULL;
    if (!tm_dtype_is_valid(dt) || !tm_dtype_is_valid(t->dtype)) {
        TM_ERR(TM_EDTYPE, "cannot view %s as %s: both must be dense dtypes",
               tm_dtype_name(t->dtype), tm_dtype_name(dt));
        return NULL;
    }
    if (dt == t->dtype) return tm_view(t, t->shape, t->ndim);
    int64_t so = (int64_t)tm_dtype_size(t->dtype);
    int64_t sn = (int64_t)tm_dtype_size(dt);
    int nd = t->ndim;
    int64_t shape[TM_MAX_DIMS], strides[TM_MAX_DIMS], off = t->offset;
    for (int i = 0; i < nd; i++) {
        shape[i] = t->shape[i];
        strides[i] = t->strides[i];
    }
    const char *a = tm_dtype_name(t->dtype), *b = tm_dtype_name(dt);
    if (so != sn) {
        if (nd == 0) {
            TM_ERR(TM_EINVAL, "a 0-d tensor cannot be viewed as %s from %s "
                   "(different element sizes)", b, a);
            return NULL;
        }
        if (strides[nd - 1] != 1 && shape[nd - 1] != 1) {
            TM_ERR(TM_EINVAL, "the last dim's stride must be 1 to view %s as "
                   "%s (different element sizes), got %lld", a, b,
                   (long long)strides[nd - 1]);
            return NULL;
        }
        strides[nd - 1] = 1;
    }
    if (so > sn) { /* each element becomes r narrower ones */
        int64_t r = so / sn;
        for (int i = 0; i < nd - 1; i++) strides[i] *= r;
        shape[nd - 1] *= r;
        off *= r;
    } else if (so < sn) { /* every r elements become one */
        int64_t r = sn / so;
        if (shape[nd - 1] % r || off % r) {
            TM_ERR(TM_EINVAL, "the last dim's size (%lld) and the offset "
                   "(%lld) must be divisible by %lld to view %s as %s",
                   (long long)shape[nd - 1], (long long)off, (long long)r, a,
                   b);
            return NULL;
        }
        for (int i = 0; i < nd - 1; i++)
            if (strides[i] % r) {
                TM_ERR(TM_EINVAL, "stride %lld of dim %d must be divisible "
                       "by %lld to view %s as %s", (long long)strides[i], i,
                       (long long)r, a, b);
                return NULL;
            }
        for (int i = 0; i < nd - 1; i++) strides[i] /= r;
        shape[nd - 1] /= r;
        off /= r;
    }
    tm_tensor *v = tm_tensor_from_storage(t->storage, off, shape, strides, nd,
                                          dt);
    if (!v) tm__relabel_error(__func__, tm_last_status());
    return v;
}

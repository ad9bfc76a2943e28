/* stage.c — running an entry on converted copies of its operands when the
 * backend declines their dtypes (tensor_impl.h, "dtype fallback"). */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>

void tm__stage_add(tm__stage *s, tm_buf *b, int mode)
{
    if (!b || !b->handle) return; /* absent operand */
    for (int i = 0; i < s->n; i++)
        if (s->buf[i] == b) {
            s->mode[i] |= mode;
            return;
        }
    if (s->n < TM__STAGE_MAX) {
        s->buf[s->n] = b;
        s->mode[s->n++] = mode;
    }
}

static bool tm__asks(tm_ctx *cx, tm_entry e, int op, const tm_dtype *dts,
                     int n)
{
    return cx->backend->supports(cx, e, op, dts, n);
}

tm_status tm__stage_begin(const char *fn, tm_ctx *cx, tm_entry e, int op,
                          tm__stage *s)
{
    if (!cx->backend->supports) return TM_OK;
    tm_dtype dts[TM__STAGE_MAX];
    for (int i = 0; i < s->n; i++) dts[i] = s->buf[i]->dtype;
    if (tm__asks(cx, e, op, dts, s->n)) return TM_OK;
    for (int i = 0; i < s->n; i++)
        if (tm_dtype_is_float(dts[i])) dts[i] = TM_F32;
    if (!tm__asks(cx, e, op, dts, s->n)) {
        for (int i = 0; i < s->n; i++)
            if (!tm_dtype_is_float(dts[i])) dts[i] = TM_I64;
        if (!tm__asks(cx, e, op, dts, s->n)) {
            char list[128] = "";
            size_t used = 0;
            for (int i = 0; i < s->n && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used,
                                         "%s%s", i ? ", " : "",
                                         tm_dtype_name(s->buf[i]->dtype));
            return tm__errf(TM_EUNSUPPORTED, fn, "device %s does not run "
                            "'%s' (op %d) on %s, nor on F32/I64 copies",
                            tm_device_name(cx->device), tm_entry_name(e), op,
                            list);
        }
    }
    for (int i = 0; i < s->n; i++) {
        s->tmp[i] = NULL;
        s->orig[i] = *s->buf[i];
    }
    for (int i = 0; i < s->n; i++) {
        if (dts[i] == s->orig[i].dtype) continue;
        const tm_buf *b = &s->orig[i];
        tm_tensor *t = tm__tensor_new(fn, b->shape, b->ndim, dts[i],
                                      cx->device);
        tm_status st = t ? TM_OK : tm_last_status();
        tm_buf tb;
        if (t) tb = tm__buf(t);
        if (t && (s->mode[i] & TM__STAGE_IN))
            st = TM__CALL(fn, cx, copy, &tb, b);
        if (t) s->tmp[i] = t;
        if (st) return tm__stage_end(fn, cx, s, st);
        *s->buf[i] = tb;
    }
    return TM_OK;
}

tm_status tm__stage_end(const char *fn, tm_ctx *cx, tm__stage *s,
                        tm_status st)
{
    if (!cx->backend->supports) return st;
    for (int i = 0; i < s->n; i++) {
        if (!s->tmp[i]) continue;
        if (!st && (s->mode[i] & TM__STAGE_OUT))
            st = TM__CALL(fn, cx, copy, &s->orig[i], s->buf[i]);
        *s->buf[i] = s->orig[i];
        tm_free(s->tmp[i]);
        s->tmp[i] = NULL;
    }
    return st;
}

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
            s->mode[i] |= (unsigned char)mode;
            return;
        }
    if (s->n == TM__STAGE_MAX) {
        s->overflow = true;
        return;
    }
    s->buf[s->n] = b;
    s->mode[s->n++] = (unsigned char)mode;
}

static bool tm__asks(tm_ctx *cx, tm_entry e, int op, const tm_dtype *dts,
                     int n)
{
    return cx->backend->supports(cx, e, op, dts, n);
}

/* The dtypes to run (e, op) on: the operands' own, or F32 for floats,
 * then I64 for the rest too; false when the backend declines all. */
static bool tm__stage_dtypes(tm_ctx *cx, tm_entry e, int op,
                             const tm__stage *s, tm_dtype *dts)
{
    for (int i = 0; i < s->n; i++) dts[i] = s->buf[i]->dtype;
    if (tm__asks(cx, e, op, dts, s->n)) return true;
    for (int i = 0; i < s->n; i++)
        if (tm_dtype_is_float(dts[i])) dts[i] = TM_F32;
    if (tm__asks(cx, e, op, dts, s->n)) return true;
    for (int i = 0; i < s->n; i++)
        if (!tm_dtype_is_float(dts[i])) dts[i] = TM_I64;
    return tm__asks(cx, e, op, dts, s->n);
}

tm_status tm__stage_begin(const char *fn, tm_ctx *cx, tm_entry e, int op,
                          tm__stage *s)
{
    if (!cx->backend->supports) return TM_OK;
    if (s->overflow)
        return tm__errf(TM_ESTATE, fn, "internal error: '%s' has more than "
                        "%d operands to stage", tm_entry_name(e),
                        TM__STAGE_MAX);
    tm_dtype dts[TM__STAGE_MAX];
    if (!tm__stage_dtypes(cx, e, op, s, dts)) {
        char list[128] = "";
        size_t used = 0;
        for (int i = 0; i < s->n && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                     i ? ", " : "",
                                     tm_dtype_name(s->buf[i]->dtype));
        return tm__errf(TM_EUNSUPPORTED, fn, "device %s does not run '%s' "
                        "(op %d) on %s, nor on F32/I64 copies",
                        tm_device_name(cx->device), tm_entry_name(e), op,
                        list);
    }
    bool any = false;
    for (int i = 0; i < s->n; i++) any |= dts[i] != s->buf[i]->dtype;
    if (!any) return TM_OK;
    if (!(s->cp = tm__calloc(sizeof *s->cp, fn))) return tm_last_status();
    for (int i = 0; i < s->n; i++) s->cp->orig[i] = *s->buf[i];
    for (int i = 0; i < s->n; i++) {
        if (dts[i] == s->cp->orig[i].dtype) continue;
        const tm_buf *b = &s->cp->orig[i];
        tm_tensor *t = tm__tensor_new(fn, b->shape, b->ndim, dts[i],
                                      cx->device);
        if (!t) return tm__stage_end(fn, cx, s, tm_last_status());
        s->cp->tmp[i] = t;
        tm_buf tb = tm__buf(t);
        if (s->mode[i] & TM__STAGE_IN) {
            tm_status st = TM__CALL(fn, cx, copy, &tb, b);
            if (st) return tm__stage_end(fn, cx, s, st);
        }
        *s->buf[i] = tb;
    }
    return TM_OK;
}

tm_status tm__stage_end(const char *fn, tm_ctx *cx, tm__stage *s,
                        tm_status st)
{
    tm__stage_copies *cp = s->cp;
    if (!cp) return st;
    for (int i = 0; i < s->n; i++) {
        if (!cp->tmp[i]) continue;
        if (!st && (s->mode[i] & TM__STAGE_OUT))
            st = TM__CALL(fn, cx, copy, &cp->orig[i], s->buf[i]);
        *s->buf[i] = cp->orig[i];
        tm_free(cp->tmp[i]);
    }
    tm__dealloc(cp);
    s->cp = NULL;
    return st;
}

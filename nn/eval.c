/*
 * eval.c — tm_gpt_evaluate: mean loss, perplexity, bits per byte and
 * accuracy of a model over a split of a token dataset
 * (foundry/models.h).
 *
 * Windows: window w holds tokens [w T, w T + T] of the split, so inputs
 * never overlap and every token after the first is a target exactly once.
 * Over the whole split a last, shorter window takes the tokens left over.
 */
#include "gpt_impl.h"

#include "foundry/ops.h"

#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdlib.h>

/* Loss summed over the batch and the count of argmax hits, for nb windows
 * of T + 1 tokens starting at token `start` and every T tokens after. */
static tm_status eval_batch(tm_gpt *m, const tm_token_dataset *ds,
                            tm_token_split split, int64_t start, int64_t nb,
                            int64_t T, int64_t *buf, double *loss_sum,
                            double *hits, const char *fn)
{
    tm_status st = TM_OK;
    int64_t *xs = buf, *ys = buf + nb * T, *win = buf + 2 * nb * T;
    for (int64_t b = 0; b < nb && !st; b++) {
        st = tm_token_dataset_read(ds, split, start + b * T, T + 1, win);
        for (int64_t t = 0; t < T && !st; t++) {
            xs[b * T + t] = win[t];
            ys[b * T + t] = win[t + 1];
        }
    }
    if (st) return tm__relabel_error(fn, st);
    int64_t shape[2] = {nb, T}, flat[2] = {nb * T, m->cfg.vocab_size},
            one[1] = {nb * T};
    tm_tensor *x = tm_from_buffer(xs, shape, 2, TM_I64);
    tm_tensor *y = tm_from_buffer(ys, one, 1, TM_I64);
    tm_tensor *logits = x && y ? tm_gpt_forward(m, x, NULL) : NULL;
    tm_tensor *lf = logits ? tm_reshape(logits, flat, 2) : NULL;
    tm_cross_entropy_opts o = tm_cross_entropy_defaults();
    o.reduction = TM_REDUCTION_SUM;
    tm_tensor *loss = lf ? tm_cross_entropy(lf, y, &o) : NULL;
    tm_tensor *am = lf ? tm_argmax(lf, 1, false) : NULL;
    tm_tensor *eq = am ? tm_eq(am, y) : NULL;
    tm_tensor *cnt = eq ? tm_sum(eq, NULL, 0, false) : NULL;
    double l = 0, h = 0;
    if (!loss || !cnt || tm_item(loss, &l) || tm_item(cnt, &h))
        st = tm__relabel_error(fn, tm_last_status());
    *loss_sum += l;
    *hits += h;
    tm_free(x);
    tm_free(y);
    tm_free(logits);
    tm_free(lf);
    tm_free(loss);
    tm_free(am);
    tm_free(eq);
    tm_free(cnt);
    return st;
}

tm_status tm_gpt_evaluate(tm_gpt *m, const tm_token_dataset *ds,
                          tm_token_split split, int64_t batch, int64_t T,
                          int64_t max_batches, tm_progress *progress,
                          tm_eval_result *out)
{
    const char *fn = __func__;
    if (!m || !ds || !out) return TM_ERR(TM_EINVAL, "model, ds or out is NULL");
    if (batch < 1 || T < 1 || max_batches < 0)
        return TM_ERR(TM_EINVAL, "batch %lld and T %lld must be >= 1, "
                      "max_batches %lld >= 0", (long long)batch, (long long)T,
                      (long long)max_batches);
    if (T > m->cfg.context)
        return TM_ERR(TM_EINVAL, "T %lld is larger than the context %lld",
                      (long long)T, (long long)m->cfg.context);
    int64_t dv = tm_token_dataset_vocab_size(ds);
    if (dv > m->cfg.vocab_size)
        return TM_ERR(TM_EINVAL, "the dataset's vocabulary (%lld) is larger "
                      "than the model's (%lld)", (long long)dv,
                      (long long)m->cfg.vocab_size);
    int64_t n = tm_token_dataset_tokens(ds, split);
    if (n < 0) return tm__relabel_error(fn, tm_last_status());
    if (n < 2)
        return TM_ERR(TM_EINVAL, "the split has %lld tokens: nothing to "
                      "predict", (long long)n);
    int64_t bytes = tm_token_dataset_bytes(ds, split);
    if (bytes < 0) return tm__relabel_error(fn, tm_last_status());
    int64_t windows = (n - 1) / T, tail = (n - 1) % T;
    if (max_batches > 0 && windows >= max_batches * batch) {
        windows = max_batches * batch;
        tail = 0;
    }
    int64_t *buf = malloc(sizeof *buf * (size_t)(2 * batch * T + T + 1));
    if (!buf) return TM_ERR(TM_ENOMEM, "out of memory");
    bool was_training = m->training, prev = tm_no_grad_begin();
    m->training = false;
    double loss_sum = 0, hits = 0;
    tm_status st = TM_OK;
    for (int64_t w = 0; w < windows && !st; w += batch) {
        int64_t nb = windows - w < batch ? windows - w : batch;
        st = eval_batch(m, ds, split, w * T, nb, T, buf, &loss_sum, &hits,
                        fn);
        if (progress && !st) {
            tm_progress_update(progress, nb * T);
            tm_progress_set_metric(progress, "loss",
                                   loss_sum / (double)((w + nb) * T));
        }
    }
    if (!st && tail > 0) {
        st = eval_batch(m, ds, split, windows * T, 1, tail, buf, &loss_sum,
                        &hits, fn);
        if (progress && !st) tm_progress_update(progress, tail);
    }
    m->training = was_training;
    tm_no_grad_end(prev);
    free(buf);
    if (st) return st;
    int64_t tokens = windows * T + tail;
    /* The text bytes the targets cover: all of them over the whole split
     * (its first token, never a target, is one of n), else their share. */
    double covered = tokens == n - 1 ? (double)bytes
                                     : (double)bytes * (double)tokens /
                                           (double)(n - 1);
    tm_eval_result r;
    r.tokens = tokens;
    r.mean_loss = loss_sum / (double)tokens;
    r.perplexity = exp(r.mean_loss);
    r.bits_per_byte = covered > 0 ? loss_sum / (log(2.0) * covered) : NAN;
    r.accuracy = hits / (double)tokens;
    *out = r;
    return TM_OK;
}

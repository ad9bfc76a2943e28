/* The training loop of `foundry train`: steps, evaluation, metrics, plot
 * and checkpoints. */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The optimizer's parameters, each once (tied weights are one tensor). */
static tm_tensor **optim_params(const tm_optim *opt, int *n)
{
    int total = tm_optim_param_count(opt), k = 0;
    tm_tensor **p = calloc((size_t)total + 1, sizeof *p);
    if (!p) {
        tm_set_error(TM_ENOMEM, "out of memory");
        return NULL;
    }
    for (int g = 0; g < tm_optim_group_count(opt); g++)
        for (int i = 0; i < tm_optim_group_size(opt, g); i++)
            p[k++] = tm_optim_param(opt, g, i);
    *n = k;
    return p;
}

/* One optimizer step over grad_accum micro-batches; *loss gets their mean. */
static tm_status train_step(tm_gpt *m, tm_optim *opt, tm_swarm *sw, tm_token_loader *ld,
                            tm_tensor **params, int n_params, const train_opts *o, double lr,
                            double *loss)
{
    tm_status s = TM_OK;
    double sum = 0;
    tm_optim_zero_grad(opt);
    for (int64_t k = 0; k < o->grad_accum && s == TM_OK; k++) {
        tm_tensor *x = NULL, *y = NULL, *l = NULL, *scaled = NULL;
        double v = 0;
        if ((s = tm_token_loader_next(ld, &x, &y)) != TM_OK)
            break;
        if (!(l = tm_gpt_loss(m, x, y, NULL)))
            s = tm_last_status();
        /* The mean over micro-batches, so the gradient does not grow with them. */
        else if (o->grad_accum > 1 && !(scaled = tm_mul_scalar(l, 1.0 / (double)o->grad_accum)))
            s = tm_last_status();
        else if ((s = tm_backward(scaled ? scaled : l)) == TM_OK && (s = tm_item(l, &v)) == TM_OK)
            sum += v;
        tm_free(scaled);
        tm_free(l);
        tm_free(x);
        tm_free(y);
    }
    if (s == TM_OK && o->clip > 0)
        s = tm_clip_grad_norm_(params, n_params, o->clip, 2.0, NULL);
    if (s == TM_OK)
        s = tm_optim_set_lr(opt, -1, lr);
    /* In a swarm the step exchanges the gradients (or, in DiLoCo mode, the
     * parameter change every H steps) and then runs the optimizer. */
    if (s == TM_OK)
        s = sw ? tm_swarm_step(sw) : tm_optim_step(opt);
    *loss = sum / (double)o->grad_accum;
    if (s == TM_OK && !isfinite(*loss))
        s = tm_set_error(TM_EINVAL, "the training loss is %g at this step: lower --lr", *loss);
    return s;
}

/* Optimizer steps per swarm round: H in DiLoCo mode, else 1. */
static int64_t swarm_h(const train_opts *o)
{
    return o->swarm->mode == TM_SWARM_DILOCO ? o->swarm->local_steps : 1;
}

/* The optimizer step a swarm is at. */
static int64_t swarm_step(const train_opts *o, const tm_swarm *sw)
{
    return tm_swarm_round(sw) * swarm_h(o);
}

/* Bytes on the wire against what dense F32 gradients every step would take. */
static void swarm_report(const train_opts *o, const tm_swarm *sw, int64_t n_weights)
{
    uint64_t sent = 0, received = 0;
    tm_swarm_bytes(sw, &sent, &received);
    double dense = 4.0 * (double)n_weights * (double)o->steps;
    printf("swarm: worker %d, %d workers in the last round, round %lld; sent %.2f MB (%.3f%% of dense "
           "F32 gradients every step), received %.2f MB\n",
           tm_swarm_rank(sw), tm_swarm_world(sw), (long long)tm_swarm_round(sw), (double)sent / 1e6,
           100.0 * (double)sent / dense, (double)received / 1e6);
}

static tm_status checkpoint(const train_opts *o, const cli_cmd *cmd, tm_gpt *m, const tm_optim *opt,
                            const tm_token_loader *ld, train_state *st)
{
    tm_status s;
    st->loader_position = tm_token_loader_position(ld);
    st->model_rng = tm_gpt_rng(m);
    /* trainer.json last: it names the step the other files belong to. */
    if ((s = tm_gpt_save(m, o->out)) != TM_OK || (s = ckpt_save_optim(opt, o->out)) != TM_OK)
        return s;
    return ckpt_write_trainer(o->out, st, cmd);
}

/* A loss estimate from eval_batches random windows of a split: the same
 * windows at every evaluation (a fixed seed), so the curve compares like
 * with like, and spread over the whole split, so it is not biased towards
 * its first documents. */
static tm_status sample_loss(tm_gpt *m, const tm_token_dataset *ds, tm_token_split split,
                             const train_opts *o, double *loss)
{
    int64_t T = tm_gpt_config_of(m)->context, nb = o->eval_batches ? o->eval_batches : 1;
    tm_token_loader *ld = tm_token_loader_new(ds, split, o->batch, T, (uint64_t)o->seed ^ 0x5eedull);
    tm_status s = ld ? TM_OK : tm_last_status();
    bool grad = tm_grad_enabled();
    double sum = 0;
    tm_set_grad_enabled(false);
    tm_gpt_set_training(m, false);
    for (int64_t k = 0; k < nb && s == TM_OK; k++) {
        tm_tensor *x = NULL, *y = NULL, *l = NULL;
        double v = 0;
        if ((s = tm_token_loader_next(ld, &x, &y)) == TM_OK) {
            if (!(l = tm_gpt_loss(m, x, y, NULL)))
                s = tm_last_status();
            else if ((s = tm_item(l, &v)) == TM_OK)
                sum += v;
        }
        tm_free(l);
        tm_free(x);
        tm_free(y);
    }
    tm_gpt_set_training(m, true);
    tm_set_grad_enabled(grad);
    tm_token_loader_free(ld);
    *loss = sum / (double)nb;
    return s;
}

static tm_status log_and_plot(tm_metrics *mt, const train_opts *o, int64_t step, int n,
                              const char *const *keys, const double *vals, bool plot)
{
    tm_status s = tm_metrics_log(mt, step, n, keys, vals);
    if (s == TM_OK && plot) {
        char *mp = cli_path(o->out, "metrics.jsonl"), *sp = cli_path(o->out, "loss.svg");
        s = (mp && sp) ? tm_plot_metrics_svg(mp, sp, o->out) : TM_ENOMEM;
        free(mp);
        free(sp);
    }
    return s;
}

int train_run(const train_opts *o, const cli_cmd *cmd, tm_gpt *m, tm_tokenizer *tok,
              tm_token_dataset *ds, train_state *st)
{
    const tm_gpt_config *c = tm_gpt_config_of(m);
    int64_t T = c->context, end = o->stop_at ? o->stop_at : o->steps;
    tm_token_loader *ld = NULL;
    tm_optim *opt = NULL;
    tm_tensor **params = NULL;
    tm_swarm *sw = NULL;
    tm_metrics *mt = NULL;
    tm_progress *pg = NULL;
    char *mpath = cli_path(o->out, "metrics.jsonl");
    int n_params = 0, rc = CLI_RUNTIME;
    tm_eval_result ev = {0};
    double loss = NAN, t0;
    (void)tok;
    if (end > o->steps)
        end = o->steps;
    tm_optim_hparams hp = tm_optim_defaults(TM_OPTIM_ADAMW);
    hp.lr = o->lr;
    hp.weight_decay = o->weight_decay;
    hp.beta2 = 0.95; /* GPT-2/nanoGPT's: steadier than 0.999 on short runs */
    tm_lr_sched sched = tm_lr_sched_defaults(TM_LR_COSINE, o->lr);
    sched.warmup_steps = o->warmup;
    sched.t_max = o->steps - o->warmup;
    sched.eta_min = o->min_lr;
    sched.start_factor = o->warmup ? 1.0 / (double)o->warmup : 1.0;
    if (!mpath || !(opt = tm_optim_new(TM_OPTIM_ADAMW, &hp)) ||
        tm_optim_add_params(opt, tm_gpt_params(m), NULL) < 0 ||
        (st->step > 0 && ckpt_load_optim(opt, o->out) != TM_OK) || !(params = optim_params(opt, &n_params)) ||
        tm_lr_sched_check(&sched) != TM_OK)
        goto done;
    uint64_t seed = (uint64_t)o->seed;
    if (o->swarm) {
        if (!(sw = tm_swarm_join(o->swarm, tm_gpt_params(m), opt)))
            goto done;
        /* every worker draws its own batches; the swarm's step sets the schedule */
        seed += 0x9e3779b97f4a7c15ull * (uint64_t)tm_swarm_rank(sw);
        st->step = swarm_step(o, sw);
        if (o->swarm->mpi)
            printf("swarm: worker %d of %d (MPI) at step %lld\n", tm_swarm_rank(sw), tm_swarm_world(sw),
                   (long long)st->step);
        else
            printf("swarm: worker %d joined %s:%d at step %lld\n", tm_swarm_rank(sw), o->swarm->host,
                   o->swarm->port, (long long)st->step);
    }
    if (!(ld = tm_token_loader_new(ds, TM_SPLIT_TRAIN, o->batch, T, seed)) ||
        tm_token_loader_seek(ld, st->loader_position) != TM_OK ||
        !(mt = tm_metrics_open(mpath, st->step > 0)))
        goto done;
    int64_t n_weights = 0;
    for (int i = 0; i < n_params; i++)
        n_weights += tm_numel(params[i]);
    int64_t tr_tok = tm_token_dataset_tokens(ds, TM_SPLIT_TRAIN), va_tok = tm_token_dataset_tokens(ds, TM_SPLIT_VAL);
    double unigram = tm_token_dataset_unigram_loss(ds, TM_SPLIT_TRAIN, TM_SPLIT_VAL);
    printf("tokens: %lld train, %lld val (%lld / %lld documents), vocab %lld\n", (long long)tr_tok,
           (long long)va_tok, (long long)tm_token_dataset_docs(ds, TM_SPLIT_TRAIN),
           (long long)tm_token_dataset_docs(ds, TM_SPLIT_VAL), (long long)c->vocab_size);
    printf("model: %lld parameters: d_model %lld, %lld layers, %lld heads (%lld kv), context %lld, %s, %s, %s\n",
           (long long)n_weights, (long long)c->d_model, (long long)c->n_layers, (long long)c->n_heads,
           (long long)c->n_kv_heads, (long long)T, c->pos == TM_GPT_POS_ROPE ? "RoPE" : "learned positions",
           c->norm == TM_GPT_RMSNORM ? "RMSNorm" : "LayerNorm",
           c->mlp == TM_GPT_MLP_SWIGLU ? "SwiGLU" : "GELU");
    printf("training: %lld steps x %lld x %lld tokens, lr %g -> %g (warm-up %lld), threads %d\n",
           (long long)o->steps, (long long)(o->batch * o->grad_accum), (long long)T, o->lr, o->min_lr,
           (long long)o->warmup, tm_get_num_threads());
    fflush(stdout);
    if (!(pg = tm_progress_new("train", end - st->step, "step", o->quiet ? TM_PROGRESS_SILENT : TM_PROGRESS_AUTO,
                               NULL)))
        goto done;
    t0 = now_s();
    double val = NAN;
    for (; st->step < end; ) {
        double lr = tm_lr_sched_at(&sched, st->step), ts = now_s();
        /* the last step flushes what TopK's error feedback still holds */
        if (sw && swarm_step(o, sw) + swarm_h(o) >= o->steps)
            tm_swarm_send_all_next(sw);
        if (train_step(m, opt, sw, ld, params, n_params, o, lr, &loss) != TM_OK)
            goto done;
        st->step = sw && tm_swarm_resynced(sw) ? swarm_step(o, sw) : st->step + 1;
        double tps = (double)(o->batch * o->grad_accum * T) / (now_s() - ts);
        bool last = st->step == o->steps;
        bool do_eval = last || (o->eval_every && st->step % o->eval_every == 0);
        const char *keys[] = {"train_loss", "lr", "tok_per_s", "val_loss"};
        double vals[] = {loss, lr, tps, NAN};
        if (do_eval) {
            if (sample_loss(m, ds, TM_SPLIT_VAL, o, &val) != TM_OK)
                goto done;
            vals[3] = val;
        }
        if (log_and_plot(mt, o, st->step, do_eval ? 4 : 3, keys, vals, do_eval) != TM_OK)
            goto done;
        tm_progress_set_metric(pg, "loss", loss);
        if (!isnan(val))
            tm_progress_set_metric(pg, "val", val);
        tm_progress_set_metric(pg, "tok/s", tps);
        tm_progress_set_metric(pg, "lr", lr);
        tm_progress_update(pg, 1);
        if (st->step == end || (o->checkpoint_every && st->step % o->checkpoint_every == 0))
            if (checkpoint(o, cmd, m, opt, ld, st) != TM_OK)
                goto done;
    }
    tm_progress_finish(pg);
    double secs = now_s() - t0;
    if (sw)
        swarm_report(o, sw, n_weights);
    if (st->step < o->steps) {
        printf("stopped at step %lld of %lld (checkpoint in %s; continue with --resume)\n",
               (long long)st->step, (long long)o->steps, o->out);
        rc = CLI_OK;
        goto done;
    }
    /* The final figures: the whole val split, windows in order. */
    double train_est = NAN;
    printf("trained %lld steps in %.1f s; evaluating on the whole val split\n", (long long)o->steps, secs);
    fflush(stdout);
    tm_progress_free(pg);
    if (!(pg = tm_progress_new("eval", va_tok - 1, "tok", o->quiet ? TM_PROGRESS_SILENT : TM_PROGRESS_AUTO, NULL)) ||
        sample_loss(m, ds, TM_SPLIT_TRAIN, o, &train_est) != TM_OK ||
        tm_gpt_evaluate(m, ds, TM_SPLIT_VAL, o->batch, T, 0, pg, &ev) != TM_OK)
        goto done;
    tm_progress_finish(pg);
    tm_gpt_set_training(m, true);
    printf("train loss %.4f (%lld random batches)   val loss %.4f nats/token (perplexity %.2f, %.3f bits/byte, "
           "accuracy %.1f%%, %lld tokens)\n", train_est, (long long)o->eval_batches, ev.mean_loss, ev.perplexity, ev.bits_per_byte, 100 * ev.accuracy,
           (long long)ev.tokens);
    printf("unigram baseline %.4f nats/token (val tokens under the train split's token frequencies): "
           "val/unigram = %.3f\n", unigram, ev.mean_loss / unigram);
    printf("saved %s/: model.safetensors config.json tokenizer.json metrics.jsonl loss.svg\n", o->out);
    rc = CLI_OK;
done:
    if (rc != CLI_OK) {
        tm_progress_finish(pg);
        cli_lib_error(o->sub);
    }
    tm_progress_free(pg);
    if (tm_metrics_close(mt) != TM_OK && rc == CLI_OK)
        rc = cli_lib_error(o->sub);
    free(params);
    free(mpath);
    tm_swarm_leave(sw);
    tm_optim_free(opt);
    tm_token_loader_free(ld);
    return rc;
}

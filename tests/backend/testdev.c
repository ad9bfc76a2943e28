/* testdev.c — the test device (testdev.h): an asynchronous backend whose
 * memory the host cannot read, running the CPU kernels on a worker thread
 * per device. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include "testdev.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define TT_NDEV 2
#define TT_PAGE ((size_t)4096)

/* ---------------------------------------------------------- address space
 * Two mappings of the same size: handles are addresses in `hbase`
 * (PROT_NONE: touching one faults), the bytes live at the same offset in
 * `sbase`.  Each block starts with one page of the readable mapping that
 * holds its size; the handle points just past it. */

static pthread_mutex_t tt_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static char *tt_hbase, *tt_sbase;
static size_t tt_span, tt_in_use;
static _Atomic size_t tt_top; /* bytes of the span handed out so far */
static int tt_fail_after, tt_fail_count;

typedef struct tt_free {
    size_t off, size;
    struct tt_free *next;
} tt_free;
static tt_free *tt_free_list;

static int tt_reserve(void)
{
    if (tt_hbase) return 0;
    for (size_t span = (size_t)16 << 30; span >= ((size_t)1 << 30);
         span /= 2) {
        void *h = mmap(NULL, span, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (h == MAP_FAILED) continue;
        void *s = mmap(NULL, span, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED) {
            munmap(h, span);
            continue;
        }
        tt_hbase = h;
        tt_sbase = s;
        tt_span = span;
        return 0;
    }
    return -1;
}

/* The readable address of a handle (plus offset), or NULL when the handle
 * is not test-device memory. */
static char *tt_shadow(const void *handle)
{
    const char *h = handle;
    if (!h || h < tt_hbase + TT_PAGE || h >= tt_hbase + atomic_load(&tt_top))
        return NULL;
    return tt_sbase + (h - tt_hbase);
}

static void *tt_alloc(tm_ctx *ctx, size_t bytes)
{
    size_t size = (bytes + TT_PAGE - 1) / TT_PAGE * TT_PAGE + TT_PAGE;
    char msg[160] = "";
    void *h = NULL;
    pthread_mutex_lock(&tt_mem_lock);
    if (tt_fail_count > 0 && tt_fail_after-- <= 0) {
        tt_fail_count--;
        snprintf(msg, sizeof msg, "test device: injected allocation "
                 "failure (%zu bytes)", bytes);
    } else {
        tt_free **pp = &tt_free_list;
        while (*pp && (*pp)->size != size) pp = &(*pp)->next;
        size_t off = (size_t)-1;
        if (*pp) {
            tt_free *f = *pp;
            off = f->off;
            *pp = f->next;
            free(f);
        } else if (tt_span - atomic_load(&tt_top) >= size) {
            off = atomic_fetch_add(&tt_top, size);
        } else {
            snprintf(msg, sizeof msg, "test device: address space of %zu "
                     "bytes exhausted", tt_span);
        }
        if (off != (size_t)-1) {
            memcpy(tt_sbase + off, &size, sizeof size);
            tt_in_use += size;
            h = tt_hbase + off + TT_PAGE;
        }
    }
    pthread_mutex_unlock(&tt_mem_lock);
    (void)ctx;
    if (!h) tm_set_error(TM_ENOMEM, "%s", msg);
    return h;
}

/* Returns a block to the address space (run by the worker, in stream
 * order); its bytes are dropped so stale reads see zeros. */
static void tt_release(void *handle)
{
    char *s = tt_shadow(handle) - TT_PAGE;
    size_t size;
    memcpy(&size, s, sizeof size);
    madvise(s + TT_PAGE, size - TT_PAGE, MADV_DONTNEED);
    tt_free *f = malloc(sizeof *f);
    pthread_mutex_lock(&tt_mem_lock);
    tt_in_use -= size;
    if (f) {
        f->off = (size_t)(s - tt_sbase);
        f->size = size;
        f->next = tt_free_list;
        tt_free_list = f;
    }
    pthread_mutex_unlock(&tt_mem_lock);
}

void tt_testdev_fail_allocs(int after, int count)
{
    pthread_mutex_lock(&tt_mem_lock);
    tt_fail_after = after;
    tt_fail_count = count;
    pthread_mutex_unlock(&tt_mem_lock);
}

size_t tt_testdev_bytes_in_use(void)
{
    pthread_mutex_lock(&tt_mem_lock);
    size_t n = tt_in_use;
    pthread_mutex_unlock(&tt_mem_lock);
    return n;
}

/* ----------------------------------------------------------------- jobs */

enum { TT_JOB_H2D = TM_ENTRY_COUNT, TT_JOB_FREE };

#define TT_MAXB 10
typedef struct tt_job {
    struct tt_job *next;
    int kind; /* a tm_entry, or TT_JOB_* */
    tm_buf b[TT_MAXB];
    int op;
    bool flag;
    double d[3];
    int64_t k;
    tm_rng rng;
    union {
        tm_conv_geom conv;
        tm_pool_geom pool;
        tm_loss_params loss;
        tm_optim_update upd;
        tm_attn_params attn;
        tm_rope_params rope;
    } u;
    tm_buf *many; /* grad_norm's buffers */
    int nmany;
    void *host;   /* H2D: a private copy of the source */
    size_t bytes;
} tt_job;

typedef struct tt_dev {
    tm_ctx *ctx;
    pthread_t worker;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    tt_job *head, *tail;
    bool running, hold;
    long jobs;
} tt_dev;

static const tm_backend *tt_cpu;
static tm_ctx *tt_cpu_ctx;

/* Runs one job on the CPU backend, over the readable mapping. */
static tm_status tt_run(tt_job *j)
{
    const tm_backend *c = tt_cpu;
    tm_ctx *x = tt_cpu_ctx;
    tm_buf *b = j->b;
    switch (j->kind) {
    case TM_ENTRY_COPY: return c->copy(x, &b[0], &b[1]);
    case TM_ENTRY_FILL: return c->fill(x, &b[0], j->d[0]);
    case TM_ENTRY_SEQUENCE:
        return c->sequence(x, &b[0], (tm_seq_kind)j->op, j->d[0], j->d[1],
                           j->k);
    case TM_ENTRY_UNARY:
        return c->unary(x, (tm_unary_op)j->op, &b[0], &b[1], j->d[0],
                        j->d[1]);
    case TM_ENTRY_BINARY:
        return c->binary(x, (tm_binary_op)j->op, &b[0], &b[1], &b[2]);
    case TM_ENTRY_WHERE: return c->where(x, &b[0], &b[1], &b[2], &b[3]);
    case TM_ENTRY_REDUCE:
        return c->reduce(x, (tm_reduce_op)j->op, &b[0], &b[1], (int)j->k,
                         j->d[0]);
    case TM_ENTRY_ARG_REDUCE:
        return c->arg_reduce(x, j->flag, &b[0], &b[1], &b[2]);
    case TM_ENTRY_CUMSUM: return c->cumsum(x, &b[0], &b[1], (int)j->k);
    case TM_ENTRY_GEMM:
        return c->gemm(x, &b[0], &b[1], &b[2], j->d[0], j->d[1]);
    case TM_ENTRY_GATHER: return c->gather(x, &b[0], &b[1], (int)j->k, &b[2]);
    case TM_ENTRY_SCATTER:
        return c->scatter(x, &b[0], (int)j->k, &b[1], &b[2], j->flag);
    case TM_ENTRY_INDEX_SELECT:
        return c->index_select(x, &b[0], &b[1], (int)j->k, &b[2]);
    case TM_ENTRY_SCATTER_REDUCE:
        return c->scatter_reduce(x, &b[0], (int)j->k, &b[1], &b[2],
                                 (tm_scatter_reduce_kind)j->op);
    case TM_ENTRY_SORT: return c->sort(x, &b[0], &b[1], &b[2], j->flag);
    case TM_ENTRY_SOFTMAX: return c->softmax(x, &b[0], &b[1], j->flag);
    case TM_ENTRY_NORM_ROWS:
        return c->norm_rows(x, &b[0], &b[1], &b[2], &b[3], j->d[0], j->flag);
    case TM_ENTRY_NORM_ROWS_BACKWARD:
        return c->norm_rows_backward(x, &b[0], &b[1], &b[2], &b[3], &b[4],
                                     &b[5], j->d[0], j->flag);
    case TM_ENTRY_RANDOM:
        return c->random(x, &b[0], j->op, j->d[0], j->d[1], j->rng);
    case TM_ENTRY_CONV:
        return c->conv(x, &b[0], &b[1], &b[2], &b[3], &j->u.conv);
    case TM_ENTRY_CONV_BACKWARD:
        return c->conv_backward(x, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                                &j->u.conv);
    case TM_ENTRY_POOL:
        return c->pool(x, &b[0], &b[1], &b[2], &j->u.pool, j->flag);
    case TM_ENTRY_POOL_BACKWARD:
        return c->pool_backward(x, &b[0], &b[1], &b[2], &j->u.pool, j->flag);
    case TM_ENTRY_LOSS:
        return c->loss(x, &b[0], &b[1], &b[2], &b[3], &j->u.loss);
    case TM_ENTRY_LOSS_BACKWARD:
        return c->loss_backward(x, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                                &j->u.loss);
    case TM_ENTRY_EMBEDDING_BACKWARD:
        return c->embedding_backward(x, &b[0], &b[1], &b[2]);
    case TM_ENTRY_OPTIM_STEP:
        return c->optim_step(x, &j->u.upd, &b[0], &b[1], &b[2], &b[3], &b[4]);
    case TM_ENTRY_GRAD_NORM:
        return c->grad_norm(x, &b[0], j->many, j->nmany,
                            (tm_norm_kind)j->op, j->d[0]);
    case TM_ENTRY_SCAN:
        return c->scan(x, (tm_scan_kind)j->op, &b[0], &b[1], &b[2],
                       (int)j->k, j->flag);
    case TM_ENTRY_ATTENTION:
        return c->attention(x, &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                            &j->u.attn);
    case TM_ENTRY_ATTENTION_BACKWARD:
        return c->attention_backward(x, &b[0], &b[1], &b[2], &b[3], &b[4],
                                     &b[5], &b[6], &b[7], &b[8], &b[9],
                                     &j->u.attn);
    case TM_ENTRY_ROPE:
        return c->rope(x, &b[0], &b[1], &b[2], &b[3], &j->u.rope);
    case TM_ENTRY_QUANTIZE: return c->quantize(x, &b[0], &b[1]);
    case TM_ENTRY_QMATMUL:
        return c->qmatmul(x, &b[0], &b[1], &b[2], j->flag);
    case TM_ENTRY_QMATMUL_BACKWARD:
        return c->qmatmul_backward(x, &b[0], &b[1], &b[2], j->flag);
    case TT_JOB_H2D:
        memcpy(b[0].handle, j->host, j->bytes);
        return TM_OK;
    }
    return tm_set_error(TM_ESTATE, "test device: unknown job %d", j->kind);
}

static void tt_job_free(tt_job *j)
{
    free(j->many);
    free(j->host);
    free(j);
}

static void *tt_worker(void *arg)
{
    tt_dev *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->lock);
        while (!d->head || d->hold) pthread_cond_wait(&d->wake, &d->lock);
        tt_job *j = d->head;
        d->head = j->next;
        if (!d->head) d->tail = NULL;
        d->running = true;
        pthread_mutex_unlock(&d->lock);
        if (j->kind == TT_JOB_FREE) {
            tt_release(j->b[0].handle);
        } else if (tm_ctx_status(d->ctx) == TM_OK) {
            /* after an error the rest is skipped until it is reported */
            tm_clear_error();
            tm_status st = tt_run(j);
            if (st) tm_ctx_fail(d->ctx, st, tm_last_error());
        }
        tt_job_free(j);
        pthread_mutex_lock(&d->lock);
        d->running = false;
        if (!d->head) pthread_cond_broadcast(&d->idle);
        pthread_mutex_unlock(&d->lock);
    }
    return NULL;
}

static tt_dev *tt_dev_of(tm_ctx *ctx) { return tm_ctx_impl(ctx); }

static void tt_submit(tm_ctx *ctx, tt_job *j)
{
    tt_dev *d = tt_dev_of(ctx);
    pthread_mutex_lock(&d->lock);
    if (d->tail) d->tail->next = j;
    else d->head = j;
    d->tail = j;
    d->jobs++;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

static tt_job *tt_job_new(int kind)
{
    tt_job *j = calloc(1, sizeof *j);
    if (!j) tm_set_error(TM_ENOMEM, "test device: out of host memory");
    else j->kind = kind;
    return j;
}

/* Copies buffer `b` into the job as slot k, its handle turned into the
 * readable address.  An absent one (handle NULL) goes on as the front end
 * passed it; a NULL pointer becomes an all-zero absent buffer.  A handle
 * that is not device memory is refused before anything is queued. */
static tm_status tt_put(tt_job *j, int k, const tm_buf *b)
{
    if (!b) {
        memset(&j->b[k], 0, sizeof j->b[k]);
        return TM_OK;
    }
    j->b[k] = *b;
    if (!b->handle) return TM_OK;
    char *s = tt_shadow(b->handle);
    if (!s)
        return tm_set_error(TM_EDEVICE, "test device: buffer %d of '%s' is "
                            "not test-device memory (handle %p)", k,
                            tm_entry_name((tm_entry)j->kind), b->handle);
    j->b[k].handle = s;
    return TM_OK;
}

/* Fills the job's buffers from bs[0..n) and queues it. */
static tm_status tt_queue(tm_ctx *ctx, tt_job *j, int n,
                          const tm_buf *const *bs)
{
    for (int k = 0; k < n; k++) {
        tm_status st = tt_put(j, k, bs[k]);
        if (st) {
            tt_job_free(j);
            return st;
        }
    }
    tt_submit(ctx, j);
    return TM_OK;
}

#define TT_NEW(kind)                                                          \
    tt_job *j = tt_job_new(kind);                                             \
    if (!j) return tm_last_status()
#define TT_QUEUE(ctx, ...)                                                    \
    tt_queue((ctx), j,                                                        \
             (int)(sizeof((const tm_buf *[]){__VA_ARGS__}) /                 \
                   sizeof(const tm_buf *)),                                   \
             (const tm_buf *[]){__VA_ARGS__})

/* ------------------------------------------------------------ the table */

static tm_status tt_copy(tm_ctx *c, const tm_buf *dst, const tm_buf *src)
{
    TT_NEW(TM_ENTRY_COPY);
    return TT_QUEUE(c, dst, src);
}

static tm_status tt_fill(tm_ctx *c, const tm_buf *dst, double value)
{
    TT_NEW(TM_ENTRY_FILL);
    j->d[0] = value;
    return TT_QUEUE(c, dst);
}

static tm_status tt_sequence(tm_ctx *c, const tm_buf *dst, tm_seq_kind kind,
                             double a, double b, int64_t k)
{
    TT_NEW(TM_ENTRY_SEQUENCE);
    j->op = (int)kind;
    j->d[0] = a;
    j->d[1] = b;
    j->k = k;
    return TT_QUEUE(c, dst);
}

static tm_status tt_unary(tm_ctx *c, tm_unary_op op, const tm_buf *out,
                          const tm_buf *in, double p0, double p1)
{
    TT_NEW(TM_ENTRY_UNARY);
    j->op = (int)op;
    j->d[0] = p0;
    j->d[1] = p1;
    return TT_QUEUE(c, out, in);
}

static tm_status tt_binary(tm_ctx *c, tm_binary_op op, const tm_buf *out,
                           const tm_buf *a, const tm_buf *b)
{
    TT_NEW(TM_ENTRY_BINARY);
    j->op = (int)op;
    return TT_QUEUE(c, out, a, b);
}

static tm_status tt_where(tm_ctx *c, const tm_buf *out, const tm_buf *cond,
                          const tm_buf *a, const tm_buf *b)
{
    TT_NEW(TM_ENTRY_WHERE);
    return TT_QUEUE(c, out, cond, a, b);
}

static tm_status tt_reduce(tm_ctx *c, tm_reduce_op op, const tm_buf *out,
                           const tm_buf *in, int nred, double p)
{
    TT_NEW(TM_ENTRY_REDUCE);
    j->op = (int)op;
    j->k = nred;
    j->d[0] = p;
    return TT_QUEUE(c, out, in);
}

static tm_status tt_arg_reduce(tm_ctx *c, bool is_max, const tm_buf *indices,
                               const tm_buf *values, const tm_buf *in)
{
    TT_NEW(TM_ENTRY_ARG_REDUCE);
    j->flag = is_max;
    return TT_QUEUE(c, indices, values, in);
}

static tm_status tt_cumsum(tm_ctx *c, const tm_buf *out, const tm_buf *in,
                           int dim)
{
    TT_NEW(TM_ENTRY_CUMSUM);
    j->k = dim;
    return TT_QUEUE(c, out, in);
}

static tm_status tt_scan(tm_ctx *c, tm_scan_kind kind, const tm_buf *out,
                        const tm_buf *indices, const tm_buf *in, int dim,
                        bool reverse)
{
    TT_NEW(TM_ENTRY_SCAN);
    j->op = (int)kind;
    j->k = dim;
    j->flag = reverse;
    return TT_QUEUE(c, out, indices, in);
}

static tm_status tt_gemm(tm_ctx *c, const tm_buf *cc, const tm_buf *a,
                         const tm_buf *b, double alpha, double beta)
{
    TT_NEW(TM_ENTRY_GEMM);
    j->d[0] = alpha;
    j->d[1] = beta;
    return TT_QUEUE(c, cc, a, b);
}

static tm_status tt_gather(tm_ctx *c, const tm_buf *out, const tm_buf *in,
                           int dim, const tm_buf *index)
{
    TT_NEW(TM_ENTRY_GATHER);
    j->k = dim;
    return TT_QUEUE(c, out, in, index);
}

static tm_status tt_scatter(tm_ctx *c, const tm_buf *dst, int dim,
                            const tm_buf *index, const tm_buf *src, bool add)
{
    TT_NEW(TM_ENTRY_SCATTER);
    j->k = dim;
    j->flag = add;
    return TT_QUEUE(c, dst, index, src);
}

static tm_status tt_scatter_reduce(tm_ctx *c, const tm_buf *dst, int dim,
                                   const tm_buf *index, const tm_buf *src,
                                   tm_scatter_reduce_kind kind)
{
    TT_NEW(TM_ENTRY_SCATTER_REDUCE);
    j->k = dim;
    j->op = (int)kind;
    return TT_QUEUE(c, dst, index, src);
}

static tm_status tt_index_select(tm_ctx *c, const tm_buf *out,
                                 const tm_buf *in, int dim,
                                 const tm_buf *index)
{
    TT_NEW(TM_ENTRY_INDEX_SELECT);
    j->k = dim;
    return TT_QUEUE(c, out, in, index);
}

static tm_status tt_sort(tm_ctx *c, const tm_buf *values,
                         const tm_buf *indices, const tm_buf *in,
                         bool descending)
{
    TT_NEW(TM_ENTRY_SORT);
    j->flag = descending;
    return TT_QUEUE(c, values, indices, in);
}

static tm_status tt_softmax(tm_ctx *c, const tm_buf *out, const tm_buf *in,
                            bool log)
{
    TT_NEW(TM_ENTRY_SOFTMAX);
    j->flag = log;
    return TT_QUEUE(c, out, in);
}

static tm_status tt_norm_rows(tm_ctx *c, const tm_buf *out, const tm_buf *in,
                              const tm_buf *weight, const tm_buf *bias,
                              double eps, bool rms)
{
    TT_NEW(TM_ENTRY_NORM_ROWS);
    j->d[0] = eps;
    j->flag = rms;
    return TT_QUEUE(c, out, in, weight, bias);
}

static tm_status tt_norm_rows_backward(tm_ctx *c, const tm_buf *dx,
                                       const tm_buf *dw, const tm_buf *db,
                                       const tm_buf *g, const tm_buf *x,
                                       const tm_buf *weight, double eps,
                                       bool rms)
{
    TT_NEW(TM_ENTRY_NORM_ROWS_BACKWARD);
    j->d[0] = eps;
    j->flag = rms;
    return TT_QUEUE(c, dx, dw, db, g, x, weight);
}

static tm_status tt_random(tm_ctx *c, const tm_buf *dst, int kind, double p0,
                           double p1, tm_rng rng)
{
    TT_NEW(TM_ENTRY_RANDOM);
    j->op = kind;
    j->d[0] = p0;
    j->d[1] = p1;
    j->rng = rng;
    return TT_QUEUE(c, dst);
}

static tm_status tt_conv(tm_ctx *c, const tm_buf *y, const tm_buf *x,
                         const tm_buf *w, const tm_buf *bias,
                         const tm_conv_geom *q)
{
    TT_NEW(TM_ENTRY_CONV);
    j->u.conv = *q;
    return TT_QUEUE(c, y, x, w, bias);
}

static tm_status tt_conv_backward(tm_ctx *c, const tm_buf *dx,
                                  const tm_buf *dw, const tm_buf *db,
                                  const tm_buf *g, const tm_buf *x,
                                  const tm_buf *w, const tm_conv_geom *q)
{
    TT_NEW(TM_ENTRY_CONV_BACKWARD);
    j->u.conv = *q;
    return TT_QUEUE(c, dx, dw, db, g, x, w);
}

static tm_status tt_pool(tm_ctx *c, const tm_buf *y, const tm_buf *argmax,
                         const tm_buf *x, const tm_pool_geom *q, bool is_max)
{
    TT_NEW(TM_ENTRY_POOL);
    j->u.pool = *q;
    j->flag = is_max;
    return TT_QUEUE(c, y, argmax, x);
}

static tm_status tt_pool_backward(tm_ctx *c, const tm_buf *dx,
                                  const tm_buf *g, const tm_buf *argmax,
                                  const tm_pool_geom *q, bool is_max)
{
    TT_NEW(TM_ENTRY_POOL_BACKWARD);
    j->u.pool = *q;
    j->flag = is_max;
    return TT_QUEUE(c, dx, g, argmax);
}

static tm_status tt_loss(tm_ctx *c, const tm_buf *out, const tm_buf *lse,
                         const tm_buf *x, const tm_buf *target,
                         const tm_loss_params *p)
{
    TT_NEW(TM_ENTRY_LOSS);
    j->u.loss = *p;
    return TT_QUEUE(c, out, lse, x, target);
}

static tm_status tt_loss_backward(tm_ctx *c, const tm_buf *gx,
                                  const tm_buf *gt, const tm_buf *g,
                                  const tm_buf *x, const tm_buf *target,
                                  const tm_buf *lse, const tm_loss_params *p)
{
    TT_NEW(TM_ENTRY_LOSS_BACKWARD);
    j->u.loss = *p;
    return TT_QUEUE(c, gx, gt, g, x, target, lse);
}

static tm_status tt_attention(tm_ctx *c, const tm_buf *out,
                              const tm_buf *lse, const tm_buf *q,
                              const tm_buf *k, const tm_buf *v,
                              const tm_buf *mask, const tm_attn_params *p)
{
    TT_NEW(TM_ENTRY_ATTENTION);
    j->u.attn = *p;
    return TT_QUEUE(c, out, lse, q, k, v, mask);
}

static tm_status tt_attention_backward(tm_ctx *c, const tm_buf *dq,
                                       const tm_buf *dk, const tm_buf *dv,
                                       const tm_buf *g, const tm_buf *q,
                                       const tm_buf *k, const tm_buf *v,
                                       const tm_buf *out, const tm_buf *lse,
                                       const tm_buf *mask,
                                       const tm_attn_params *p)
{
    TT_NEW(TM_ENTRY_ATTENTION_BACKWARD);
    j->u.attn = *p;
    return TT_QUEUE(c, dq, dk, dv, g, q, k, v, out, lse, mask);
}

static tm_status tt_embedding_backward(tm_ctx *c, const tm_buf *dw,
                                       const tm_buf *g, const tm_buf *index)
{
    TT_NEW(TM_ENTRY_EMBEDDING_BACKWARD);
    return TT_QUEUE(c, dw, g, index);
}

static tm_status tt_optim_step(tm_ctx *c, const tm_optim_update *u,
                               const tm_buf *p, const tm_buf *g,
                               const tm_buf *s0, const tm_buf *s1,
                               const tm_buf *s2)
{
    TT_NEW(TM_ENTRY_OPTIM_STEP);
    j->u.upd = *u;
    return TT_QUEUE(c, p, g, s0, s1, s2);
}

static tm_status tt_grad_norm(tm_ctx *c, const tm_buf *out,
                              const tm_buf *bufs, int n, tm_norm_kind kind,
                              double p)
{
    TT_NEW(TM_ENTRY_GRAD_NORM);
    j->op = (int)kind;
    j->d[0] = p;
    j->nmany = n;
    j->many = calloc(n > 0 ? (size_t)n : 1, sizeof *j->many);
    if (!j->many) {
        tt_job_free(j);
        return tm_set_error(TM_ENOMEM, "test device: out of host memory");
    }
    for (int i = 0; i < n; i++) {
        j->many[i] = bufs[i];
        if (!(j->many[i].handle = tt_shadow(bufs[i].handle))) {
            tt_job_free(j);
            return tm_set_error(TM_EDEVICE, "test device: grad_norm buffer "
                                "%d is not test-device memory", i);
        }
    }
    return TT_QUEUE(c, out);
}

static tm_status tt_rope(tm_ctx *c, const tm_buf *out, const tm_buf *x,
                         const tm_buf *cos, const tm_buf *sin,
                         const tm_rope_params *p)
{
    TT_NEW(TM_ENTRY_ROPE);
    j->u.rope = *p;
    return TT_QUEUE(c, out, x, cos, sin);
}

static tm_status tt_quantize(tm_ctx *c, const tm_buf *dst, const tm_buf *src)
{
    TT_NEW(TM_ENTRY_QUANTIZE);
    return TT_QUEUE(c, dst, src);
}

static tm_status tt_qmatmul(tm_ctx *c, const tm_buf *y, const tm_buf *x,
                            const tm_buf *w, bool accumulate)
{
    TT_NEW(TM_ENTRY_QMATMUL);
    j->flag = accumulate;
    return TT_QUEUE(c, y, x, w);
}

static tm_status tt_qmatmul_backward(tm_ctx *c, const tm_buf *dx,
                                     const tm_buf *dy, const tm_buf *w,
                                     bool accumulate)
{
    TT_NEW(TM_ENTRY_QMATMUL_BACKWARD);
    j->flag = accumulate;
    return TT_QUEUE(c, dx, dy, w);
}

/* ---------------------------------------------- devices, memory, streams */

static int tt_device_count(void) { return TT_NDEV; }

static tm_status tt_open(tm_ctx *ctx)
{
    tt_dev *d = calloc(1, sizeof *d);
    if (!d) return tm_set_error(TM_ENOMEM, "test device: no host memory");
    d->ctx = ctx;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->idle, NULL);
    if (pthread_create(&d->worker, NULL, tt_worker, d)) {
        free(d);
        return tm_set_error(TM_EDEVICE, "test device: no worker thread");
    }
    tm_ctx_set_impl(ctx, d);
    return TM_OK;
}

static void tt_synchronize(tm_ctx *ctx)
{
    tt_dev *d = tt_dev_of(ctx);
    pthread_mutex_lock(&d->lock);
    while (d->head || d->running) pthread_cond_wait(&d->idle, &d->lock);
    pthread_mutex_unlock(&d->lock);
}

static void tt_free_handle(tm_ctx *ctx, void *handle)
{
    tt_job *j = tt_job_new(TT_JOB_FREE);
    if (!j) { /* no memory to queue it: wait, then release at once */
        tt_synchronize(ctx);
        tt_release(handle);
        return;
    }
    j->b[0].handle = handle;
    tt_submit(ctx, j);
}

static tm_status tt_to_device(tm_ctx *ctx, void *dst, size_t off,
                              const void *src, size_t bytes)
{
    if (!bytes) return TM_OK;
    TT_NEW(TT_JOB_H2D);
    j->b[0].handle = tt_shadow(dst);
    j->host = malloc(bytes);
    if (!j->b[0].handle || !j->host) {
        tm_status st = j->host ? TM_EDEVICE : TM_ENOMEM;
        tt_job_free(j);
        return tm_set_error(st, "test device: copy to the device failed (%s)",
                            st == TM_EDEVICE ? "not device memory"
                                             : "no host memory to stage");
    }
    j->b[0].handle = (char *)j->b[0].handle + off;
    memcpy(j->host, src, bytes);
    j->bytes = bytes;
    tt_submit(ctx, j);
    return TM_OK;
}

static tm_status tt_to_host(tm_ctx *ctx, void *dst, const void *src,
                            size_t off, size_t bytes)
{
    tt_synchronize(ctx);
    if (!bytes) return TM_OK;
    char *s = tt_shadow(src);
    if (!s) return tm_set_error(TM_EDEVICE, "test device: copy to the host "
                                "from a handle that is not device memory");
    memcpy(dst, s + off, bytes);
    return TM_OK;
}

static bool tt_supports(tm_ctx *ctx, tm_entry e, int op,
                        const tm_dtype *dtypes, int n)
{
    (void)e;
    (void)op;
    if (tm_ctx_device(ctx).index == 0) return true;
    for (int i = 0; i < n; i++)
        if (dtypes[i] != TM_F32 && dtypes[i] != TM_I64) return false;
    return true;
}

void tt_testdev_hold(tm_device dev, int hold)
{
    tm_ctx *ctx = tm_device_ctx(dev);
    if (!ctx) return;
    tt_dev *d = tt_dev_of(ctx);
    pthread_mutex_lock(&d->lock);
    d->hold = hold != 0;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

long tt_testdev_jobs(tm_device dev)
{
    tm_ctx *ctx = tm_device_ctx(dev);
    if (!ctx) return -1;
    tt_dev *d = tt_dev_of(ctx);
    pthread_mutex_lock(&d->lock);
    long n = d->jobs;
    pthread_mutex_unlock(&d->lock);
    return n;
}

static tm_backend tt_backend;
static pthread_once_t tt_once = PTHREAD_ONCE_INIT;
static tm_status tt_reg_status;

/* The table: an entry exists where the CPU's does (the worker calls it). */
static void tt_build(void)
{
    tt_cpu = tm_backend_get(TM_DEVICE_CPU);
    tt_cpu_ctx = tm_device_ctx(TM_CPU);
    if (!tt_cpu || !tt_cpu_ctx || tt_reserve()) {
        tt_reg_status = tm_set_error(TM_EDEVICE, "test device: cannot map "
                                     "its address space");
        return;
    }
    const tm_backend *c = tt_cpu;
    tm_backend b = {
        .abi_version = TM_BACKEND_ABI_VERSION,
        .size = sizeof(tm_backend),
        .name = "test",
        .type = TM_DEVICE_TEST,
        .device_count = tt_device_count,
        .open = tt_open,
        .synchronize = tt_synchronize,
        .supports = tt_supports,
        .alloc = tt_alloc,
        .free = tt_free_handle,
        .to_device = tt_to_device,
        .to_host = tt_to_host,
        .copy = tt_copy,
        .fill = tt_fill,
#define TT_IF(e) .e = c->e ? tt_##e : NULL
        TT_IF(sequence), TT_IF(unary), TT_IF(binary), TT_IF(where),
        TT_IF(reduce), TT_IF(arg_reduce), TT_IF(cumsum), TT_IF(gemm),
        TT_IF(gather), TT_IF(scatter), TT_IF(index_select), TT_IF(sort),
        TT_IF(softmax), TT_IF(norm_rows), TT_IF(norm_rows_backward),
        TT_IF(random), TT_IF(conv), TT_IF(conv_backward), TT_IF(pool),
        TT_IF(pool_backward), TT_IF(loss), TT_IF(loss_backward),
        TT_IF(embedding_backward), TT_IF(optim_step), TT_IF(grad_norm),
        TT_IF(scan),
        TT_IF(scatter_reduce), TT_IF(attention), TT_IF(attention_backward),
        TT_IF(rope), TT_IF(quantize), TT_IF(qmatmul),
        TT_IF(qmatmul_backward),
#undef TT_IF
    };
    tt_backend = b;
    tt_reg_status = tm_backend_register(&tt_backend);
}

int tt_testdev_register(void)
{
    pthread_once(&tt_once, tt_build);
    return (int)tt_reg_status;
}

bool tt_same_bits(const tm_tensor *a, const tm_tensor *b)
{
    if (!a || !b || tm_dtype_of(a) != tm_dtype_of(b) ||
        tm_numel(a) != tm_numel(b))
        return false;
    size_t n = tm_nbytes(a);
    char *x = malloc(n ? n : 1), *y = malloc(n ? n : 1);
    bool ok = x && y &&
              tm_copy_to_buffer(a, x, n, tm_dtype_of(a)) == TM_OK &&
              tm_copy_to_buffer(b, y, n, tm_dtype_of(b)) == TM_OK &&
              memcmp(x, y, n) == 0;
    free(x);
    free(y);
    return ok;
}

/*
 * test_conformance.c — every reference case of tests/data on every device
 * of tt_conf_devices[], compared with the CPU, as ggml's test-backend-ops
 * compares every op of every backend with its CPU backend.
 *
 * For each case the CPU runs the family's dispatcher (ref_dispatch.h) on
 * copies of the inputs; then each device runs the same dispatcher on its
 * own copies, moved there with tm_to.  A copy keeps its input's exact view:
 * the input's whole storage is copied and the view re-created over it with
 * the same shape, strides and offset, so transposed, sliced, broadcast
 * (stride 0) and offset inputs reach the device as they reach the CPU.
 * Every output comes back with tm_to(out, TM_CPU) and is compared with the
 * CPU's under the device's policy: dtype, shape and strides always, the
 * values bitwise (NaNs by bit pattern) or within a stated tolerance.
 *
 * Gradients.  Each case runs a second time with its float inputs requiring
 * grad, backpropagating sum_j sum(out_j * R_j) for fixed weights R_j; the
 * outputs and every input's gradient are compared as above.  Cases that
 * fail this way on the CPU (in-place ops refuse such inputs) or have no
 * differentiable output are compared forward only.
 *
 * Errors.  A case the CPU fails (the file's "err" cases) must fail on the
 * device with the same status and a message holding the file's words.  An
 * asynchronous device finds some errors only when its work runs, so the
 * failure may surface when the dispatcher returns, when an output is
 * copied back, or at the tm_synchronize that closes every case.  An error
 * no call reported is a failure, and so is one on a case the CPU runs.
 *
 * Placement.  Every tensor output must be on the device, except the host
 * values a few cases report beside their tensors (tt_host_output).  After
 * every case the device holds the memory it held before it: a front end
 * that forgets a device tensor (a staging copy, a temporary) fails here.
 *
 * A backend joins the suite with one line in tt_conf_devices: its device,
 * a name, and the policy that says how its results may differ from the
 * CPU's.  A device that is not available is reported and skipped.
 */
#define _DEFAULT_SOURCE
#include "../c/ref_dispatch.h"
#include "testdev.h"

#include <stdlib.h>

/* ------------------------------------------------------------ policies */

typedef enum tt_cmp {
    TT_CMP_BITS, /* bitwise equal to the CPU's results */
    TT_CMP_F32,  /* bitwise equal to the CPU's results on F32 copies of the
                    case's other float operands (and an F64 "dtype"
                    argument as F32), converted back to the CPU's dtypes;
                    host outputs: to the CPU's own */
    TT_CMP_NEAR, /* |dev - cpu| <= atol + rtol |cpu| elementwise (NaN
                    matches NaN, infinities exactly; integers exactly) */
    TT_CMP_SKIP  /* not compared; `why` says why */
} tt_cmp;

typedef struct tt_rule {
    tt_cmp cmp;
    double rtol, atol;
    const char *why;
} tt_rule;

/* A device's policy: the rule for one case (its inputs are the CPU
 * originals; a policy only reads their dtypes and the case's op and
 * arguments). */
typedef tt_rule (*tt_policy)(const tt_refcase *c);

static bool tt_op_in(const char *op, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(op, *list)) return true;
    return false;
}

static bool tt_case_has(const tt_refcase *c, tm_dtype dt)
{
    for (int i = 0; i < c->nin; i++)
        if (tm_dtype_of(c->in[i]) == dt) return true;
    return tt_has_arg(c, "dtype") && (int)tt_arg(c, "dtype", -1) == (int)dt;
}

/* test:0 runs the CPU's kernels on every dtype: nothing may differ. */
static tt_rule tt_policy_exact(const tt_refcase *c)
{
    (void)c;
    return (tt_rule){TT_CMP_BITS, 0, 0, NULL};
}

/* test:1 runs F32 and I64 only; the front ends stage every other dtype
 * (tensor_impl.h, "dtype fallback"): floats as F32, then integers and
 * bool as I64.
 *   - Mostly that changes nothing: the CPU itself computes F16/BF16 in F32
 *     and integers and bool in I64, so results are bitwise the CPU's.
 *   - Ops made of copies and fills only run every dtype on every backend
 *     (backend.h: `copy` takes any pair of dtypes), and a random fill the
 *     device declines is the CPU's fill copied over (random.c): bitwise
 *     the CPU's, F64 included.
 *   - With an F64 operand the device computes in F32 by design.  Its
 *     result is then exactly what the CPU computes on F32 copies of the
 *     float operands (an F64 "dtype" argument as F32), converted back:
 *     compared bitwise with that, which is stricter than any tolerance and
 *     holds for ill-conditioned cases too (a cancelling sum, an argmax
 *     whose values tie once rounded to F32).
 *   - scatter_add (and scatter_reduce, whose sums are scatter adds and
 *     whose products round the same way) into F16/BF16 rounds after every
 *     step on the CPU (as torch does); staged, the steps run in F32 and
 *     round once: bitwise the CPU's on F32 copies, as for F64.
 *   - clip_norm's total norm comes from grad_norm, whose output is F64
 *     even for F32 gradients: test:1 declines it, so the norm of the 31
 *     elements of these cases is accumulated and rounded in F32, and it
 *     and the gradients scaled by max_norm / norm differ from the CPU's by
 *     about (n + 2) roundings of 2^-24 at worst: 2e-6 relative; the stated
 *     bound 4e-6 leaves a factor of 2 (these cases differ by 1 ulp). */
static tt_rule tt_policy_f32_i64(const tt_refcase *c)
{
    static const char *const copies[] = {"to_dtype", "cat", "stack",
                                         "split", "split_sizes", "chunk",
                                         "pad", "repeat", NULL};
    static const char *const fills[] = {"uniform", "normal", "randint",
                                        NULL};
    static const char *const adds[] = {"scatter_add", "scatter_add_",
                                       "scatter_reduce", NULL};
    if (!strcmp(c->op, "clip_norm"))
        return (tt_rule){TT_CMP_NEAR, 4e-6, 0, NULL};
    /* scatter_reduce's mean and its prod gradient chain several F16 ops:
     * staged, the device rounds to F16 between them at other points than
     * the CPU on F32 copies does (these cases differ by up to 2 ulps,
     * 7e-4); 4e-3 is 8 F16 ulps (2^-11 each) */
    if (!strcmp(c->op, "scatter_reduce") &&
        (tt_case_has(c, TM_F16) || tt_case_has(c, TM_BF16)))
        return (tt_rule){TT_CMP_NEAR, 4e-3, 0, NULL};
    if (tt_op_in(c->op, copies) || tt_op_in(c->op, fills))
        return (tt_rule){TT_CMP_BITS, 0, 0, NULL};
    if (tt_case_has(c, TM_F64) ||
        (tt_op_in(c->op, adds) &&
         (tt_case_has(c, TM_F16) || tt_case_has(c, TM_BF16))))
        return (tt_rule){TT_CMP_F32, 0, 0, NULL};
    return (tt_rule){TT_CMP_BITS, 0, 0, NULL};
}

/* The devices under test: one line per device. */
static const struct tt_conf_device {
    tm_device dev;
    const char *name;
    tt_policy policy;
} tt_conf_devices[] = {
    {{TM_DEVICE_TEST, 0}, "test:0", tt_policy_exact},
    {{TM_DEVICE_TEST, 1}, "test:1", tt_policy_f32_i64},
};
#define TT_NDEVICES ((int)(sizeof tt_conf_devices / sizeof *tt_conf_devices))

/* Cases of `file` that run the same on every device, whatever its
 * policy: NULL, or why the case is not run on devices. */
static const char *tt_host_case(const char *file, const tt_refcase *c)
{
    static const char *const host[] = {"philox_u32", "split", "sched", NULL};
    static const char *const cpu_made[] = {"rand", "randn", "randint_new",
                                           NULL};
    bool random = !strcmp(file, "random.ref"), optim = !strcmp(file,
                                                               "optim.ref");
    if ((random || optim) && tt_op_in(c->op, host))
        return "computed on the host: no tensor reaches a backend";
    if (random && tt_op_in(c->op, cpu_made))
        return "the default-generator creation functions make CPU tensors "
               "(they take no device); the same fills into device tensors "
               "are the uniform/normal/randint cases";
    return NULL;
}

/* Whether output k of case c is a host value, made on the CPU on any
 * device: a generator's counter, an optimizer's step counts, the total
 * norm clip_norm returns. */
static bool tt_host_output(const tt_refcase *c, int k, int n)
{
    if (!strcmp(c->op, "uniform") || !strcmp(c->op, "normal") ||
        !strcmp(c->op, "randint"))
        return k == 1;
    if (!strcmp(c->op, "optim_step"))
        return (int)tt_arg(c, "kind", 0) != TM_OPTIM_SGD && k == n - 1;
    if (!strcmp(c->op, "clip_norm")) return k == 0;
    return false;
}

/* ------------------------------------------------------ running a case */

/* A copy of t on `dev` with t's exact view (shape, strides, offset) over a
 * copy of its whole storage; a float t as F32 when `as_f32`. */
static tm_tensor *tt_same_view_on(const tm_tensor *t, tm_device dev,
                                  bool as_f32)
{
    tm_dtype dt = tm_dtype_of(t);
    tm_dtype to = as_f32 && tm_dtype_is_float(dt) ? TM_F32 : dt;
    tm_storage *s = tm_storage_of(t);
    int64_t n = (int64_t)(tm_storage_nbytes(s) / tm_dtype_size(dt));
    tm_tensor *flat = tm_tensor_from_storage(s, 0, &n, NULL, 1, dt);
    /* always a fresh copy: in-place cases write into their inputs */
    tm_tensor *copy = !flat ? NULL
                      : to != dt ? tm_to_dtype(flat, to)
                      : tm_device_eq(dev, TM_CPU) ? tm_clone(flat)
                                                   : tm_retain(flat);
    tm_tensor *moved = copy ? tm_to(copy, dev) : NULL;
    tm_tensor *v = moved ? tm_as_strided(moved, tm_shape(t), tm_strides(t),
                                         tm_ndim(t), tm_offset(t))
                         : NULL;
    tm_free(moved);
    tm_free(copy);
    tm_free(flat);
    return v;
}

/* How tt_run_on runs a case. */
enum {
    TT_RUN_F32 = 1, /* float inputs as F32, an F64 "dtype" argument too */
    TT_RUN_GRAD = 2 /* float inputs require grad; the outputs are followed
                       by the inputs' gradients of sum_j sum(out_j * R_j) */
};

#define TT_RUN_MAX (TT_REF_MAX_OUT + TT_REF_MAX_IN)

typedef struct tt_run {
    tm_status st;
    char msg[512];
    int n;    /* outputs, gradients included (NULL: no gradient) */
    int nfwd; /* the dispatcher's outputs, first */
    bool no_grad; /* TT_RUN_GRAD: no output is differentiable */
    tm_tensor *out[TT_RUN_MAX];  /* as the dispatcher returned them */
    tm_tensor *host[TT_RUN_MAX]; /* their copies on the CPU */
} tt_run;

static void tt_run_free(tt_run *r)
{
    for (int k = 0; k < r->n; k++) {
        tm_free(r->out[k]);
        tm_free(r->host[k]);
    }
    memset(r, 0, sizeof *r);
}

static void tt_run_failed(tt_run *r, tm_status st)
{
    if (r->st) return; /* the first failure is the case's */
    r->st = st;
    snprintf(r->msg, sizeof r->msg, "%s", tm_last_error());
}

/* sum(out * R) for R of out's shape holding (i mod 7 - 3) / 2 at flat
 * index i: small halves, exact in every float dtype, so every device and
 * every staged dtype weighs the outputs alike. */
static tm_tensor *tt_weighted_sum(const tm_tensor *out)
{
    int64_t n = tm_numel(out);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 7 - 3) / 2;
    tm_tensor *w = tm_from_buffer(v, tm_shape(out), tm_ndim(out), TM_F64);
    free(v);
    tm_tensor *wd = w ? tm_to_dtype(w, tm_dtype_of(out)) : NULL;
    tm_tensor *wm = wd ? tm_to(wd, tm_device_of(out)) : NULL;
    tm_tensor *p = wm ? tm_mul(out, wm) : NULL;
    tm_tensor *s = p ? tm_sum(p, NULL, 0, false) : NULL;
    tm_free(p);
    tm_free(wm);
    tm_free(wd);
    tm_free(w);
    return s;
}

/* TT_RUN_GRAD: backpropagates from r's differentiable outputs and appends
 * the gradient of every float input of k (r->no_grad when there is no
 * differentiable output). */
static void tt_run_backward(const tt_refcase *k, tt_run *r)
{
    tm_tensor *total = NULL;
    for (int j = 0; j < r->nfwd && !r->st; j++) {
        if (!tm_requires_grad(r->out[j])) continue;
        tm_tensor *s = tt_weighted_sum(r->out[j]);
        tm_tensor *t = s && total ? tm_add(total, s) : tm_retain(s);
        if (!t) tt_run_failed(r, tm_last_status());
        tm_free(s);
        tm_free(total);
        total = t;
    }
    if (!r->st && !total) r->no_grad = true;
    if (!r->st && total && tm_backward(total))
        tt_run_failed(r, tm_last_status());
    tm_free(total);
    for (int i = 0; i < k->nin && !r->st && !r->no_grad; i++)
        if (tm_dtype_is_float(tm_dtype_of(k->in[i])))
            r->out[r->n++] = tm_retain(tm_grad(k->in[i]));
}

/* Runs case c on `dev` as `how` says (TT_RUN_*), copies every output back
 * and synchronizes; r->st is the first failure of these.  False (a test
 * failure recorded) when the inputs could not be moved. */
static bool tt_run_on(const tt_refcase *c, tt_ref_dispatch fn,
                      tm_device dev, int how, tt_run *r, const char *path,
                      int line)
{
    tt_refcase k = *c; /* shallow: k's tensors are replaced, not freed */
    bool ok = true;
    memset(r, 0, sizeof *r);
    k.device = dev;
    for (int i = 0; i < c->nin; i++) {
        k.in[i] = tt_same_view_on(c->in[i], dev, how & TT_RUN_F32);
        if (!k.in[i] && ok) {
            tt_fail(path, line, "case %s: input %d does not reach %s: %s",
                    c->name, i, tm_device_name(dev), tm_last_error());
            ok = false;
        } else if (k.in[i] &&
                   memcmp(tm_strides(k.in[i]), tm_strides(c->in[i]),
                          sizeof(int64_t) * (size_t)tm_ndim(c->in[i]))) {
            tt_fail(path, line, "case %s: input %d lost its view on %s",
                    c->name, i, tm_device_name(dev));
            ok = false;
        } else if (k.in[i] && (how & TT_RUN_GRAD) &&
                   tm_dtype_is_float(tm_dtype_of(k.in[i])) &&
                   tm_requires_grad_(k.in[i], true)) {
            tt_fail(path, line, "case %s: input %d cannot require grad: %s",
                    c->name, i, tm_last_error());
            ok = false;
        }
    }
    for (int a = 0; (how & TT_RUN_F32) && a < k.nargs; a++)
        if (!strcmp(k.args[a].key, "dtype") && k.args[a].n > 0 &&
            (int)k.args[a].v[0] == TM_F64)
            k.args[a].v[0] = TM_F32;
    if (ok) {
        tm_clear_error();
        tm_status st = fn(&k, r->out, &r->n);
        if (st) {
            tt_run_failed(r, st);
            r->n = 0;
        }
        r->nfwd = r->n;
        if (how & TT_RUN_GRAD) tt_run_backward(&k, r);
        for (int j = 0; j < r->n; j++)
            if (r->out[j] && !(r->host[j] = tm_to(r->out[j], TM_CPU)))
                tt_run_failed(r, tm_last_status());
        st = tm_synchronize(dev);
        if (st) tt_run_failed(r, st);
    }
    for (int i = 0; i < c->nin; i++) tm_free(k.in[i]);
    return ok;
}

/* ------------------------------------------------------------ comparing */

static bool tt_same_layout(const tm_tensor *a, const tm_tensor *b,
                           bool strides)
{
    size_t nd = (size_t)tm_ndim(b);
    return tm_dtype_of(a) == tm_dtype_of(b) && tm_ndim(a) == tm_ndim(b) &&
           !memcmp(tm_shape(a), tm_shape(b), sizeof(int64_t) * nd) &&
           (!strides ||
            !memcmp(tm_strides(a), tm_strides(b), sizeof(int64_t) * nd));
}

/* Compares got with want (CPU tensors of one dtype and shape) bitwise, or
 * within rule's tolerance for TT_CMP_NEAR. */
static void tt_compare_values(const tm_tensor *got, const tm_tensor *want,
                              const tt_rule *rule, const char *what,
                              const char *path, int line)
{
    int64_t n = tm_numel(want);
    size_t nb = tm_nbytes(want), es = tm_dtype_size(tm_dtype_of(want));
    tm_dtype dt = tm_dtype_of(want);
    bool near = rule->cmp == TT_CMP_NEAR && tm_dtype_is_float(dt);
    size_t cap = near ? sizeof(double) * (size_t)n : nb;
    char *g = malloc(cap ? cap : 1), *w = malloc(cap ? cap : 1);
    if (!g || !w ||
        tm_copy_to_buffer(got, g, cap, near ? TM_F64 : dt) ||
        tm_copy_to_buffer(want, w, cap, near ? TM_F64 : dt)) {
        tt_fail(path, line, "%s: cannot read the values: %s", what,
                tm_last_error());
    } else {
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 3; i++) {
            bool ok;
            double gv, wv;
            if (near) {
                gv = ((double *)g)[i];
                wv = ((double *)w)[i];
                ok = tt_near(gv, wv, rule->rtol, rule->atol);
            } else {
                ok = !memcmp(g + i * es, w + i * es, es);
                double pair[2];
                tm_tensor *gt = tm_from_buffer(g + i * es, NULL, 0, dt);
                tm_tensor *wt = tm_from_buffer(w + i * es, NULL, 0, dt);
                if (!ok && gt && wt && !tm_item(gt, &pair[0]) &&
                    !tm_item(wt, &pair[1])) {
                    gv = pair[0];
                    wv = pair[1];
                } else {
                    gv = wv = NAN;
                }
                tm_free(gt);
                tm_free(wt);
            }
            if (!ok) {
                bad++;
                tt_fail(path, line, "%s element %lld: %.17g, the CPU's "
                        "%.17g (%s)", what, (long long)i, gv, wv,
                        near ? "beyond the tolerance" : "bits differ");
            }
        }
    }
    free(g);
    free(w);
}

/* --------------------------------------------------------- the runner */

typedef struct tt_tally {
    int cases, bits, f32, near, skipped, failed;
    int grads;       /* cases whose gradients were compared too */
    const char *why; /* the reason of the last skip */
} tt_tally;

typedef struct tt_conf {
    const char *file;
    tt_ref_dispatch fn;
    tt_tally tally[TT_NDEVICES];
    bool available[TT_NDEVICES];
} tt_conf;

/* Device d's run of case c (TT_RUN_GRAD in `how`: with gradients) against
 * the CPU's run `cpu` under `rule`; records failures. */
static void tt_conf_pass(const tt_conf *cf, int d, const tt_refcase *c,
                         const tt_run *cpu, int how, const tt_rule *rule,
                         const char *path, int line)
{
    const struct tt_conf_device *cd = &tt_conf_devices[d];
    const char *pass = how & TT_RUN_GRAD ? " with gradients" : "";
    tm_mem_stats m0, m1;
    tm_device_memory_stats(cd->dev, &m0);
    tt_run dev, ref;
    memset(&ref, 0, sizeof ref);
    bool ran = tt_run_on(c, cf->fn, cd->dev, how, &dev, path, line);
    if (ran && rule->cmp == TT_CMP_F32)
        ran = tt_run_on(c, cf->fn, TM_CPU, how | TT_RUN_F32, &ref, path,
                        line);
    if (!ran) {
        /* recorded */
    } else if (cpu->st || dev.st) {
        if (dev.st != cpu->st)
            tt_fail(path, line, "case %s (%s) on %s%s: status %s (%s), the "
                    "CPU's %s (%s)", c->name, c->op, cd->name, pass,
                    tm_status_name(dev.st), dev.msg,
                    tm_status_name(cpu->st), cpu->msg);
        else if (c->expect_err && strstr(cpu->msg, c->err_msg) &&
                 !strstr(dev.msg, c->err_msg))
            tt_fail(path, line, "case %s on %s: message \"%s\" lacks "
                    "\"%s\"", c->name, cd->name, dev.msg, c->err_msg);
    } else if (dev.n != cpu->n || dev.nfwd != cpu->nfwd ||
               (rule->cmp == TT_CMP_F32 && (ref.st || ref.n != cpu->n))) {
        tt_fail(path, line, "case %s on %s%s: %d outputs, the CPU's %d (F32 "
                "reference: %s, %d)", c->name, cd->name, pass, dev.n,
                cpu->n, tm_status_name(ref.st), ref.n);
    } else {
        for (int k = 0; k < dev.n; k++) {
            char what[400], a[96], b[96];
            bool grad = k >= dev.nfwd;
            snprintf(what, sizeof what, "case %s (%s) on %s, %s %d", c->name,
                     c->op, cd->name, grad ? "gradient of input" : "output",
                     grad ? k - dev.nfwd : k);
            if (!dev.out[k] || !cpu->out[k]) {
                if (dev.out[k] || cpu->out[k])
                    tt_fail(path, line, "%s: %s on the device, %s on the "
                            "CPU", what, dev.out[k] ? "present" : "absent",
                            cpu->out[k] ? "present" : "absent");
                continue;
            }
            bool host = !grad && tt_host_output(c, k, dev.nfwd);
            if (!host && !tm_device_eq(tm_device_of(dev.out[k]), cd->dev)) {
                tt_fail(path, line, "%s is on %s", what,
                        tm_device_name(tm_device_of(dev.out[k])));
                continue;
            }
            if (!tt_same_layout(dev.out[k], cpu->out[k], true)) {
                tt_fail(path, line, "%s is %s, the CPU's %s", what,
                        tm_describe(dev.out[k], a, sizeof a),
                        tm_describe(cpu->out[k], b, sizeof b));
                continue;
            }
            tm_tensor *want = tm_retain(cpu->host[k]);
            if (rule->cmp == TT_CMP_F32 && !host) {
                tm_free(want);
                want = ref.host[k] ? tm_to_dtype(ref.host[k],
                                                 tm_dtype_of(cpu->out[k]))
                                   : NULL;
                if (!want || !tt_same_layout(want, cpu->host[k], false)) {
                    tt_fail(path, line, "%s: the F32 reference is %s", what,
                            want ? tm_describe(want, a, sizeof a)
                                 : "absent");
                    tm_free(want);
                    continue;
                }
            }
            tt_compare_values(dev.host[k], want, rule, what, path, line);
            tm_free(want);
        }
    }
    tt_run_free(&dev);
    tt_run_free(&ref);
    tm_synchronize(cd->dev);
    tm_device_memory_stats(cd->dev, &m1);
    if (m1.current_bytes != m0.current_bytes)
        tt_fail(path, line, "case %s on %s%s: device memory %zu bytes after "
                "the case, %zu before", c->name, cd->name, pass,
                m1.current_bytes, m0.current_bytes);
}

/* Gradients are compared for every case that succeeds on the CPU with its
 * float inputs requiring grad and has a differentiable output; the others
 * (in-place cases, which refuse such inputs; integer results) are compared
 * forward only. */
static void tt_conf_visit(tt_refcase *c, const char *path, int line,
                          void *user)
{
    tt_conf *cf = user;
    if (tt_host_case(cf->file, c)) {
        for (int d = 0; d < TT_NDEVICES; d++) {
            cf->tally[d].cases++;
            cf->tally[d].skipped++;
            cf->tally[d].why = tt_host_case(cf->file, c);
        }
        return;
    }
    tt_run cpu, cpu_g;
    memset(&cpu_g, 0, sizeof cpu_g);
    if (!tt_run_on(c, cf->fn, TM_CPU, 0, &cpu, path, line)) return;
    bool grads = !c->expect_err && !cpu.st &&
                 tt_run_on(c, cf->fn, TM_CPU, TT_RUN_GRAD, &cpu_g, path,
                           line) &&
                 !cpu_g.st && !cpu_g.no_grad;
    if (cpu.st && !c->expect_err) {
        tt_fail(path, line, "case %s (%s) fails on the CPU: %s", c->name,
                c->op, cpu.msg);
    } else {
        for (int d = 0; d < TT_NDEVICES; d++) {
            if (!cf->available[d]) continue;
            tt_tally *ty = &cf->tally[d];
            tt_rule rule = tt_conf_devices[d].policy(c);
            int fails = tt_failures();
            ty->cases++;
            if (rule.cmp == TT_CMP_SKIP) {
                ty->skipped++;
                ty->why = rule.why;
                continue;
            }
            tt_conf_pass(cf, d, c, &cpu, 0, &rule, path, line);
            if (grads) {
                tt_conf_pass(cf, d, c, &cpu_g, TT_RUN_GRAD, &rule, path,
                             line);
                ty->grads++;
            }
            if (tt_failures() != fails) ty->failed++;
            else if (rule.cmp == TT_CMP_BITS) ty->bits++;
            else if (rule.cmp == TT_CMP_F32) ty->f32++;
            else ty->near++;
        }
    }
    tt_run_free(&cpu);
    tt_run_free(&cpu_g);
}

/* Runs tests/data/<file> on every available device; prints a line per
 * device when TT_VERBOSE is set or a case failed. */
static void tt_conformance(const char *file, tt_ref_dispatch fn)
{
    tt_conf cf = {.file = file, .fn = fn};
    for (int d = 0; d < TT_NDEVICES; d++) {
        cf.available[d] = tm_device_available(tt_conf_devices[d].dev);
        if (!cf.available[d])
            printf("  %s: %s is not available (%s): skipped\n", file,
                   tt_conf_devices[d].name, tm_last_error());
    }
    tm_clear_error();
    tt_ref_foreach(file, tt_conf_visit, &cf);
    for (int d = 0; d < TT_NDEVICES; d++) {
        const tt_tally *t = &cf.tally[d];
        if (cf.available[d] && (t->failed || getenv("TT_VERBOSE")))
            printf("  %-11s %-6s %4d cases (%4d with gradients): %4d "
                   "bitwise, %3d bitwise vs F32 copies, %2d within "
                   "tolerance, %2d skipped, %3d failed\n", file,
                   tt_conf_devices[d].name, t->cases, t->grads, t->bits,
                   t->f32, t->near, t->skipped, t->failed);
        if (cf.available[d] && t->skipped && getenv("TT_VERBOSE"))
            printf("    skipped, for instance: %s\n", t->why);
    }
}

/* The suite compares with the CPU, whose results run_tests holds to
 * torch's.  The ulps bound of optim.ref is the CPU's own precision, which
 * a device computing F64 steps in F32 (test:1) cannot meet, so the steps
 * run without it here. */
static tm_status tt_conf_optim_dispatch(const tt_refcase *c, tm_tensor **got,
                                        int *ngot)
{
    if (!strcmp(c->op, "optim_step")) return tt_optim_run_step(c, got, ngot);
    return tt_optim_dispatch(c, got, ngot);
}

TEST(conformance_unary) { tt_conformance("unary.ref", tt_unary_dispatch); }
TEST(conformance_binary) { tt_conformance("binary.ref", tt_binary_dispatch); }
TEST(conformance_reduce) { tt_conformance("reduce.ref", tt_reduce_dispatch); }
TEST(conformance_rows) { tt_conformance("rows.ref", tt_rows_dispatch); }
TEST(conformance_shape) { tt_conformance("shape.ref", tt_shape_dispatch); }
TEST(conformance_index) { tt_conformance("index.ref", tt_index_dispatch); }
TEST(conformance_sort) { tt_conformance("sort.ref", tt_sort_dispatch); }
TEST(conformance_scan) { tt_conformance("scan.ref", tt_scan_dispatch); }
TEST(conformance_matmul) { tt_conformance("matmul.ref", tt_matmul_dispatch); }
TEST(conformance_convert)
{
    tt_conformance("convert.ref", tt_convert_dispatch);
}
TEST(conformance_random)
{
    tt_conformance("random.ref", tt_random_dispatch);
    tm_manual_seed(0);
}
TEST(conformance_optim)
{
    tt_conformance("optim.ref", tt_conf_optim_dispatch);
}

/* ------------------------------------------------------------ fused ops
 * The fused ops of tests/c/test_fused.c (layer_norm, rms_norm and the
 * softmax-cross-entropy), which have no reference file: the same call
 * forward and backward on every device, from the same leaves, against the
 * CPU under the device's policy.  Outputs: the op's result, then the
 * gradient of every float leaf, which must be on the device too.  The
 * norms are backpropagated from sum(y * R) for a fixed R; cross_entropy
 * is the loss itself (mean over the rows). */

enum { TT_FUSED_LN, TT_FUSED_RMS, TT_FUSED_CE };

/* The CPU leaves of one fused case: in[0] is x (or the logits), then the
 * weight and bias (norms) or the target (CE), then R (norms). */
static int tt_fused_inputs(int op, tm_tensor **in)
{
    tm_rng r = tm_rng_new(11 + (uint64_t)op);
    int64_t xs[2] = {33, 257}, ws[1] = {257}, ls[2] = {64, 1000};
    int n = 0;
    if (op == TT_FUSED_CE) {
        in[n++] = tm_empty(ls, 2, TM_F32);
        in[n++] = tm_empty((int64_t[]){64}, 1, TM_I64);
        if (!in[0] || !in[1] || tm_normal_(in[0], 0, 1, &r) ||
            tm_randint_(in[1], 0, 1000, &r))
            return -1;
        return n;
    }
    in[n++] = tm_empty(xs, 2, TM_F32);
    in[n++] = tm_empty(ws, 1, TM_F32);
    if (op == TT_FUSED_LN) in[n++] = tm_empty(ws, 1, TM_F32);
    in[n++] = tm_empty(xs, 2, TM_F32);
    for (int i = 0; i < n; i++)
        if (!in[i] || tm_normal_(in[i], i == 0 ? 3.0 : 0.0, 1, &r))
            return -1;
    return n;
}

/* Runs fused case `op` on `dev` from copies of in[0..n) into r (as
 * tt_run_on does for reference cases). */
static void tt_fused_run(int op, tm_tensor *const *in, int n, tm_device dev,
                         tt_run *r)
{
    tm_tensor *leaf[4] = {0}, *y = NULL, *p = NULL, *loss = NULL;
    int nleaf = op == TT_FUSED_CE ? 1 : n - 1; /* float leaves */
    memset(r, 0, sizeof *r);
    tm_clear_error();
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        leaf[i] = tm_device_eq(dev, TM_CPU) ? tm_clone(in[i])
                                            : tm_to(in[i], dev);
        ok = leaf[i] && (i >= nleaf || !tm_requires_grad_(leaf[i], true));
    }
    if (ok && op == TT_FUSED_CE) {
        tm_cross_entropy_opts o = tm_cross_entropy_defaults();
        y = tm_cross_entropy(leaf[0], leaf[1], &o);
        loss = tm_retain(y);
    } else if (ok) {
        y = op == TT_FUSED_LN ? tm_layer_norm(leaf[0], leaf[1], leaf[2], 1e-5)
                              : tm_rms_norm(leaf[0], leaf[1], 1e-5);
        p = y ? tm_mul(y, leaf[n - 1]) : NULL;
        loss = p ? tm_sum(p, NULL, 0, false) : NULL;
    }
    if (!loss || tm_backward(loss)) {
        tt_run_failed(r, tm_last_status());
    } else {
        r->out[r->n++] = tm_detach(y);
        for (int i = 0; i < nleaf; i++)
            if (!(r->out[r->n++] = tm_retain(tm_grad(leaf[i]))))
                tt_run_failed(r, TM_ESTATE);
    }
    for (int j = 0; j < r->n; j++)
        if (r->out[j] && !(r->host[j] = tm_to(r->out[j], TM_CPU)))
            tt_run_failed(r, tm_last_status());
    tm_status st = tm_synchronize(dev);
    if (st) tt_run_failed(r, st);
    tm_free(loss);
    tm_free(p);
    tm_free(y);
    for (int i = 0; i < n; i++) tm_free(leaf[i]);
}

static void tt_fused_conformance(int op, const char *name)
{
    tm_tensor *in[4] = {0};
    int n = tt_fused_inputs(op, in);
    tt_run cpu;
    if (n < 0) {
        tt_fail(__FILE__, __LINE__, "%s: cannot make the inputs: %s", name,
                tm_last_error());
        n = 4;
        goto done;
    }
    tt_fused_run(op, in, n, TM_CPU, &cpu);
    if (cpu.st) {
        tt_fail(__FILE__, __LINE__, "%s fails on the CPU: %s", name,
                cpu.msg);
        tt_run_free(&cpu);
        goto done;
    }
    tt_refcase c; /* what a policy reads: the op and its inputs' dtypes */
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    snprintf(c.op, sizeof c.op, "%s", name);
    c.nin = n;
    for (int i = 0; i < n; i++) c.in[i] = in[i];
    for (int d = 0; d < TT_NDEVICES; d++) {
        const struct tt_conf_device *cd = &tt_conf_devices[d];
        if (!tm_device_available(cd->dev)) continue;
        tt_rule rule = cd->policy(&c);
        if (rule.cmp == TT_CMP_SKIP) continue;
        tm_mem_stats m0, m1;
        tm_device_memory_stats(cd->dev, &m0);
        tt_run dev;
        tt_fused_run(op, in, n, cd->dev, &dev);
        if (dev.st)
            tt_fail(__FILE__, __LINE__, "%s on %s: %s", name, cd->name,
                    dev.msg);
        for (int k = 0; !dev.st && k < dev.n; k++) {
            char what[128], a[96], b[96];
            snprintf(what, sizeof what, "%s on %s, %s %d", name, cd->name,
                     k ? "gradient" : "result", k ? k - 1 : 0);
            if (!tm_device_eq(tm_device_of(dev.out[k]), cd->dev))
                tt_fail(__FILE__, __LINE__, "%s is on %s", what,
                        tm_device_name(tm_device_of(dev.out[k])));
            else if (!tt_same_layout(dev.out[k], cpu.out[k], true))
                tt_fail(__FILE__, __LINE__, "%s is %s, the CPU's %s", what,
                        tm_describe(dev.out[k], a, sizeof a),
                        tm_describe(cpu.out[k], b, sizeof b));
            else
                tt_compare_values(dev.host[k], cpu.host[k], &rule, what,
                                  __FILE__, __LINE__);
        }
        tt_run_free(&dev);
        tm_synchronize(cd->dev);
        tm_device_memory_stats(cd->dev, &m1);
        if (m1.current_bytes != m0.current_bytes)
            tt_fail(__FILE__, __LINE__, "%s on %s: device memory %zu bytes "
                    "after, %zu before", name, cd->name, m1.current_bytes,
                    m0.current_bytes);
    }
    tt_run_free(&cpu);
done:
    for (int i = 0; i < n; i++) tm_free(in[i]);
}

TEST(conformance_fused_layer_norm)
{
    tt_fused_conformance(TT_FUSED_LN, "layer_norm");
}
TEST(conformance_fused_rms_norm)
{
    tt_fused_conformance(TT_FUSED_RMS, "rms_norm");
}
TEST(conformance_fused_cross_entropy)
{
    tt_fused_conformance(TT_FUSED_CE, "cross_entropy");
}

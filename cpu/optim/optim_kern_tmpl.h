/*
 * optim_kern_tmpl.h — the optimizer update kernels, written once over a
 * small vector vocabulary and instantiated per kernel family
 * (optim_kern.c: portable F32 and F64, one element per "vector";
 * optim_avx2.c, optim_avx512.c, optim_neon.c: F32).  Every family runs the
 * same IEEE operations in the same order (fma where PyTorch's CPU kernels
 * fuse, correctly rounded sqrt and division), and the tail of a range runs
 * through the same vector body on a padded copy, so results are bitwise
 * identical across families, range splits and thread counts.
 *
 * The includer defines:
 *   TMO_FAM TMO_SUF            family and dtype suffix (f32 / f64)
 *   TMO_T TMO_W V              element type, lanes, vector type
 *   V_SET V_LOAD V_STORE V_ADD V_SUB V_MUL V_DIV V_SQRT V_NEG
 *   V_FMA(a, b, c)             a * b + c with one rounding
 *   V_MAXN(a, b)               max, NaN if either is NaN
 *
 * Per-element formulas (PyTorch 2.13 single-tensor code; see
 * docs/optim.md).  Names in comments are PyTorch's calls.
 */
#include <string.h>

#define TMO_CAT3(a, b, c, d) a##_##b##_##c##_##d
#define TMO_NAME(a, b, c, d) TMO_CAT3(a, b, c, d)
#define TMO_FN(kind) TMO_NAME(tm__optk, kind, TMO_SUF, TMO_FAM)
#define TMO_S(x) V_SET((TMO_T)(x))

/* exp_avg.lerp_(grad, w): PyTorch's lerp picks its form by |w| < 0.5. */
static inline V TMO_NAME(tmo, lerp, TMO_SUF, TMO_FAM)(V s, V e, V w, V w1,
                                                   bool small)
{
    V d = V_SUB(e, s);
    return small ? V_FMA(w, d, s) : V_FMA(w1, d, e);
}
#define TMO_LERP TMO_NAME(tmo, lerp, TMO_SUF, TMO_FAM)

/* The tail of a range: copied to padded buffers, run through the vector
 * body once, copied back. */
#define TMO_TAIL(body)                                                        \
    if (i < n) {                                                              \
        int64_t r = n - i;                                                    \
        size_t sz = (size_t)r * sizeof(TMO_T);                                \
        TMO_T tp[TMO_W] = {0}, tg[TMO_W] = {0}, t0[TMO_W] = {0},              \
              t1[TMO_W] = {0}, t2[TMO_W] = {0};                               \
        memcpy(tp, p + i, sz);                                                \
        memcpy(tg, g + i, sz);                                                \
        if (s0) memcpy(t0, s0 + i, sz);                                       \
        if (s1) memcpy(t1, s1 + i, sz);                                       \
        if (s2) memcpy(t2, s2 + i, sz);                                       \
        body(tp, tg, t0, t1, t2);                                             \
        memcpy(p + i, tp, sz);                                                \
        if (s0) memcpy(s0 + i, t0, sz);                                       \
        if (s1) memcpy(s1 + i, t1, sz);                                       \
        if (s2) memcpy(s2 + i, t2, sz);                                       \
    }

/* State pointer at element i, or NULL for state not kept (never
 * dereferenced then; no arithmetic on NULL). */
#define TMO_AT(s) ((s) ? (s) + i : (TMO_T *)0)

/* grad as the update sees it: maximize, then L2 decay
 * (grad.add(param, alpha=wd) = fma). */
#define TMO_GRAD(gv, pv, G)                                                   \
    V gv = V_LOAD(G);                                                         \
    if (k->maximize) gv = V_NEG(gv);                                          \
    if (k->decay && !k->decoupled) gv = V_FMA(wd, pv, gv);

void TMO_FN(sgd)(int64_t n, const tm__optk *k, TMO_T *p, const TMO_T *g,
                 TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const V wd = TMO_S(k->wd), mom = TMO_S(k->mom), damp1 = TMO_S(k->damp1),
            nlr = TMO_S(k->neg_lr);
    (void)s1;
    (void)s2;
#define TMO_SGD(P, G, B, X1, X2)                                              \
    do {                                                                      \
        V pv = V_LOAD(P);                                                     \
        TMO_GRAD(gv, pv, G)                                                   \
        if (k->momentum) {                                                    \
            /* buf.mul_(momentum).add_(grad, alpha=1 - dampening) */          \
            V b = k->first ? gv : V_FMA(damp1, gv, V_MUL(V_LOAD(B), mom));    \
            V_STORE(B, b);                                                    \
            gv = k->nesterov ? V_FMA(mom, b, gv) : b;                         \
        }                                                                     \
        V_STORE(P, V_FMA(nlr, gv, pv)); /* param.add_(grad, alpha=-lr) */     \
        (void)(X1);                                                           \
        (void)(X2);                                                           \
    } while (0)
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_SGD(p + i, g + i, TMO_AT(s0), 0, 0);
#define TMO_SGD_T(tp, tg, t0, t1, t2) TMO_SGD(tp, tg, t0, t1, t2)
    TMO_TAIL(TMO_SGD_T)
#undef TMO_SGD_T
#undef TMO_SGD
}

void TMO_FN(adam)(int64_t n, const tm__optk *k, TMO_T *p, const TMO_T *g,
                  TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_T w1s = (TMO_T)k->w1;
    const bool small = (w1s < 0 ? -w1s : w1s) < (TMO_T)0.5;
    const V wd = TMO_S(k->wd), dm = TMO_S(k->decay_mul), w1 = V_SET(w1s),
            w1m = V_SET(w1s - (TMO_T)1), b2 = TMO_S(k->beta2),
            c2 = TMO_S(k->c2), bc2 = TMO_S(k->bc2_sqrt),
            eps = TMO_S(k->eps), nss = TMO_S(k->neg_step);
#define TMO_ADAM(P, G, M, S, X)                                               \
    do {                                                                      \
        V pv = V_LOAD(P);                                                     \
        if (k->decay && k->decoupled) pv = V_MUL(pv, dm);                     \
        TMO_GRAD(gv, pv, G)                                                   \
        V m = TMO_LERP(V_LOAD(M), gv, w1, w1m, small);                        \
        /* exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2) */    \
        V v = V_FMA(V_MUL(c2, gv), gv, V_MUL(V_LOAD(S), b2));                 \
        V_STORE(M, m);                                                        \
        V_STORE(S, v);                                                        \
        if (k->amsgrad) {                                                     \
            v = V_MAXN(V_LOAD(X), v);                                         \
            V_STORE(X, v);                                                    \
        }                                                                     \
        /* denom = (v.sqrt() / bc2_sqrt).add_(eps);                           \
         * param.addcdiv_(exp_avg, denom, value=-step_size) */               \
        V den = V_ADD(V_DIV(V_SQRT(v), bc2), eps);                            \
        V_STORE(P, V_ADD(pv, V_DIV(V_MUL(nss, m), den)));                     \
    } while (0)
    int64_t i = 0;
    if (k->amsgrad)
        for (; i + TMO_W <= n; i += TMO_W)
            TMO_ADAM(p + i, g + i, s0 + i, s1 + i, TMO_AT(s2));
    else
        for (; i + TMO_W <= n; i += TMO_W)
            TMO_ADAM(p + i, g + i, s0 + i, s1 + i, TMO_AT(s2));
#define TMO_ADAM_T(tp, tg, t0, t1, t2) TMO_ADAM(tp, tg, t0, t1, t2)
    TMO_TAIL(TMO_ADAM_T)
#undef TMO_ADAM_T
#undef TMO_ADAM
}

void TMO_FN(rmsprop)(int64_t n, const tm__optk *k, TMO_T *p, const TMO_T *g,
                     TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_T cas = (TMO_T)k->ca;
    const bool small = (cas < 0 ? -cas : cas) < (TMO_T)0.5;
    const V wd = TMO_S(k->wd), al = TMO_S(k->alpha), ca = V_SET(cas),
            cam = V_SET(cas - (TMO_T)1), eps = TMO_S(k->eps),
            mom = TMO_S(k->mom), nlr = TMO_S(k->neg_lr);
#define TMO_RMS(P, G, SA, GA, B)                                              \
    do {                                                                      \
        V pv = V_LOAD(P);                                                     \
        TMO_GRAD(gv, pv, G)                                                   \
        /* square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha) */    \
        V sa = V_FMA(V_MUL(ca, gv), gv, V_MUL(V_LOAD(SA), al));               \
        V_STORE(SA, sa);                                                      \
        V avg;                                                                \
        if (k->centered) {                                                    \
            V ga = TMO_LERP(V_LOAD(GA), gv, ca, cam, small);                  \
            V_STORE(GA, ga);                                                  \
            /* square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_() */    \
            avg = V_SQRT(V_FMA(V_NEG(ga), ga, sa));                           \
        } else {                                                              \
            avg = V_SQRT(sa);                                                 \
        }                                                                     \
        avg = V_ADD(avg, eps);                                                \
        if (k->momentum) {                                                    \
            /* buf.mul_(momentum).addcdiv_(grad, avg);                        \
             * param.add_(buf, alpha=-lr) */                                  \
            V b = V_ADD(V_MUL(V_LOAD(B), mom), V_DIV(gv, avg));               \
            V_STORE(B, b);                                                    \
            V_STORE(P, V_FMA(nlr, b, pv));                                    \
        } else {                                                              \
            /* param.addcdiv_(grad, avg, value=-lr) */                        \
            V_STORE(P, V_ADD(pv, V_DIV(V_MUL(nlr, gv), avg)));                \
        }                                                                     \
    } while (0)
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_RMS(p + i, g + i, s0 + i, TMO_AT(s1), TMO_AT(s2));
#define TMO_RMS_T(tp, tg, t0, t1, t2) TMO_RMS(tp, tg, t0, t1, t2)
    TMO_TAIL(TMO_RMS_T)
#undef TMO_RMS_T
#undef TMO_RMS
}

void TMO_FN(adagrad)(int64_t n, const tm__optk *k, TMO_T *p, const TMO_T *g,
                     TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const V wd = TMO_S(k->wd), eps = TMO_S(k->eps), ncl = TMO_S(k->neg_step);
    (void)s1;
    (void)s2;
#define TMO_ADAGRAD(P, G, S, X1, X2)                                          \
    do {                                                                      \
        V pv = V_LOAD(P);                                                     \
        TMO_GRAD(gv, pv, G)                                                   \
        /* state_sum.addcmul_(grad, grad, value=1) */                         \
        V s = V_FMA(gv, gv, V_LOAD(S));                                       \
        V_STORE(S, s);                                                        \
        /* std = state_sum.sqrt().add_(eps);                                  \
         * param.addcdiv_(grad, std, value=-clr) */                           \
        V sd = V_ADD(V_SQRT(s), eps);                                         \
        V_STORE(P, V_ADD(pv, V_DIV(V_MUL(ncl, gv), sd)));                     \
        (void)(X1);                                                           \
        (void)(X2);                                                           \
    } while (0)
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_ADAGRAD(p + i, g + i, s0 + i, 0, 0);
#define TMO_ADAGRAD_T(tp, tg, t0, t1, t2) TMO_ADAGRAD(tp, tg, t0, t1, t2)
    TMO_TAIL(TMO_ADAGRAD_T)
#undef TMO_ADAGRAD_T
#undef TMO_ADAGRAD
}

#undef TMO_GRAD
#undef TMO_AT
#undef TMO_TAIL
#undef TMO_LERP
#undef TMO_S
#undef TMO_FN
#undef TMO_NAME
#undef TMO_CAT3

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
 * The includer defines (macros only as this vector vocabulary; the
 * control flow is in the functions below):
 *   TMO_FAM TMO_SUF            family and dtype suffix (f32 / f64)
 *   TMO_T TMO_W V              element type, lanes, vector type
 *   V_SET V_LOAD V_STORE V_ADD V_SUB V_MUL V_DIV V_SQRT V_NEG
 *   V_FMA(a, b, c)             a * b + c with one rounding
 *   V_MAXN(a, b)               max, NaN if either is NaN
 *
 * Each kind has a vector step (tmo_<kind>_vec: one vector of elements at
 * the given pointers), run over the whole vectors of a range and then,
 * through tmo_tail, once on a padded copy of the last n % TMO_W.
 *
 * Per-element formulas (PyTorch 2.13 single-tensor code; see
 * docs/optim.md).  Names in comments are PyTorch's calls.
 */
#include <stddef.h>
#include <string.h>

#define TMO_CAT3(a, b, c, d) a##_##b##_##c##_##d
#define TMO_NAME(a, b, c, d) TMO_CAT3(a, b, c, d)
#define TMO_FN(kind) TMO_NAME(tm__optk, kind, TMO_SUF, TMO_FAM)
#define TMO_LOCAL(name) TMO_NAME(tmo, name, TMO_SUF, TMO_FAM)

/* The settings of a tm_optim_update as vectors (and the lerp forms),
 * made once per kernel call; each kind reads the ones it needs. */
typedef struct TMO_LOCAL(consts) {
    V wd, dm, w1, w1m, b2, c2, bc2, eps, nss;  /* Adam(W) */
    V mom, damp1, nlr;                         /* SGD */
    V al, ca, cam;                             /* RMSprop */
    bool small_w1, small_ca;                   /* lerp form by |w| < 0.5 */
} TMO_LOCAL(consts);

static inline V TMO_LOCAL(set)(double x)
{
    return V_SET((TMO_T)x);
}

static inline TMO_LOCAL(consts)
TMO_LOCAL(consts_of)(const tm_optim_update *k)
{
    TMO_LOCAL(consts) c;
    const TMO_T w1 = (TMO_T)k->w1, ca = (TMO_T)k->ca;
    c.wd = TMO_LOCAL(set)(k->wd);
    c.dm = TMO_LOCAL(set)(k->decay_mul);
    c.w1 = V_SET(w1);
    c.w1m = V_SET(w1 - (TMO_T)1);
    c.b2 = TMO_LOCAL(set)(k->beta2);
    c.c2 = TMO_LOCAL(set)(k->c2);
    c.bc2 = TMO_LOCAL(set)(k->bc2_sqrt);
    c.eps = TMO_LOCAL(set)(k->eps);
    c.nss = TMO_LOCAL(set)(k->neg_step);
    c.mom = TMO_LOCAL(set)(k->mom);
    c.damp1 = TMO_LOCAL(set)(k->damp1);
    c.nlr = TMO_LOCAL(set)(k->neg_lr);
    c.al = TMO_LOCAL(set)(k->alpha);
    c.ca = V_SET(ca);
    c.cam = V_SET(ca - (TMO_T)1);
    c.small_w1 = (w1 < 0 ? -w1 : w1) < (TMO_T)0.5;
    c.small_ca = (ca < 0 ? -ca : ca) < (TMO_T)0.5;
    return c;
}

/* exp_avg.lerp_(grad, w): PyTorch's lerp picks its form by |w| < 0.5. */
static inline V TMO_LOCAL(lerp)(V s, V e, V w, V w1, bool small)
{
    V d = V_SUB(e, s);
    return small ? V_FMA(w, d, s) : V_FMA(w1, d, e);
}

/* grad as the update sees it: maximize, then L2 decay
 * (grad.add(param, alpha=wd) = fma). */
static inline V TMO_LOCAL(grad)(const tm_optim_update *k, V wd, V pv,
                                const TMO_T *G)
{
    V gv = V_LOAD(G);
    if (k->maximize) gv = V_NEG(gv);
    if (k->decay && !k->decoupled) gv = V_FMA(wd, pv, gv);
    return gv;
}

/* State pointer at element i, or NULL for state not kept (never
 * dereferenced then; no arithmetic on NULL). */
static inline TMO_T *TMO_LOCAL(at)(TMO_T *s, int64_t i)
{
    return s ? s + i : NULL;
}

/* One vector step of a kind at P, G and the states S0..S2. */
typedef void (*TMO_LOCAL(vec_fn))(const tm_optim_update *k,
                                  const TMO_LOCAL(consts) *c, TMO_T *P,
                                  const TMO_T *G, TMO_T *S0, TMO_T *S1,
                                  TMO_T *S2);

/* The last r < TMO_W elements of a range at p, g, s0..s2 (NULL: not
 * kept): copied to zero-padded buffers, run through the vector step
 * once, copied back, so they see exactly the operations of the rest. */
static inline void TMO_LOCAL(tail)(TMO_LOCAL(vec_fn) vec, int64_t r,
                                   const tm_optim_update *k,
                                   const TMO_LOCAL(consts) *c, TMO_T *p,
                                   const TMO_T *g, TMO_T *s0, TMO_T *s1,
                                   TMO_T *s2)
{
    size_t sz = (size_t)r * sizeof(TMO_T);
    TMO_T tp[TMO_W] = {0}, tg[TMO_W] = {0}, t0[TMO_W] = {0},
          t1[TMO_W] = {0}, t2[TMO_W] = {0};
    memcpy(tp, p, sz);
    memcpy(tg, g, sz);
    if (s0) memcpy(t0, s0, sz);
    if (s1) memcpy(t1, s1, sz);
    if (s2) memcpy(t2, s2, sz);
    vec(k, c, tp, tg, t0, t1, t2);
    memcpy(p, tp, sz);
    if (s0) memcpy(s0, t0, sz);
    if (s1) memcpy(s1, t1, sz);
    if (s2) memcpy(s2, t2, sz);
}

/* ----------------------------------------------------------------- SGD */

/* B: momentum_buffer (read only when k->momentum). */
static inline void TMO_LOCAL(sgd_vec)(const tm_optim_update *k,
                                      const TMO_LOCAL(consts) *c, TMO_T *P,
                                      const TMO_T *G, TMO_T *B, TMO_T *X1,
                                      TMO_T *X2)
{
    (void)X1;
    (void)X2;
    V pv = V_LOAD(P);
    V gv = TMO_LOCAL(grad)(k, c->wd, pv, G);
    if (k->momentum) {
        /* buf.mul_(momentum).add_(grad, alpha=1 - dampening) */
        V b = k->first ? gv : V_FMA(c->damp1, gv, V_MUL(V_LOAD(B), c->mom));
        V_STORE(B, b);
        gv = k->nesterov ? V_FMA(c->mom, b, gv) : b;
    }
    V_STORE(P, V_FMA(c->nlr, gv, pv)); /* param.add_(grad, alpha=-lr) */
}

void TMO_FN(sgd)(int64_t n, const tm_optim_update *k, TMO_T *p,
                 const TMO_T *g, TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_LOCAL(consts) c = TMO_LOCAL(consts_of)(k);
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_LOCAL(sgd_vec)(k, &c, p + i, g + i, TMO_LOCAL(at)(s0, i), NULL,
                           NULL);
    if (i < n)
        TMO_LOCAL(tail)(TMO_LOCAL(sgd_vec), n - i, k, &c, p + i, g + i,
                        TMO_LOCAL(at)(s0, i), TMO_LOCAL(at)(s1, i),
                        TMO_LOCAL(at)(s2, i));
}

/* ------------------------------------------------------------ Adam(W) */

/* M exp_avg, S exp_avg_sq, X max_exp_avg_sq (read only when amsgrad). */
static inline void TMO_LOCAL(adam_vec)(const tm_optim_update *k,
                                       const TMO_LOCAL(consts) *c, TMO_T *P,
                                       const TMO_T *G, TMO_T *M, TMO_T *S,
                                       TMO_T *X)
{
    V pv = V_LOAD(P);
    if (k->decay && k->decoupled) pv = V_MUL(pv, c->dm);
    V gv = TMO_LOCAL(grad)(k, c->wd, pv, G);
    V m = TMO_LOCAL(lerp)(V_LOAD(M), gv, c->w1, c->w1m, c->small_w1);
    /* exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2) */
    V v = V_FMA(V_MUL(c->c2, gv), gv, V_MUL(V_LOAD(S), c->b2));
    V_STORE(M, m);
    V_STORE(S, v);
    if (k->amsgrad) {
        v = V_MAXN(V_LOAD(X), v);
        V_STORE(X, v);
    }
    /* denom = (v.sqrt() / bc2_sqrt).add_(eps);
     * param.addcdiv_(exp_avg, denom, value=-step_size) */
    V den = V_ADD(V_DIV(V_SQRT(v), c->bc2), c->eps);
    V_STORE(P, V_ADD(pv, V_DIV(V_MUL(c->nss, m), den)));
}

void TMO_FN(adam)(int64_t n, const tm_optim_update *k, TMO_T *p,
                  const TMO_T *g, TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_LOCAL(consts) c = TMO_LOCAL(consts_of)(k);
    int64_t i = 0;
    /* the same loop twice, so each is compiled knowing amsgrad */
    if (k->amsgrad)
        for (; i + TMO_W <= n; i += TMO_W)
            TMO_LOCAL(adam_vec)(k, &c, p + i, g + i, s0 + i, s1 + i,
                                TMO_LOCAL(at)(s2, i));
    else
        for (; i + TMO_W <= n; i += TMO_W)
            TMO_LOCAL(adam_vec)(k, &c, p + i, g + i, s0 + i, s1 + i,
                                TMO_LOCAL(at)(s2, i));
    if (i < n)
        TMO_LOCAL(tail)(TMO_LOCAL(adam_vec), n - i, k, &c, p + i, g + i,
                        TMO_LOCAL(at)(s0, i), TMO_LOCAL(at)(s1, i),
                        TMO_LOCAL(at)(s2, i));
}

/* ------------------------------------------------------------ RMSprop */

/* SA square_avg, GA grad_avg (read only when centered), B momentum_buffer
 * (read only when k->momentum). */
static inline void TMO_LOCAL(rmsprop_vec)(const tm_optim_update *k,
                                          const TMO_LOCAL(consts) *c,
                                          TMO_T *P, const TMO_T *G,
                                          TMO_T *SA, TMO_T *GA, TMO_T *B)
{
    V pv = V_LOAD(P);
    V gv = TMO_LOCAL(grad)(k, c->wd, pv, G);
    /* square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha) */
    V sa = V_FMA(V_MUL(c->ca, gv), gv, V_MUL(V_LOAD(SA), c->al));
    V_STORE(SA, sa);
    V avg;
    if (k->centered) {
        V ga = TMO_LOCAL(lerp)(V_LOAD(GA), gv, c->ca, c->cam, c->small_ca);
        V_STORE(GA, ga);
        /* square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_() */
        avg = V_SQRT(V_FMA(V_NEG(ga), ga, sa));
    } else {
        avg = V_SQRT(sa);
    }
    avg = V_ADD(avg, c->eps);
    if (k->momentum) {
        /* buf.mul_(momentum).addcdiv_(grad, avg);
         * param.add_(buf, alpha=-lr) */
        V b = V_ADD(V_MUL(V_LOAD(B), c->mom), V_DIV(gv, avg));
        V_STORE(B, b);
        V_STORE(P, V_FMA(c->nlr, b, pv));
    } else {
        /* param.addcdiv_(grad, avg, value=-lr) */
        V_STORE(P, V_ADD(pv, V_DIV(V_MUL(c->nlr, gv), avg)));
    }
}

void TMO_FN(rmsprop)(int64_t n, const tm_optim_update *k, TMO_T *p,
                     const TMO_T *g, TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_LOCAL(consts) c = TMO_LOCAL(consts_of)(k);
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_LOCAL(rmsprop_vec)(k, &c, p + i, g + i, s0 + i,
                               TMO_LOCAL(at)(s1, i), TMO_LOCAL(at)(s2, i));
    if (i < n)
        TMO_LOCAL(tail)(TMO_LOCAL(rmsprop_vec), n - i, k, &c, p + i, g + i,
                        TMO_LOCAL(at)(s0, i), TMO_LOCAL(at)(s1, i),
                        TMO_LOCAL(at)(s2, i));
}

/* ------------------------------------------------------------ Adagrad */

/* S: sum. */
static inline void TMO_LOCAL(adagrad_vec)(const tm_optim_update *k,
                                          const TMO_LOCAL(consts) *c,
                                          TMO_T *P, const TMO_T *G,
                                          TMO_T *S, TMO_T *X1, TMO_T *X2)
{
    (void)X1;
    (void)X2;
    V pv = V_LOAD(P);
    V gv = TMO_LOCAL(grad)(k, c->wd, pv, G);
    /* state_sum.addcmul_(grad, grad, value=1) */
    V s = V_FMA(gv, gv, V_LOAD(S));
    V_STORE(S, s);
    /* std = state_sum.sqrt().add_(eps);
     * param.addcdiv_(grad, std, value=-clr) */
    V sd = V_ADD(V_SQRT(s), c->eps);
    V_STORE(P, V_ADD(pv, V_DIV(V_MUL(c->nss, gv), sd)));
}

void TMO_FN(adagrad)(int64_t n, const tm_optim_update *k, TMO_T *p,
                     const TMO_T *g, TMO_T *s0, TMO_T *s1, TMO_T *s2)
{
    const TMO_LOCAL(consts) c = TMO_LOCAL(consts_of)(k);
    int64_t i = 0;
    for (; i + TMO_W <= n; i += TMO_W)
        TMO_LOCAL(adagrad_vec)(k, &c, p + i, g + i, s0 + i, NULL, NULL);
    if (i < n)
        TMO_LOCAL(tail)(TMO_LOCAL(adagrad_vec), n - i, k, &c, p + i, g + i,
                        TMO_LOCAL(at)(s0, i), TMO_LOCAL(at)(s1, i),
                        TMO_LOCAL(at)(s2, i));
}

#undef TMO_LOCAL
#undef TMO_FN
#undef TMO_NAME
#undef TMO_CAT3

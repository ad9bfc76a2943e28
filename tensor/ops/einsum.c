/* einsum.c — Einstein summation over any number of operands.
 *
 * Composed of public ops, so it runs on every device and records autograd
 * through them: repeated labels of one operand become diagonal views,
 * labels found in one operand only (and not in the output) are summed
 * first, and the operands are then contracted left to right, each pair as
 * one batched matmul ([batch, left, sum] x [batch, sum, right]), which is
 * where the time goes for large einsums. */
#include "compose_impl.h"

#include <string.h>

enum { NLETTER = 52, NLABEL = NLETTER + TM_MAX_DIMS, MAXOPS = 64 };

/* A working tensor and the label of each of its dims. */
typedef struct {
    tm_tensor *t;
    int lab[TM_MAX_DIMS];
    int n;
} term;

static int letter_id(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

static char label_char(int id)
{
    return id < 26 ? (char)('A' + id) : id < NLETTER ? (char)('a' + id - 26)
                                                     : '.';
}

/* One term's labels (letters only) into ids[], with *ell the position of
 * "..." among them (-1 if none).  `at` is the term's offset in the whole
 * equation, for messages. */
static tm_status parse_term(const char *s, size_t len, size_t at, int *ids,
                            int *nids, int *ell)
{
    *nids = 0;
    *ell = -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (*ell >= 0 || i + 2 >= len + 0 || s[i + 1] != '.' ||
                s[i + 2] != '.')
                return tm__errf(TM_EINVAL, "tm_einsum", "bad ellipsis at "
                                "index %zu (one \"...\" per term)", at + i);
            *ell = *nids;
            i += 2;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0)
            return tm__errf(TM_EINVAL, "tm_einsum", "invalid subscript '%c' "
                            "at index %zu; subscripts are in [a-zA-Z]", s[i],
                            at + i);
        if (*nids >= TM_MAX_DIMS)
            return tm__errf(TM_EINVAL, "tm_einsum", "more than %d subscripts "
                            "in one term", TM_MAX_DIMS);
        ids[(*nids)++] = id;
    }
    return TM_OK;
}

/* Sums away the dims of x whose label is not marked in keep[]. */
static tm_status sum_unkept(term *x, const bool *keep)
{
    int dims[TM_MAX_DIMS], nd = 0, m = 0;
    for (int i = 0; i < x->n; i++) {
        if (!keep[x->lab[i]]) dims[nd++] = i;
        else x->lab[m++] = x->lab[i];
    }
    if (!nd) return TM_OK;
    x->n = m;
    return tm__step(&x->t, tm_sum(x->t, dims, nd, false)) ? TM_OK
                                                         : tm_last_status();
}

/* Repeated labels of one operand: each pair becomes a diagonal (a view
 * whose dim goes last). */
static tm_status take_diagonals(term *x)
{
    for (int p = 0; p < x->n; p++)
        for (int q = p + 1; q < x->n; q++) {
            if (x->lab[p] != x->lab[q]) continue;
            int64_t a = x->t->shape[p], b = x->t->shape[q];
            if (a != b)
                return tm__errf(TM_ESHAPE, "tm_einsum", "subscript %c is "
                                "repeated in one operand with sizes %lld and "
                                "%lld", label_char(x->lab[p]), (long long)a,
                                (long long)b);
            int l = x->lab[p], m = 0;
            if (!tm__step(&x->t, tm_diagonal(x->t, 0, p, q)))
                return tm_last_status();
            for (int i = 0; i < x->n; i++)
                if (i != p && i != q) x->lab[m++] = x->lab[i];
            x->lab[m++] = l;
            x->n = m;
            p = -1; /* the labels moved: start over */
            break;
        }
    return TM_OK;
}

/* Stretches size-1 dims to the label's size (broadcasting) by a view. */
static tm_status stretch(term *x, const int64_t *size)
{
    int64_t shape[TM_MAX_DIMS];
    bool any = false;
    for (int i = 0; i < x->n; i++) {
        shape[i] = size[x->lab[i]];
        any |= shape[i] != x->t->shape[i];
    }
    if (!any) return TM_OK;
    return tm__step(&x->t, tm_expand(x->t, shape, x->n)) ? TM_OK
                                                        : tm_last_status();
}

/* Puts x's dims in the order of labels want[nw] (a permutation of its
 * labels) and merges them into groups of g[0], g[1], g[2] dims. */
static tm_tensor *grouped(const term *x, const int *want, const int *g)
{
    int perm[TM_MAX_DIMS] = {0};
    int64_t shape[3] = {1, 1, 1};
    for (int i = 0, k = 0; k < 3; k++)
        for (int j = 0; j < g[k]; j++, i++) {
            for (int d = 0; d < x->n; d++)
                if (x->lab[d] == want[i]) perm[i] = d;
            shape[k] *= x->t->shape[perm[i]];
        }
    tm_tensor *p = tm_permute(x->t, perm, x->n);
    tm_tensor *r = p ? tm_reshape(p, shape, 3) : NULL;
    tm_free(p);
    return r;
}

/* a (*) b over the labels not in need[] shared by both (summed); the
 * shared ones in need[] are batch dims.  The result's labels are batch,
 * a's own, b's own; a takes the result. */
static tm_status contract(term *a, term *b, const bool *need)
{
    bool in_b[NLABEL] = {false}, in_a[NLABEL] = {false};
    int bat[TM_MAX_DIMS], sum[TM_MAX_DIMS], ao[TM_MAX_DIMS], bo[TM_MAX_DIMS];
    int nb = 0, ns = 0, na = 0, no = 0;
    for (int i = 0; i < b->n; i++) in_b[b->lab[i]] = true;
    for (int i = 0; i < a->n; i++) {
        int l = a->lab[i];
        in_a[l] = true;
        if (!in_b[l]) ao[na++] = l;
        else if (need[l]) bat[nb++] = l;
        else sum[ns++] = l;
    }
    for (int i = 0; i < b->n; i++)
        if (!in_a[b->lab[i]]) bo[no++] = b->lab[i];
    if (nb + na + no > TM_MAX_DIMS)
        return tm__errf(TM_EINVAL, "tm_einsum", "an intermediate result "
                        "would have %d dims; at most %d", nb + na + no,
                        TM_MAX_DIMS);
    int wa[TM_MAX_DIMS], wb[TM_MAX_DIMS], k = 0, j = 0;
    int64_t shape[TM_MAX_DIMS] = {0};
    for (int i = 0; i < nb; i++) wa[k++] = wb[j++] = bat[i];
    for (int i = 0; i < na; i++) wa[k++] = ao[i];
    for (int i = 0; i < ns; i++) wa[k++] = wb[j++] = sum[i];
    for (int i = 0; i < no; i++) wb[j++] = bo[i];
    int lab[TM_MAX_DIMS], n = 0;
    for (int i = 0; i < nb; i++) lab[n++] = bat[i];
    for (int i = 0; i < na; i++) lab[n++] = ao[i];
    for (int i = 0; i < no; i++) lab[n++] = bo[i];
    for (int i = 0; i < n; i++)
        for (int d = 0; d < a->n; d++)
            if (a->lab[d] == lab[i]) shape[i] = a->t->shape[d];
    for (int i = nb + na; i < n; i++)
        for (int d = 0; d < b->n; d++)
            if (b->lab[d] == lab[i]) shape[i] = b->t->shape[d];
    tm_tensor *x = grouped(a, wa, (int[]){nb, na, ns});
    tm_tensor *y = x ? grouped(b, wb, (int[]){nb, ns, no}) : NULL;
    tm_tensor *z = y ? tm_matmul(x, y) : NULL;
    tm_free(x);
    tm_free(y);
    if (!tm__step(&a->t, z ? tm_reshape(z, shape, n) : NULL)) {
        tm_free(z);
        return tm_last_status();
    }
    tm_free(z);
    memcpy(a->lab, lab, sizeof lab);
    a->n = n;
    return TM_OK;
}

/* Parses the equation into terms x[n] (labels per dim) and the output
 * labels out[*nout]; fills size[] with each label's broadcast size. */
static tm_status parse(const char *eq, tm_tensor *const *ops, int n, term *x,
                       int *out, int *nout, int64_t *size)
{
    const char *arrow = strstr(eq, "->"), *end = eq + strlen(eq);
    const char *lhs_end = arrow ? arrow : end;
    int count[NLABEL] = {0}, maxell = 0, ell[MAXOPS];
    const char *s = eq;
    for (int k = 0; k < NLABEL; k++) size[k] = -1;
    for (int i = 0;; i++) {
        const char *c = memchr(s, ',', (size_t)(lhs_end - s));
        const char *e = c ? c : lhs_end;
        if (i >= n)
            return tm__errf(TM_EINVAL, "tm_einsum", "the equation has more "
                            "terms than the %d operands given", n);
        int ids[TM_MAX_DIMS], nid;
        if (parse_term(s, (size_t)(e - s), (size_t)(s - eq), ids, &nid,
                       &ell[i]))
            return tm_last_status();
        int nd = ops[i]->ndim;
        if (ell[i] < 0 ? nd != nid : nd < nid)
            return tm__errf(TM_ESHAPE, "tm_einsum", "operand %d has %d dims "
                            "but its term has %d subscripts%s", i, nd, nid,
                            ell[i] < 0 ? " and no ellipsis" : "");
        int ne = ell[i] < 0 ? 0 : nd - nid;
        maxell = ne > maxell ? ne : maxell;
        x[i].n = 0;
        for (int k = 0; k < nid; k++) {
            if (k == ell[i])
                for (int j = 0; j < ne; j++) x[i].lab[x[i].n++] = -1 - j;
            x[i].lab[x[i].n++] = ids[k];
        }
        if (ell[i] == nid)
            for (int j = 0; j < ne; j++) x[i].lab[x[i].n++] = -1 - j;
        ell[i] = ne;
        if (!c) {
            if (i + 1 != n)
                return tm__errf(TM_EINVAL, "tm_einsum", "the equation has %d "
                                "terms but %d operands were given", i + 1, n);
            break;
        }
        s = c + 1;
    }
    for (int i = 0; i < n; i++) { /* ellipsis dims, right-aligned */
        bool seen[NLABEL] = {false};
        for (int d = 0; d < x[i].n; d++) {
            int l = x[i].lab[d];
            if (l < 0) l = x[i].lab[d] = NLETTER + maxell - ell[i] + (-1 - l);
            int64_t z = ops[i]->shape[d];
            if (size[l] >= 0 && size[l] != z && size[l] != 1 && z != 1)
                return tm__errf(TM_ESHAPE, "tm_einsum", "subscript %c has "
                                "size %lld in operand %d, which does not "
                                "broadcast with size %lld", label_char(l),
                                (long long)z, i, (long long)size[l]);
            if (size[l] < 0 || size[l] == 1) size[l] = z;
            if (!seen[l]) count[l]++;
            seen[l] = true;
        }
    }
    *nout = 0;
    if (!arrow) {
        for (int j = 0; j < maxell; j++) out[(*nout)++] = NLETTER + j;
        for (int l = 0; l < NLETTER; l++) {
            int reps = 0;
            for (int i = 0; i < n; i++)
                for (int d = 0; d < x[i].n; d++) reps += x[i].lab[d] == l;
            if (reps == 1) {
                if (*nout >= TM_MAX_DIMS)
                    return tm__errf(TM_EINVAL, "tm_einsum", "the output "
                                    "would have more than %d dims",
                                    TM_MAX_DIMS);
                out[(*nout)++] = l;
            }
        }
        return TM_OK;
    }
    int ids[TM_MAX_DIMS], nid, oell;
    if (parse_term(arrow + 2, (size_t)(end - arrow - 2),
                   (size_t)(arrow + 2 - eq), ids, &nid, &oell))
        return tm_last_status();
    if (nid + (oell >= 0 ? maxell : 0) > TM_MAX_DIMS)
        return tm__errf(TM_EINVAL, "tm_einsum", "the output would have more "
                        "than %d dims", TM_MAX_DIMS);
    bool used[NLABEL] = {false};
    for (int k = 0; k <= nid; k++) {
        if (k == oell)
            for (int j = 0; j < maxell; j++) out[(*nout)++] = NLETTER + j;
        if (k == nid) break;
        int l = ids[k];
        if (!count[l])
            return tm__errf(TM_EINVAL, "tm_einsum", "output subscript %c "
                            "does not appear in any input", label_char(l));
        if (used[l])
            return tm__errf(TM_EINVAL, "tm_einsum", "output subscript %c "
                            "appears more than once", label_char(l));
        used[l] = true;
        out[(*nout)++] = l;
    }
    return TM_OK;
}

tm_tensor *tm_einsum(const char *equation, tm_tensor *const *operands, int n)
{
    term x[MAXOPS];
    int out[TM_MAX_DIMS], nout = 0, done = 0;
    int64_t size[NLABEL];
    tm_tensor *r = NULL;
    if (!equation) {
        TM_ERR(TM_EINVAL, "equation is NULL");
        return NULL;
    }
    if (n < 1 || n > MAXOPS || !operands) {
        TM_ERR(TM_EINVAL, "needs 1 to %d operands, got %d", MAXOPS, n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!operands[i]) {
            TM_ERR(TM_EINVAL, "operand %d is NULL", i);
            return NULL;
        } else if (tm__q_refuse(__func__, operands[i], "an operand")) {
            return NULL;
        }
    if (tm__check_same_device(__func__, (const tm_tensor *const *)operands,
                              n))
        return NULL;
    char eq[512];
    size_t m = 0;
    for (const char *c = equation; *c; c++) /* spaces are allowed anywhere */
        if (*c != ' ') {
            if (m + 1 >= sizeof eq) {
                TM_ERR(TM_EINVAL, "equation longer than %zu characters",
                       sizeof eq - 1);
                return NULL;
            }
            eq[m++] = *c;
        }
    eq[m] = 0;
    if (parse(eq, operands, n, x, out, &nout, size)) return NULL;
    bool need[NLABEL] = {false}, keep[NLABEL];
    for (int i = 0; i < nout; i++) need[out[i]] = true;
    for (int i = 0; i < n; i++) {
        x[i].t = tm_retain(operands[i]);
        done = i + 1;
        if (take_diagonals(&x[i])) goto fail;
        /* keep what the output or another operand uses */
        memcpy(keep, need, sizeof keep);
        for (int j = 0; j < n; j++)
            for (int d = 0; j != i && d < x[j].n; d++)
                keep[x[j].lab[d]] = true;
        if (sum_unkept(&x[i], keep) || stretch(&x[i], size)) goto fail;
    }
    for (int i = 1; i < n; i++) {
        memcpy(keep, need, sizeof keep);
        for (int j = i + 1; j < n; j++)
            for (int d = 0; d < x[j].n; d++) keep[x[j].lab[d]] = true;
        if (contract(&x[0], &x[i], keep)) goto fail;
    }
    if (sum_unkept(&x[0], need)) goto fail;
    int perm[TM_MAX_DIMS] = {0};
    for (int i = 0; i < nout; i++)
        for (int d = 0; d < x[0].n; d++)
            if (x[0].lab[d] == out[i]) perm[i] = d;
    r = tm_permute(x[0].t, perm, nout);
fail:
    if (!r) tm__relabel_error(__func__, tm_last_status());
    for (int i = 0; i < done; i++) tm_free(x[i].t);
    return r;
}

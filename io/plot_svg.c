/*
 * plot_svg.c — the loss curves of a run, drawn from its metrics file as a
 * standalone SVG (no dependencies: a browser or any image viewer shows it).
 *
 * Panel 1: train_loss (line) and val_loss (line with markers) against step.
 * Panel 2, when any lr is logged: lr against the same step axis.
 * Ticks are 1-2-5 multiples of a power of ten, about six per axis.
 */
#include "foundry/data.h"
#include "../tensor/runtime/runtime_impl.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS_FILE (1u << 28)

typedef struct series {
    double *x, *y;
    size_t n, cap;
} series;

static bool push(series *s, double x, double y)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, cap * sizeof *nx);
        if (!nx) return false;
        s->x = nx;
        double *ny = realloc(s->y, cap * sizeof *ny);
        if (!ny) return false;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n] = y;
    s->n++;
    return true;
}

static char *read_all(const char *path, size_t *n, const char *fn)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tm__errf(TM_EIO, fn, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        if (cap >= MAX_METRICS_FILE) {
            tm__errf(TM_EFORMAT, fn, "%s: larger than %u bytes", path,
                     MAX_METRICS_FILE);
            free(buf);
            buf = NULL;
            break;
        }
        char *nb = realloc(buf, cap *= 2);
        if (!nb) free(buf);
        buf = nb;
        if (!nb) tm__errf(TM_ENOMEM, fn, "no memory for %s", path);
    }
    if (buf && ferror(f)) {
        tm__errf(TM_EIO, fn, "%s: read failed", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* A metric value: a number, or null (skipped).  Anything else is an error. */
static int value_of(const tm__json_node *v, double *out)
{
    if (!v || v->type == TM__JSON_NULL) return 0;
    if (v->type != TM__JSON_INT && v->type != TM__JSON_FLOAT) return -1;
    *out = v->type == TM__JSON_INT ? (double)v->i : v->f;
    return 1;
}

static tm_status parse_line(const char *s, size_t len, size_t line,
                            const char *path, series out[3], const char *fn)
{
    static const char *const keys[3] = {"train_loss", "val_loss", "lr"};
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: line %zu: ", path, line);
    tm__json_doc doc = {0};
    tm_status st = tm__json_parse(&doc, s, len, fn, prefix);
    if (st != TM_OK) return st;
    double step = 0;
    const tm__json_node *sn = NULL;
    if (doc.nodes[0].type != TM__JSON_OBJECT) {
        st = tm__errf(TM_EFORMAT, fn, "%snot a JSON object", prefix);
        goto done;
    }
    sn = tm__json_get(&doc, 0, "step");
    if (value_of(sn, &step) != 1) {
        st = tm__errf(TM_EFORMAT, fn, "%sno numeric \"step\"", prefix);
        goto done;
    }
    for (int k = 0; k < 3; k++) {
        double v;
        int r = value_of(tm__json_get(&doc, 0, keys[k]), &v);
        if (r < 0) {
            st = tm__errf(TM_EFORMAT, fn, "%s\"%s\" is not a number or null",
                          prefix, keys[k]);
            goto done;
        }
        if (r && !push(&out[k], step, v)) {
            st = tm__errf(TM_ENOMEM, fn, "no memory for the curves");
            goto done;
        }
    }
done:
    tm__json_free(&doc);
    return st;
}

/* ------------------------------------------------------------- drawing */

typedef struct axis {
    double lo, hi, step;
} axis;

/* A 1-2-5 step giving about `want` intervals; lo/hi widened to ticks. */
static axis nice_axis(double lo, double hi, int want)
{
    axis a;
    if (!(hi > lo)) {
        double pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / want, p = pow(10, floor(log10(raw)));
    double f = raw / p;
    a.step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
    a.lo = floor(lo / a.step) * a.step;
    a.hi = ceil(hi / a.step) * a.step;
    return a;
}

static void tick_label(char *buf, size_t n, double v, double step)
{
    if (fabs(v) < step * 1e-9) v = 0;
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) >= 1e6 || (v != 0 && dec > 5)) snprintf(buf, n, "%.3g", v);
    else snprintf(buf, n, "%.*f", dec, v);
}

typedef struct panel {
    double x0, y0, w, h;   /* plot area in pixels */
    axis ax, ay;
} panel;

static double px(const panel *p, double x)
{
    return p->x0 + (x - p->ax.lo) / (p->ax.hi - p->ax.lo) * p->w;
}

static double py(const panel *p, double y)
{
    return p->y0 + p->h - (y - p->ay.lo) / (p->ay.hi - p->ay.lo) * p->h;
}

/* Intervals between ticks; counted, not stepped, so an axis whose step is
 * below the precision of its values cannot loop forever. */
static int ticks(const axis *a)
{
    double k = round((a->hi - a->lo) / a->step);
    return k >= 0 && k <= 50 ? (int)k : 0;
}

static void draw_axes(FILE *f, const panel *p, const char *ylabel)
{
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#444\"/>\n", p->x0, p->y0, p->w, p->h);
    char lab[64];
    for (int k = 0; k <= ticks(&p->ax); k++) {
        double v = p->ax.lo + k * p->ax.step, x = px(p, v);
        tick_label(lab, sizeof lab, v, p->ax.step);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%s</text>\n", x, p->y0, x, p->y0 + p->h,
                x, p->y0 + p->h + 16, lab);
    }
    for (int k = 0; k <= ticks(&p->ay); k++) {
        double v = p->ay.lo + k * p->ay.step, y = py(p, v);
        tick_label(lab, sizeof lab, v, p->ay.step);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n", p->x0, y, p->x0 + p->w, y,
                p->x0 - 6, y + 4, lab);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n", p->x0 - 58,
            p->y0 + p->h / 2, p->x0 - 58, p->y0 + p->h / 2, ylabel);
}

static void draw_series(FILE *f, const panel *p, const series *s,
                        const char *color, bool markers)
{
    if (!s->n) return;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
            "points=\"", color);
    for (size_t i = 0; i < s->n; i++)
        fprintf(f, "%s%.2f,%.2f", i ? " " : "", px(p, s->x[i]), py(p, s->y[i]));
    fputs("\"/>\n", f);
    for (size_t i = 0; markers && i < s->n; i++)
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n",
                px(p, s->x[i]), py(p, s->y[i]), color);
}

static void range_of(const series *s, int n, bool xs, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < s[k].n; i++) {
            double v = xs ? s[k].x[i] : s[k].y[i];
            if (v < *lo) *lo = v;
            if (v > *hi) *hi = v;
        }
    if (*lo > *hi) *lo = 0, *hi = 1;   /* nothing logged yet */
}

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            /* XML 1.0 forbids other control characters */
            fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
        }
    }
}

static void write_svg(FILE *f, const series s[3], const char *title)
{
    bool has_lr = s[2].n > 0;
    double W = 800, H = has_lr ? 540 : 400;
    double lo, hi;
    range_of(s, 3, true, &lo, &hi);
    axis ax = nice_axis(lo, hi, 8);
    panel loss = {80, 44, 690, 290, ax, {0, 1, 1}};
    range_of(s, 2, false, &lo, &hi);
    loss.ay = nice_axis(lo, hi, 6);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\""
            " font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n", W, H, W, H);
    if (title) {
        fputs("<text x=\"400\" y=\"26\" text-anchor=\"middle\" "
              "font-size=\"16\">", f);
        put_escaped(f, title);
        fputs("</text>\n", f);
    }
    draw_axes(f, &loss, "loss (nats/token)");
    draw_series(f, &loss, &s[0], "#1f77b4", false);
    draw_series(f, &loss, &s[1], "#ff7f0e", true);
    if (!s[0].n && !s[1].n)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                "fill=\"#888\">no losses logged yet</text>\n",
                loss.x0 + loss.w / 2, loss.y0 + loss.h / 2);
    /* legend, top right of the loss panel */
    double lx = loss.x0 + loss.w - 130, ly = loss.y0 + 10;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"120\" height=\"44\" "
            "fill=\"white\" stroke=\"#999\"/>\n"
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#1f77b4\" stroke-width=\"2\"/>\n<text x=\"%.1f\" "
            "y=\"%.1f\">train loss</text>\n<line x1=\"%.1f\" y1=\"%.1f\" "
            "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>\n"
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#ff7f0e\"/>\n"
            "<text x=\"%.1f\" y=\"%.1f\">val loss</text>\n",
            lx, ly, lx + 8, ly + 14, lx + 32, ly + 14, lx + 40, ly + 18,
            lx + 8, ly + 32, lx + 32, ly + 32, lx + 20, ly + 32, lx + 40, ly + 36);
    panel *bottom = &loss;
    panel lrp = {80, 384, 690, 120, ax, {0, 1, 1}};
    if (has_lr) {
        range_of(&s[2], 1, false, &lo, &hi);
        lrp.ay = nice_axis(lo, hi, 3);
        draw_axes(f, &lrp, "lr");
        draw_series(f, &lrp, &s[2], "#2ca02c", false);
        bottom = &lrp;
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>"
            "\n</svg>\n", bottom->x0 + bottom->w / 2, bottom->y0 + bottom->h + 34);
}

tm_status tm_plot_metrics_svg(const char *metrics_path, const char *svg_path,
                              const char *title)
{
    const char *fn = __func__;
    if (!metrics_path || !svg_path)
        return TM_ERR(TM_EINVAL, "metrics_path or svg_path is NULL");
    size_t bad;
    if (title && !tm__utf8_valid((const unsigned char *)title, strlen(title), &bad))
        return TM_ERR(TM_EINVAL, "title is not valid UTF-8 (byte %zu)", bad);
    series s[3] = {{0}, {0}, {0}};
    char *tmp = NULL;
    FILE *f = NULL;
    size_t n = 0;
    tm_status st = TM_OK;
    char *text = read_all(metrics_path, &n, fn);
    if (!text) return tm_last_status();
    size_t line = 0;
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(text + at, '\n', n - at);
        line++;
        if (!nl) break;   /* a run still writing its last line */
        size_t len = (size_t)(nl - (text + at));
        bool blank = true;
        for (size_t i = 0; i < len && blank; i++)
            blank = strchr(" \t\r", text[at + i]) != NULL;
        if (!blank) {
            st = parse_line(text + at, len, line, metrics_path, s, fn);
            if (st != TM_OK) goto done;
        }
        at += len + 1;
    }
    size_t pl = strlen(svg_path);
    tmp = malloc(pl + 5);
    if (!tmp) {
        st = TM_ERR(TM_ENOMEM, "no memory");
        goto done;
    }
    memcpy(tmp, svg_path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    f = fopen(tmp, "wb");
    if (!f) {
        st = TM_ERR(TM_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    write_svg(f, s, title);
    bool ok = !ferror(f);
    if (fclose(f) != 0) ok = false;
    f = NULL;
    if (!ok) {
        remove(tmp);
        st = TM_ERR(TM_EIO, "%s: write failed", tmp);
        goto done;
    }
    if (rename(tmp, svg_path) != 0) {
        st = TM_ERR(TM_EIO, "cannot rename %s to %s: %s", tmp, svg_path,
                    strerror(errno));
        remove(tmp);
    }
done:
    free(text);
    free(tmp);
    for (int k = 0; k < 3; k++) {
        free(s[k].x);
        free(s[k].y);
    }
    return st;
}

/*
 * progress.c — progress bars (TTY) and periodic lines (logs).
 *
 * One line of text is built for every redraw:
 *   desc  45%|████▌     | 450/1000 [00:12<00:14, 37.2 tok/s, loss=2.31]
 * tqdm's layout, so users read it without thinking.  The rate is an
 * exponential average of the rate between redraws (tqdm's smoothing 0.3),
 * so a stall shows within a few redraws while one slow step does not swing
 * the ETA; the final line uses the overall mean instead.
 */
#include "foundry/data.h"
#include "../tensor/runtime/runtime_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR_CELLS 20
#define SMOOTHING 0.3

typedef struct metric {
    char *name;
    double value;
} metric;

struct tm_progress {
    char *desc, *unit;
    int64_t total, n;
    tm_progress_mode mode;   /* BAR, PLAIN or SILENT once resolved */
    FILE *out;
    void (*write)(const char *s, size_t n, void *user);
    void *user;
    double interval;
    double t0, t_last;       /* start, last redraw */
    int64_t n_last;          /* count at the last redraw */
    double rate;             /* smoothed; < 0 until the first estimate */
    size_t last_len;         /* bar: visible width of the last draw */
    metric *metrics;
    int n_metrics;
    bool finished;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static tm_progress *progress_new(const char *fn, const char *desc, int64_t total,
                                 const char *unit, tm_progress_mode mode)
{
    if (total < 0) {
        tm__errf(TM_EINVAL, fn, "total %lld is negative", (long long)total);
        return NULL;
    }
    if (mode < TM_PROGRESS_AUTO || mode > TM_PROGRESS_SILENT) {
        tm__errf(TM_EINVAL, fn, "mode %d is not a tm_progress_mode", (int)mode);
        return NULL;
    }
    tm_progress *p = calloc(1, sizeof *p);
    if (!p) goto nomem;
    p->desc = dup_str(desc ? desc : "");
    p->unit = dup_str(unit ? unit : "it");
    if (!p->desc || !p->unit) goto nomem;
    p->total = total;
    p->mode = mode;
    p->rate = -1;
    p->t0 = p->t_last = now_s();
    return p;
nomem:
    tm__errf(TM_ENOMEM, fn, "no memory for a progress bar");
    if (p) {
        free(p->desc);
        free(p->unit);
        free(p);
    }
    return NULL;
}

static void set_default_interval(tm_progress *p)
{
    p->interval = p->mode == TM_PROGRESS_BAR ? 0.1 : 10.0;
}

tm_progress *tm_progress_new(const char *desc, int64_t total, const char *unit,
                             tm_progress_mode mode, FILE *out)
{
    tm_progress *p = progress_new(__func__, desc, total, unit, mode);
    if (!p) return NULL;
    p->out = out ? out : stderr;
    if (p->mode == TM_PROGRESS_AUTO)
        p->mode = isatty(fileno(p->out)) ? TM_PROGRESS_BAR : TM_PROGRESS_PLAIN;
    set_default_interval(p);
    return p;
}

tm_progress *tm_progress_new_writer(const char *desc, int64_t total,
                                    const char *unit, tm_progress_mode mode,
                                    void (*write)(const char *s, size_t n,
                                                  void *user),
                                    void *user)
{
    if (!write) {
        TM_ERR(TM_EINVAL, "write is NULL");
        return NULL;
    }
    tm_progress *p = progress_new(__func__, desc, total, unit, mode);
    if (!p) return NULL;
    p->write = write;
    p->user = user;
    if (p->mode == TM_PROGRESS_AUTO) p->mode = TM_PROGRESS_PLAIN;
    set_default_interval(p);
    return p;
}

void tm_progress_set_total(tm_progress *p, int64_t total)
{
    if (p && total >= 0) p->total = total;
}

void tm_progress_set_interval(tm_progress *p, double seconds)
{
    if (p && seconds >= 0) p->interval = seconds;
}

/* ------------------------------------------------------------ formatting */

/* Appends printf output to buf[cap] at *len (silently cut at cap). */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0) *len += (size_t)k < cap - *len ? (size_t)k : cap - 1 - *len;
}

static void put_time(char *buf, size_t cap, size_t *len, double s)
{
    if (!(s >= 0) || s > 359999) {
        put(buf, cap, len, "?");
        return;
    }
    long t = (long)s;
    if (t >= 3600) put(buf, cap, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else put(buf, cap, len, "%02ld:%02ld", t / 60, t % 60);
}

/* 37.2, 12.3k, 4.56M: rates span many decades. */
static void put_si(char *buf, size_t cap, size_t *len, double v)
{
    static const char suffix[] = " kMGTP";
    int k = 0;
    while (fabs(v) >= 999.95 && k < 5) v /= 1000, k++;
    if (k) put(buf, cap, len, "%.*f%c", fabs(v) < 9.995 ? 2 : fabs(v) < 99.95 ? 1 : 0, v, suffix[k]);
    else put(buf, cap, len, "%.*f", fabs(v) < 9.995 ? 2 : 1, v);
}

/* The bar cells: full blocks, one partial block (eighths), spaces. */
static void put_bar(char *buf, size_t cap, size_t *len, double frac)
{
    static const char *const part[8] = {"", "\u258F", "\u258E", "\u258D",
                                        "\u258C", "\u258B", "\u258A", "\u2589"};
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    int eighths = (int)(frac * BAR_CELLS * 8);
    int full = eighths / 8, rest = eighths % 8, cells = 0;
    put(buf, cap, len, "|");
    for (; cells < full; cells++) put(buf, cap, len, "\u2588");
    if (cells < BAR_CELLS && rest) put(buf, cap, len, "%s", part[rest]), cells++;
    for (; cells < BAR_CELLS; cells++) put(buf, cap, len, " ");
    put(buf, cap, len, "|");
}

/* The line for the current state (no newline or carriage return). */
static size_t format_line(const tm_progress *p, double t, bool final,
                          bool bar, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    double elapsed = t - p->t0;
    double rate = final ? (elapsed > 0 ? (double)p->n / elapsed : -1) : p->rate;
    if (*p->desc) put(buf, cap, &len, "%s ", p->desc);
    if (p->total > 0) {
        double frac = (double)p->n / (double)p->total;
        put(buf, cap, &len, "%3.0f%%", floor(100 * frac));
        if (bar) put_bar(buf, cap, &len, frac);
        put(buf, cap, &len, " %lld/%lld [", (long long)p->n, (long long)p->total);
        put_time(buf, cap, &len, elapsed);
        put(buf, cap, &len, "<");
        put_time(buf, cap, &len, rate > 0 ? (double)(p->total - p->n) / rate : -1);
    } else {
        put(buf, cap, &len, "%lld%s [", (long long)p->n, p->unit);
        put_time(buf, cap, &len, elapsed);
    }
    put(buf, cap, &len, ", ");
    if (rate >= 0) put_si(buf, cap, &len, rate);
    else put(buf, cap, &len, "?");
    put(buf, cap, &len, " %s/s", p->unit);
    for (int i = 0; i < p->n_metrics; i++)
        put(buf, cap, &len, ", %s=%.4g", p->metrics[i].name, p->metrics[i].value);
    put(buf, cap, &len, "]");
    return len;
}

/* Visible width in terminal cells: UTF-8 continuation bytes take none. */
static size_t cells_of(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static void emit(tm_progress *p, const char *s, size_t n)
{
    if (p->write) {
        p->write(s, n, p->user);
    } else {
        fwrite(s, 1, n, p->out);
        fflush(p->out);
    }
}

static void draw(tm_progress *p, double t, bool final)
{
    char line[1024];
    char out[1100];
    bool bar = p->mode == TM_PROGRESS_BAR;
    size_t len = format_line(p, t, final, bar, line, sizeof line);
    size_t o = 0;
    if (bar) {
        /* overwrite in place; pad with spaces when the line got shorter */
        size_t cells = cells_of(line, len), pad = 0;
        if (cells < p->last_len) pad = p->last_len - cells;
        p->last_len = cells;
        put(out, sizeof out, &o, "\r%s%*s%s", line, (int)pad, "", final ? "\n" : "");
    } else {
        put(out, sizeof out, &o, "%s\n", line);
    }
    emit(p, out, o);
}

/* Updates the smoothed rate from the count since the last redraw. */
static void sample_rate(tm_progress *p, double t)
{
    double dt = t - p->t_last;
    if (dt <= 0) return;
    double r = (double)(p->n - p->n_last) / dt;
    p->rate = p->rate < 0 ? r : SMOOTHING * r + (1 - SMOOTHING) * p->rate;
    p->t_last = t;
    p->n_last = p->n;
}

void tm_progress_update(tm_progress *p, int64_t n)
{
    if (!p) return;
    p->n += n;
    if (p->finished || p->mode == TM_PROGRESS_SILENT) return;
    double t = now_s();
    if (t - p->t_last < p->interval) return;
    sample_rate(p, t);
    draw(p, t, false);
}

void tm_progress_set_metric(tm_progress *p, const char *name, double value)
{
    if (!p || !name) return;
    for (int i = 0; i < p->n_metrics; i++)
        if (!strcmp(p->metrics[i].name, name)) {
            p->metrics[i].value = value;
            return;
        }
    metric *m = realloc(p->metrics, sizeof *m * (size_t)(p->n_metrics + 1));
    if (!m) return;   /* the display loses a field; the run goes on */
    p->metrics = m;
    char *d = dup_str(name);
    if (!d) return;
    m[p->n_metrics].name = d;
    m[p->n_metrics].value = value;
    p->n_metrics++;
}

int64_t tm_progress_count(const tm_progress *p)
{
    return p ? p->n : 0;
}

void tm_progress_finish(tm_progress *p)
{
    if (!p || p->finished) return;
    p->finished = true;
    if (p->mode == TM_PROGRESS_SILENT) return;
    draw(p, now_s(), true);
}

void tm_progress_free(tm_progress *p)
{
    if (!p) return;
    tm_progress_finish(p);
    for (int i = 0; i < p->n_metrics; i++) free(p->metrics[i].name);
    free(p->metrics);
    free(p->desc);
    free(p->unit);
    free(p);
}

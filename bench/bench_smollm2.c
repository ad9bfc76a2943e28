/*
 * bench_smollm2.c — SmolLM2-135M prompt processing and generation speed
 * through the C API (bench/bench_smollm2.py runs it beside llama.cpp).
 *
 *   bench_smollm2 [--model FILE.gguf] [--threads N] [--pp 512,128]
 *                 [--gen 128] [--reps 3] [--mode pp|gen|both]
 *
 * Without --model the model is SmolLM2-135M's shape with random weights quantized as the registry
 * file is: Q4_1 linears, a Q8_0 tied embedding / output head, F32 norms,
 * interleaved RoPE.  The speed does not depend on the values.
 *
 * Prompt processing: one cached forward of P tokens with logits for the
 * last position only (what llama.cpp's eval of a prompt computes), into a
 * fresh cache each repetition.  Generation: tm_gpt_generate, greedy, from
 * a 4-token prompt; tokens/s over the tokens after the first (the first
 * token's time is the prompt's).  One JSON object per line on stdout;
 * the median of the repetitions and every repetition.
 */
#include <foundry.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* This process's CPU time (every thread): under a loaded machine the wall
 * clock measures the other loads too; at one thread CPU time is the work. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_smollm2: %s failed: %s\n", what, tm_last_error());
    exit(1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static tm_gpt *random_model(void)
{
    tm_gpt_config c;
    if (tm_gpt_preset("smollm2-135m", &c)) die("tm_gpt_preset");
    c.vocab_size = 49152;
    c.context = 2048;
    c.rope.interleaved = true;
    tm_rng rng = tm_rng_new(1);
    tm_gpt *m = tm_gpt_new(&c, &rng);
    if (!m) die("tm_gpt_new");
    static const tm_quant_rule rules[] = {{"*embed_tokens*", TM_Q8_0},
                                          {"lm_head*", TM_Q8_0}};
    tm_quant_plan plan = {.default_type = TM_Q4_1, .vector_type = TM_F32,
                          .rules = rules, .n_rules = 2,
                          .fallback_type = TM_Q8_0};
    if (tm_gpt_quantize(m, &plan, NULL, NULL)) die("tm_gpt_quantize");
    return m;
}

static double pp_once(tm_gpt *m, int64_t P, double *cpu)
{
    int64_t V = tm_gpt_config_of(m)->vocab_size;
    int64_t *ids = malloc((size_t)P * sizeof *ids);
    for (int64_t i = 0; i < P; i++) ids[i] = (i * 7919 + 13) % V;
    tm_tensor *t = tm_from_buffer(ids, (int64_t[]){1, P}, 2, TM_I64);
    tm_kv_cache *cache = tm_gpt_cache_new(m, 1, P, TM_F32);
    if (!t || !cache) die("pp setup");
    tm_gpt_fwd_opts fo = {.cache = cache, .last_only = true};
    double t0 = now(), c0 = cpu_now();
    tm_tensor *logits = tm_gpt_forward(m, t, &fo);
    double dt = now() - t0;
    *cpu = cpu_now() - c0;
    if (!logits) die("tm_gpt_forward");
    tm_free(logits);
    tm_kv_cache_free(cache);
    tm_free(t);
    free(ids);
    return dt;
}

typedef struct { double t_first, t_last, c_first, c_last; int64_t n; } gen_clock;

static bool on_token(int64_t tok, void *user)
{
    (void)tok;
    gen_clock *g = user;
    double t = now(), c = cpu_now();
    if (g->n++ == 0) {
        g->t_first = t;
        g->c_first = c;
    }
    g->t_last = t;
    g->c_last = c;
    return true;
}

/* Tokens/s after the first token; *ttft the prompt's time. */
static double gen_once(tm_gpt *m, int64_t n_new, double *ttft, double *cpu)
{
    int64_t prompt[4] = {1, 504, 3458, 314};
    int64_t *out = malloc((size_t)n_new * sizeof *out), n_out = 0;
    gen_clock g = {0};
    tm_generate_opts o = tm_generate_defaults();
    o.max_new_tokens = n_new;
    o.sample.temperature = 0;
    o.on_token = on_token;
    o.user = &g;
    double t0 = now();
    if (tm_gpt_generate(m, prompt, 4, &o, out, &n_out)) die("tm_gpt_generate");
    free(out);
    *ttft = g.t_first - t0;
    *cpu = (g.c_last - g.c_first) / (double)(g.n - 1);
    return (double)(g.n - 1) / (g.t_last - g.t_first);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *mode = "both";
    int threads = 2, reps = 3;
    int64_t pps[8] = {512, 128}, n_pp = 2, n_gen = 128;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) model = argv[++i];
        else if (!strcmp(a, "--threads") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "--reps") && v) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--gen") && v) n_gen = atoll(argv[++i]);
        else if (!strcmp(a, "--mode") && v) mode = argv[++i];
        else if (!strcmp(a, "--pp") && v) {
            n_pp = 0;
            for (char *s = argv[++i]; *s && n_pp < 8;) {
                pps[n_pp++] = strtoll(s, &s, 10);
                if (*s == ',') s++;
            }
        } else {
            fprintf(stderr, "usage: bench_smollm2 [--model F.gguf] [--threads N] "
                            "[--pp 512,128] [--gen 128] [--reps 3] [--mode pp|gen|both]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64) reps = 3;
    tm_set_num_threads(threads);
    tm_set_grad_enabled(false);
    double t0 = now();
    tm_gpt *m;
    if (model) {
        m = tm_model_load_gguf(model);
        if (!m) die("tm_model_load_gguf");
    } else {
        m = random_model();
    }
    tm_gpt_set_training(m, false);
    printf("{\"what\": \"load\", \"model\": \"%s\", \"threads\": %d, \"s\": %.4f}\n",
           model ? model : "random", threads, now() - t0);
    double v[64], cpu[64];
    bool do_pp = strcmp(mode, "gen") != 0, do_gen = strcmp(mode, "pp") != 0;
    for (int64_t k = 0; do_pp && k < n_pp; k++) {
        pp_once(m, pps[k], &cpu[0]); /* warm-up */
        for (int r = 0; r < reps; r++) {
            v[r] = (double)pps[k] / pp_once(m, pps[k], &cpu[r]);
            cpu[r] /= (double)pps[k];
        }
        printf("{\"what\": \"pp\", \"tokens\": %lld, \"tok_s\": %.3f, "
               "\"cpu_ms_per_tok\": %.4f, \"reps\": [",
               (long long)pps[k], median(v, reps), 1e3 * median(cpu, reps));
        for (int r = 0; r < reps; r++) printf("%s%.3f", r ? ", " : "", v[r]);
        printf("]}\n");
        fflush(stdout);
    }
    if (do_gen) {
        double ttft, tt[64];
        gen_once(m, 8, &ttft, &cpu[0]); /* warm-up */
        for (int r = 0; r < reps; r++) v[r] = gen_once(m, n_gen, &tt[r], &cpu[r]);
        printf("{\"what\": \"gen\", \"tokens\": %lld, \"tok_s\": %.3f, \"ttft_s\": %.5f, "
               "\"cpu_ms_per_tok\": %.4f, \"reps\": [", (long long)n_gen, median(v, reps),
               median(tt, reps), 1e3 * median(cpu, reps));
        for (int r = 0; r < reps; r++) printf("%s%.3f", r ? ", " : "", v[r]);
        printf("]}\n");
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"what\": \"rss\", \"peak_rss_mb\": %.1f}\n", (double)ru.ru_maxrss / 1024.0);
    tm_gpt_free(m);
    return 0;
}

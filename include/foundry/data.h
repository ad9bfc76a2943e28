/*
 * foundry/data.h — token datasets, progress bars, metrics and plots: the
 * plumbing of a language-model training run.
 *
 * Token datasets are files of tokenized documents (format in docs/data.md:
 * magic "FTOKDS\0\0", version 1, uint16 or uint32 tokens, the tokenizer's
 * hash in the header).  The reader validates the whole file at open, so a
 * dataset that opens is consistent.  A loader samples random (B, T+1)
 * windows from a counter-based generator, so batch k of a seed is always
 * the same and resuming needs only the batch counter.
 *
 * Failures follow foundry/base.h: NULL or a negative tm_status, with
 * tm_last_error() naming the function and the problem.  Nothing here is
 * thread-safe for one object; different objects may be used from different
 * threads.  Inputs are borrowed unless stated.
 */
#ifndef FOUNDRY_DATA_H
#define FOUNDRY_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by foundry/tokenizer.h; only passed through here. */
typedef struct tm_tokenizer tm_tokenizer;

/* ---------------------------------------------------------------- progress
 *
 * TTY:      desc  45%|████▌     | 450/1000 [00:12<00:14, 37.2 tok/s, loss=2.31]
 *           redrawn in place at most every interval (0.1 s by default).
 * no TTY:   the same text without the bar, one line every interval (10 s by
 *           default), plus the final line.
 * The rate is smoothed (exponential average over redraws); the ETA is the
 * remaining count over it.  The final line shows the overall mean rate.
 */
typedef enum tm_progress_mode {
    TM_PROGRESS_AUTO = 0,   /* BAR when out is a TTY, else PLAIN */
    TM_PROGRESS_BAR = 1,
    TM_PROGRESS_PLAIN = 2,
    TM_PROGRESS_SILENT = 3  /* prints nothing */
} tm_progress_mode;
typedef struct tm_progress tm_progress;
/* total 0: unknown (no percent, bar or ETA).  unit: "tok", "step", "B" ...
 * (NULL: "it").  desc may be NULL.  out NULL: stderr.  desc and unit are
 * copied.  NULL on bad arguments (negative total, mode out of range) or no
 * memory.  Release with tm_progress_free. */
tm_progress *tm_progress_new(const char *desc, int64_t total, const char *unit,
                             tm_progress_mode mode, FILE *out);
/* The same, writing each finished piece of text through write(s, n, user)
 * instead of a FILE (the Python package's file= uses it).  AUTO means
 * PLAIN here: there is no terminal to ask. */
tm_progress *tm_progress_new_writer(const char *desc, int64_t total,
                                    const char *unit, tm_progress_mode mode,
                                    void (*write)(const char *s, size_t n,
                                                  void *user),
                                    void *user);
/* Sets the total (0: unknown), e.g. once a walk has counted the bytes. */
void tm_progress_set_total(tm_progress *p, int64_t total);
/* Minimum seconds between two redraws (bars) or lines (plain); 0 prints on
 * every update.  Negative or NaN values are ignored. */
void tm_progress_set_interval(tm_progress *p, double seconds);
/* Advances by n (may be 0 or negative: a correction); prints when due. */
void tm_progress_update(tm_progress *p, int64_t n);
/* Shown live after the rate: "name=value" (%.4g), in the order first set;
 * setting a name again replaces its value.  name is copied; NULL ignored. */
void tm_progress_set_metric(tm_progress *p, const char *name, double value);
/* The count so far. */
int64_t tm_progress_count(const tm_progress *p);
/* Prints the final line (bars: redrawn, then a newline); idempotent.  Later
 * updates change the count but print nothing. */
void tm_progress_finish(tm_progress *p);
/* Finishes if needed and frees (NULL is a no-op). */
void tm_progress_free(tm_progress *p);

/* ---------------------------------------------------------- token datasets */

/* Named tm_token_split because tm_split is the tensor op (foundry/ops.h). */
typedef enum tm_token_split { TM_SPLIT_ALL = 0, TM_SPLIT_TRAIN = 1, TM_SPLIT_VAL = 2 } tm_token_split;
typedef struct tm_token_dataset tm_token_dataset;

/* The format's version this build writes and reads. */
#define TM_TOKEN_DATASET_VERSION 1

/* Lower level: a writer taking one document at a time.  It writes
 * `path`.tmp and renames it to `path` at close, so a half-written dataset
 * never carries the final name.  vocab_size in [1, 2^32]; the token width
 * is 2 bytes when vocab_size <= 65536, else 4. */
typedef struct tm_token_writer tm_token_writer;
tm_token_writer *tm_token_writer_new_raw(const char *path, int64_t vocab_size,
                                         uint64_t tokenizer_hash);
/* One document of n tokens (each in [0, vocab_size)), made from text_bytes
 * bytes of source text (kept for bits-per-byte).  n may be 0. */
tm_status tm_token_writer_add_tokens(tm_token_writer *w, const int32_t *ids,
                                     int64_t n, int64_t text_bytes);
/* Writes the header, renames into place and frees w, also on failure (then
 * nothing is left under path or path.tmp).  An error from an earlier add
 * makes close fail too. */
tm_status tm_token_writer_close(tm_token_writer *w);
/* Frees w without writing anything (removes path.tmp).  NULL is a no-op. */
void tm_token_writer_abort(tm_token_writer *w);

/* ---- from text (the tokenizer's encode; foundry/tokenizer.h) ---- */
/* Writes a dataset: each input file, and each regular file under an input
 * directory (walked recursively, sorted bytewise at every level; names
 * starting with '.' and symbolic links inside directories skipped; only
 * names ending in `suffix` when it is not NULL, e.g. ".py"; an existing
 * file at out_path is skipped), is one
 * document, encoded with tok, with the tokenizer's eos id (if any) after
 * each document.  progress (may be NULL) advances by the bytes of each
 * file; its total is set to the bytes of all files. */
tm_status tm_token_dataset_write(const char *out_path, const char *const *inputs, int n_inputs,
                                 const char *suffix, const tm_tokenizer *tok, tm_progress *progress);
/* A writer encoding with tok (borrowed: it must outlive the writer); the
 * header takes tok's vocab size and hash. */
tm_token_writer *tm_token_writer_new(const char *path, const tm_tokenizer *tok);
/* One document: text[len] encoded, then the eos id when tok has one. */
tm_status tm_token_writer_add(tm_token_writer *w, const char *text, size_t len);
/* TM_EINVAL "...: tokenizer hash mismatch: dataset 0x.. tokenizer 0x.."
 * when tok is not the tokenizer the dataset was written with (or its vocab
 * size differs). */
tm_status tm_token_dataset_check_tokenizer(const tm_token_dataset *ds, const tm_tokenizer *tok);

/* Opens (maps read-only) and validates: magic, version, token width, header
 * checksum, sizes against the file size (overflow-checked), offsets
 * monotonic from 0 to n_tokens, byte counts summing to n_bytes, every
 * token < vocab.  The val fraction starts at 0.1.  Close with
 * tm_token_dataset_close. */
tm_token_dataset *tm_token_dataset_open(const char *path);
/* The same from memory (copied: data may be freed on return). */
tm_token_dataset *tm_token_dataset_open_memory(const void *data, size_t size);
void tm_token_dataset_close(tm_token_dataset *ds);   /* NULL is a no-op */
/* Per split (as the val fraction currently splits the documents); -1 with
 * an error for a bad split. */
int64_t tm_token_dataset_tokens(const tm_token_dataset *ds, tm_token_split split);
int64_t tm_token_dataset_bytes(const tm_token_dataset *ds, tm_token_split split); /* source text bytes */
int64_t tm_token_dataset_docs(const tm_token_dataset *ds, tm_token_split split);
int64_t tm_token_dataset_vocab_size(const tm_token_dataset *ds);
uint64_t tm_token_dataset_tokenizer_hash(const tm_token_dataset *ds);
/* Split by document: document i is in val when u(i) < val_fraction, where
 * u(i) = (splitmix64(i) >> 11) * 2^-53.  val_fraction in [0, 1); 0 leaves
 * val empty.  Otherwise, with >= 2 documents each split gets at least one:
 * an empty val takes the document of smallest u, an empty train the one
 * of largest u.  Loaders made before a change keep reading the old split. */
tm_status tm_token_dataset_set_val_fraction(tm_token_dataset *ds, double val_fraction);
double tm_token_dataset_val_fraction(const tm_token_dataset *ds);
/* Copies tokens [start, start+n) of the split (its documents concatenated
 * in order) into out[n] (host memory).  TM_ERANGE outside the split. */
tm_status tm_token_dataset_read(const tm_token_dataset *ds, tm_token_split split,
                                int64_t start, int64_t n, int64_t *out);
/* Nats per token of the split `eval` under the unigram distribution of the
 * split `fit` with add-one smoothing: p(t) = (count(t) + 1) / (N + V).
 * NaN with an error when `eval` is empty or a split is bad. */
double tm_token_dataset_unigram_loss(const tm_token_dataset *ds, tm_token_split fit, tm_token_split eval);

typedef struct tm_token_loader tm_token_loader;
/* Random (batch, T+1) windows of a split, start positions uniform over the
 * split's concatenated documents (so windows never straddle splits), drawn
 * from Philox keyed by (seed, batch index): batch k of seed s is always the
 * same.  The split must hold at least T+1 tokens.  ds must outlive the
 * loader.  Release with tm_token_loader_free. */
tm_token_loader *tm_token_loader_new(const tm_token_dataset *ds, tm_token_split split,
                                     int64_t batch, int64_t T, uint64_t seed);
/* *x, *y: new [batch, T] I64 CPU tensors, y = x shifted by one (release
 * both with tm_free).  Untouched on failure. */
tm_status tm_token_loader_next(tm_token_loader *l, tm_tensor **x, tm_tensor **y);
int64_t tm_token_loader_position(const tm_token_loader *l);          /* batches drawn so far */
tm_status tm_token_loader_seek(tm_token_loader *l, int64_t batches);  /* next batch is `batches` */
void tm_token_loader_free(tm_token_loader *l);                      /* NULL is a no-op */

/* ------------------------------------------------------- metrics and plots */

typedef struct tm_metrics tm_metrics;
/* JSON lines: {"step": 10, "train_loss": 2.5, "lr": 0.001} one object per
 * log call, flushed at once (a plot may read the file during training).
 * append=false truncates.  Close with tm_metrics_close. */
tm_metrics *tm_metrics_open(const char *path, bool append);
/* Numbers as %.17g (they round-trip); NaN and infinities as null.  keys:
 * n non-NULL UTF-8 strings other than "step", JSON-escaped. */
tm_status tm_metrics_log(tm_metrics *m, int64_t step, int n, const char *const *keys,
                         const double *values);
/* Closes and frees (NULL: TM_OK); reports a failed write. */
tm_status tm_metrics_close(tm_metrics *m);
/* Reads a metrics file and draws train_loss and val_loss against step (and
 * lr in a second panel when present) as a standalone SVG: axes, ticks at
 * 1-2-5 numbers, legend, title (NULL: none).  Lines whose keys are other
 * names are ignored; an incomplete last line (a run still writing) is
 * skipped; any other malformed line is TM_EFORMAT naming the line.  The
 * SVG is written to svg_path.tmp and renamed into place. */
tm_status tm_plot_metrics_svg(const char *metrics_path, const char *svg_path, const char *title);

#ifdef __cplusplus
}
#endif

#endif

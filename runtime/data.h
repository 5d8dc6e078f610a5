/* data — the token samples a training step reads: synthetic by default, or an llm.c token
 * file. A sample is seq+1 consecutive tokens (inputs and next-token targets) and is a pure
 * function of its global index, so which samples a step uses never depends on the layout:
 * step s reads global samples s*gbs .. s*gbs+gbs-1, dp rank d the slice d*(gbs/dp) .. of it.
 *
 * Synthetic tokens are a pure function of (seed, sample, position): each sample is an
 * arithmetic progression mod vocab (start, and a stride of 1 to 4, drawn from the sample's
 * hash) with one token in 8 replaced by noise, so a model can learn it and the loss falls.
 *
 * Token file (llm.c's format): a header of 256 little-endian int32 — [0] magic 20240520,
 * [1] version 1, [2] token count N — then N little-endian uint16 tokens. Sample i is the
 * window starting at token (i mod W)*seq, W = (N-1)/seq windows. Every token must be below the
 * model's vocabulary.
 *
 * Ownership: data_open_* return a struct data that data_close frees (NULL accepted); the
 * whole token file is read at open. Units: tokens. */
#ifndef SCALEPLAN_DATA_H
#define SCALEPLAN_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DATA_MAGIC 20240520
#define DATA_VERSION 1
#define DATA_HEADER_INTS 256

struct data;

int data_open_synthetic(int vocab, uint64_t seed, struct data **out, char *err);
/* Reads and checks the whole file: magic, version, count, size, tokens < vocab, and enough
 * tokens for one sample of seq. Errors name the file and the rule. */
int data_open_file(const char *path, int vocab, int seq, struct data **out, char *err);
void data_close(struct data *d);

/* What the samples are, for a checkpoint to compare: "synthetic" (the seed is compared on its
 * own) or "token file: N tokens, FNV-1a H" (H over the tokens as read, so a moved or renamed
 * file is the same data and an edited one is not). */
void data_identity(const struct data *d, char *buf, size_t cap);

/* Sample `index`: tokens[0..seq) and targets[0..seq) (targets[t] = token t+1). */
void data_sample(const struct data *d, uint64_t index, int seq, int *tokens, int *targets);

/* Writes a token file (for tests and tools): 0 or -1 with err. */
int data_write_file(const char *path, const uint16_t *tokens, size_t n, char *err);

#endif

/* tiny — Llama-style model configs built in C for tests and benchmarks (no profile file
 * needed), and the fixed pseudo-random token batches the model tests train on. Static inline
 * functions returning values: nothing to own or free. Sizes are element counts; the tiny
 * configs are small enough for a single-rank reference on every rank of a multi-rank test. */
#ifndef SCALEPLAN_TESTS_TINY_H
#define SCALEPLAN_TESTS_TINY_H

#include <stdio.h>
#include <string.h>
#include "sim/model.h"

/* A dense, untied Llama-style model: RMSNorm, SwiGLU, RoPE theta 10000, norm eps 1e-5. */
static inline struct model llama_shape(const char *name, int layers, int hidden, int ffn_hidden, int heads,
                                       int kv_heads, int head_dim, int vocab)
{
	struct model c;
	memset(&c, 0, sizeof c);
	snprintf(c.name, sizeof c.name, "%s", name);
	c.layers = layers;
	c.hidden = hidden;
	c.ffn_hidden = ffn_hidden;
	c.heads = heads;
	c.kv_heads = kv_heads;
	c.head_dim = head_dim;
	c.vocab = vocab;
	c.norm = NORM_RMS;
	c.mlp = MLP_SWIGLU;
	c.rope_theta = 10000.0;
	c.norm_eps = 1e-5;
	return c;
}

/* The tiny dense model: 4 layers, hidden 64, SwiGLU 128, 4 heads of 16, vocab 256. */
static inline struct model tiny_dense(const char *name, int kv_heads)
{
	return llama_shape(name, 4, 64, 128, 4, kv_heads, 16, 256);
}

/* The tiny MoE model: the dense one with 4 experts (top-2, expert width 32), one shared
 * expert, the first layer dense, tied embeddings. */
static inline struct model tiny_moe(const char *name, int kv_heads)
{
	struct model c = tiny_dense(name, kv_heads);
	c.moe_experts = 4;
	c.moe_topk = 2;
	c.moe_ffn_hidden = 32;
	c.moe_shared_experts = 1;
	c.moe_dense_layers = 1;
	c.tied = 1;
	return c;
}

/* B*T = n tokens below 256 from a linear congruential sequence started at seed, targets the
 * next token of the same sequence (wrapping to its first token), and tgt[ignored] = -1. */
static inline void tiny_batch(int *tok, int *tgt, int n, int T, unsigned seed, int ignored)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		tok[i] = (int)((seed >> 8) % 256);
	}
	for (int i = 0; i < n; i++) tgt[i] = (i % T == T - 1) ? tok[i - T + 1] : tok[i + 1];
	tgt[ignored] = -1;
}

#endif

/* memory — closed-form memory formulas the estimator is built from, exposed so tests can check
 * them against published numbers. Bytes. */
#ifndef SCALEPLAN_MEMORY_H
#define SCALEPLAN_MEMORY_H

/* Model-state bytes per GPU for `params` parameters under ZeRO stage `zero` over `nd` ranks,
 * with weight/gradient/optimizer bytes per parameter wb, gb, ob (mixed-precision Adam: 2, 2, 12)
 * [ZERO §5, Table I]. */
double model_state_bytes(double params, int zero, double nd, double wb, double gb, double ob);

/* Activation bytes of one GPT transformer layer (MHA, 4h GeLU MLP, LayerNorm, dropout, 16-bit
 * tensors with 1-byte masks, materialised attention scores) per GPU [KOR §4, Table 2]:
 * s sequence, b micro-batch, h hidden, a heads, t TP degree, sp sequence parallel,
 * rc 0 none / 1 selective / 2 full. */
double gpt_layer_act_bytes(double s, double b, double h, double a, double t, int sp, int rc);

/* Megatron's interleaved-schedule activation factor 1 + (p−1)/(p·v) [KOR §4.2.3, MCODE-mem]. */
double interleave_act_factor(int p, int v);

#endif

/* cp — context parallelism: the sequence of every sequence in the micro-batch is split over
 * the ranks of the CP group, and causal attention runs as ring attention (Liu et al. 2023):
 * each rank keeps its query rows, the key/value rows travel round the ring, one block per
 * step, and the partial outputs merge by the log-sum-exp rule (kernels/cpu.h, blockwise
 * attention). Everything outside attention is row-wise and needs no communication.
 *
 * Split (Megatron-LM CP, Llama 3 §3.3.2; model.md §4.9): the T positions are cut into 2·cp
 * chunks of T/(2·cp) and rank r holds chunks r and 2·cp−1−r, in that order, so every rank
 * does the same causal work. Its local rows are (B, Tl) with Tl = T/cp; row i of a sequence
 * is at global position cp_positions()[i], which is what RoPE and the causal mask use.
 *
 * Attention runs through a backend instance k (kernels/backend.h): out, qkv, dout, dqkv and
 * the K/V blocks in the scratch are activations of k's row (they travel as COMM_BF16 on a
 * 2-byte row, COMM_F32 on a 4-byte one, runtime/tp.h's tp_act_dtype), lse is fp32; every ring
 * shift first waits for the kernels issued before it (kern_sync). The zig-zag shards of
 * tokens and rows below are host arrays.
 *
 * Ownership: the caller owns every buffer, including the scratch of
 * cp_attention_scratch_floats() floats of k's memory; nothing here allocates. The
 * communicator and the instance are borrowed. Units: element counts. Errors return -1 with a
 * message naming the field.
 *
 * Invariant a reader could not guess: the backward sends two messages per step to the same
 * neighbour (the next K/V block, then the dK/dV partial sums), and the ring relies on MPI's
 * in-order matching of messages between one pair of ranks; every rank therefore issues the
 * same sequence of ring operations, and every member of the group must call together. */
#ifndef SCALEPLAN_RUNTIME_CP_H
#define SCALEPLAN_RUNTIME_CP_H

#include <stddef.h>
#include "kernels/backend.h"
#include "runtime/comm.h"

/* pos[i] = global position of local row i (i < T/cp) on `rank` of a group of `cp`. */
int cp_positions(int *pos /* (T/cp) */, int T, int cp, int rank, char *err);
/* The rank's rows of a (B, T) array: tokens or targets (int), or rows of `width` floats. */
int cp_shard_tokens(int *dst /* (B, T/cp) */, const int *src /* (B, T) */, int B, int T, int cp,
                    int rank, char *err);
int cp_shard_rows(float *dst /* (B, T/cp, width) */, const float *src /* (B, T, width) */, int B,
                  int T, int width, int cp, int rank, char *err);

/* Scratch of either pass, in floats (enough for any row, activations being at most 4 bytes):
 * the block kernel's plus five K/V-sized buffers (B·Tl·2·Hkv·d elements):
 * two for the block in use and the one arriving, three for the dK/dV sums being computed,
 * in flight and arriving. */
size_t cp_attention_scratch_floats(int B, int Tl, int H, int Hkv, int d);

/* Causal GQA attention of the rank's Tl = T/cp rows against the whole sequence, with
 * exactly the layouts of attention_forward for Tl rows: qkv already rotated at global
 * positions; out and lse (log-sum-exp of the rows' scores) overwritten. The transfer of the
 * next K/V block overlaps the attention of the current one. */
int cp_attention_forward(struct comm *cp, struct kern *k, float *out /* (B, Tl, H*d) */, float *lse /* (B, H, Tl) */,
                         const float *qkv /* (B, Tl, (H + 2*Hkv)*d) */, float *scratch,
                         int B, int Tl, int H, int Hkv, int d, char *err);
/* The matching backward (layouts of attention_backward; dqkv overwritten): K/V blocks take
 * the forward's route again and each block's dK/dV partial sums follow it one step behind,
 * arriving complete at the block's owner after the last step. out and lse are the forward's. */
int cp_attention_backward(struct comm *cp, struct kern *k, float *dqkv /* (B, Tl, (H + 2*Hkv)*d) */,
                          const float *dout /* (B, Tl, H*d) */, const float *qkv,
                          const float *out /* (B, Tl, H*d) */, const float *lse /* (B, H, Tl) */,
                          float *scratch, int B, int Tl, int H, int Hkv, int d, char *err);

#endif

#!/usr/bin/env bash
# `scaleplan run` input handling under mpirun, on the tiny config: --data token files (np 1
# and dp 2 agree on a good one; missing, truncated, foreign, wrong-version and
# out-of-vocabulary files give one message per rank and status 2) and bad input (world size,
# unknown or unbuildable model, unsupported degree, bad flag values): one message from rank 0,
# status 2, never a crash.
. "$(dirname "$0")/lib.sh"
run_setup
TINY="--model tiny --seq 16 --gbs 8 --mbs 2"

# --- data files --------------------------------------------------------------------------------------
# header: 256 int32 (magic 20240520, version 1, count), then uint16 tokens
tokens() { perl -e '($n,$v)=@ARGV; print pack("l<256", 20240520, $v, $n, (0) x 253); print pack("S<*", map { ($_*7+3) % 256 } 0..$n-1)' "$@"; }
tokens 1000 1 >"$TMP/good.bin"
expect_rc 0 $MPI -np 1 "$SP" run $TINY --steps 2 --json
cp "$TMP/out" "$TMP/l1"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 2 --json --data "$TMP/good.bin"
cp "$TMP/out" "$TMP/d2"
expect_rc 0 $MPI -np 1 "$SP" run $TINY --steps 2 --json --data "$TMP/good.bin"
close_losses "$TMP/out" "$TMP/d2" 2 && ok || bad "--data: np 1 and dp 2 disagree"
cmp -s <(losses "$TMP/out") <(losses "$TMP/l1" | head -n 2) && bad "--data losses equal the synthetic ones" || ok
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --data "$TMP/missing.bin"
[ "$(grep -c 'data: cannot open .*missing.bin' "$TMP/err")" -eq 2 ] && ok || bad "missing data file, one message per rank: $(head -c 300 "$TMP/err")"
head -c 1500 "$TMP/good.bin" >"$TMP/short.bin"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --data "$TMP/short.bin"
no_leaks "a truncated data file"
grep -q 'short.bin is truncated: header says 1000 tokens, file holds 238' "$TMP/err" && ok || bad "truncated data: $(head -c 300 "$TMP/err")"
tokens 1000 2 >"$TMP/v2.bin"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --data "$TMP/v2.bin"
grep -q 'version 2, want 1' "$TMP/err" && ok || bad "bad version: $(head -c 300 "$TMP/err")"
head -c 3000 /dev/zero >"$TMP/zero.bin"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --data "$TMP/zero.bin"
grep -q 'is not a token file: magic 0' "$TMP/err" && ok || bad "bad magic: $(head -c 300 "$TMP/err")"
perl -e 'print pack("l<256", 20240520, 1, 40, (0) x 253); print pack("S<*", (300) x 40)' >"$TMP/big.bin"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --data "$TMP/big.bin"
grep -q "token 0 is 300, not below the model's vocab_size 256" "$TMP/err" && ok || bad "token >= vocab: $(head -c 300 "$TMP/err")"

# --- bad input: one message from rank 0, status 2 -------------------------------------------------
expect_rc 2 $MPI -np 2 "$SP" run $TINY --gpus 4
expect_msg 'plan needs 4 ranks \(--gpus 4\) but mpirun started 2'
expect_rc 2 $MPI -np 2 "$SP" run --model no-such-model --seq 16 --gbs 8 --mbs 2
expect_msg '^scaleplan run: .*no-such-model'
expect_rc 2 $MPI -np 2 "$SP" run --model llama-3-8b --seq 16 --gbs 8 --mbs 2
expect_msg 'model llama-3-8b needs [0-9.]+ GiB for 2 rank\(s\) on this host'
perl -e 'print "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 256, \"intermediate_size\": 128, \"layer_norm_epsilon\": 1e-5, \"model_type\": \"gpt2\", \"n_positions\": 64}"' >"$TMP/gpt.json"
expect_rc 2 $MPI -np 2 "$SP" run --model "$TMP/gpt.json" --seq 16 --gbs 8 --mbs 2
expect_msg 'gpt.json: the runtime supports RMSNorm only'
expect_rc 2 $MPI -np 2 "$SP" run $TINY --pp 2 --zero 3
expect_msg 'not yet supported by the runtime: zero 3 with pp 2'
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 0
expect_msg -- '--steps: 0 is out of range'
expect_rc 2 "$SP" run $TINY --recompute op
expect_msg 'not yet supported by the runtime: recompute op'
expect_rc 2 "$SP" run $TINY --recompute selective --recompute-modules core_attn,layernorm
expect_msg 'not yet supported by the runtime: recompute_modules beyond core_attn'
expect_rc 2 "$SP" run $TINY --bogus
expect_msg "unknown option '--bogus'"
expect_rc 0 "$SP" run --help
expect_out 'magic 20240520'

summary

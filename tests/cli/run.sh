#!/usr/bin/env bash
# `scaleplan run` end to end on the tiny config (hidden 64, 4 layers, 4 heads, 2 KV heads,
# vocab 256; seq 16, gbs 8, mbs 2) under mpirun:
#  - dp 2 with ZeRO 0, 1, 2, 3: the first 3 losses and the final weights match the np 1 run
#    within 1e-5 relative; a run one step short does not (the comparison can fail);
#  - the loss falls; same seed, same losses; another seed, other losses;
#  - resume from a checkpoint reproduces the uninterrupted run's losses bit for bit;
#  - --json lines, --trace events, --db rows; corrupt, truncated or foreign checkpoints and
#    databases are refused with a clear message (data files and other bad input: run_input.sh);
#  - a killed rank, or a stopped one (collective timeout), ends the job within 30 s.
. "$(dirname "$0")/lib.sh"
run_setup
TINY="--model tiny --seq 16 --gbs 8 --mbs 2"

# --- dp 2 with ZeRO 0-3 against np 1 ------------------------------------------------------------
expect_rc 0 $MPI -np 1 "$SP" run $TINY --steps 3 --json --dump-weights "$TMP/w1"
cp "$TMP/out" "$TMP/l1"
[ "$(grep -c '"step"' "$TMP/l1")" -eq 3 ] && ok || bad "np 1: 3 json lines expected: $(head -c 300 "$TMP/l1")"
for key in step loss step_time_s tokens_per_s peak_mem_bytes; do
	json_lines "$TMP/l1" | grep "\"$key\": [0-9]" >/dev/null && ok || bad "--json lacks $key"
done
for z in 0 1 2 3; do
	expect_rc 0 $MPI -np 2 "$SP" run $TINY --gpus 2 --zero $z --steps 3 --json --dump-weights "$TMP/w2.$z"
	cp "$TMP/out" "$TMP/l2.$z"
	no_leaks "zero $z"
	close_losses "$TMP/l1" "$TMP/l2.$z" 3 && ok || bad "zero $z: losses differ from np 1: $(losses "$TMP/l2.$z" | tr '\n' ' ') vs $(losses "$TMP/l1" | tr '\n' ' ')"
	close_weights "$TMP/w2.$z" "$TMP/w1" && ok || bad "zero $z: final weights differ from np 1 by more than 1e-5"
done
# the comparison can fail: weights after 2 steps are not those after 3
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 1 --steps 2 --dump-weights "$TMP/w2.short"
close_weights "$TMP/w2.short" "$TMP/w1" && bad "weights after 2 steps pass as those after 3" || ok

# it learns: 40 steps at lr 3e-3 take the loss well below ln(256) = 5.545 (uniform guessing)
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 40 --lr 3e-3 --json
losses "$TMP/out" | tail -n 1 | awk '{exit !($1 < 5.545 - 0.3)}' && ok || bad "loss after 40 steps: $(losses "$TMP/out" | tail -n 1)"

# --- determinism --------------------------------------------------------------------------------
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 3 --json --trace "$TMP/t3.json"
cmp -s <(losses "$TMP/out") <(losses "$TMP/l2.3") && ok || bad "same seed, different losses"
# ZeRO-3's trace: per micro-batch 6 unit gathers in forward (embedding, 4 layers, head) and 5 in
# backward (the head stays gathered from forward), 2 micro-batches, 3 steps, 2 ranks; one
# reduce-scatter wait per step and rank
json_events "$TMP/t3.json" >"$TMP/t3.ev"
[ "$(grep -c '"name": "allgather"' "$TMP/t3.ev")" -eq 132 ] && ok || bad "zero 3 trace: $(grep -c '"name": "allgather"' "$TMP/t3.ev") allgather events, want 132"
[ "$(grep -c '"name": "reduce_scatter"' "$TMP/t3.ev")" -eq 6 ] && ok || bad "zero 3 trace: reduce_scatter events"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 3 --json --seed 99
cmp -s <(losses "$TMP/out") <(losses "$TMP/l2.3") && bad "another seed, same losses" || ok

# --- checkpoints ----------------------------------------------------------------------------------
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --json
cp "$TMP/out" "$TMP/full"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 2 --save "$TMP/ck" --save-every 1
# saves at steps 1 and 2; the first is deleted once the second is committed
newest() { ls -d "$1"/save-* 2>/dev/null | sort | tail -n 1; }
[ "$(ls -A "$TMP/ck")" = "save-000002-step-00000002" ] && ok || bad "checkpoint directory holds $(ls -A "$TMP/ck" | tr '\n' ' ')"
CK=$(newest "$TMP/ck")
[ -f "$CK/rank-00000.ckpt" ] && [ -f "$CK/rank-00001.ckpt" ] && grep -q '^step 2$' "$CK/COMMIT" && ok || bad "no checkpoint files or COMMIT in $CK"
[ -z "$(ls -A "$CK" | grep '^\.')" ] && ok || bad "a temporary file was left in $CK: $(ls -A "$CK" | tr '\n' ' ')"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --json --resume "$TMP/ck"
[ "$(losses "$TMP/out" | tr '\n' ' ')" = "$(losses "$TMP/full" | tail -n 2 | tr '\n' ' ')" ] && ok ||
	bad "resumed losses $(losses "$TMP/out" | tr '\n' ' ') are not steps 3-4 of $(losses "$TMP/full" | tr '\n' ' ')"
json_lines "$TMP/out" | grep '"step": 3' >/dev/null && ok || bad "the resumed run does not continue at step 3"
# ZeRO-3 keeps shards: resume there too
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 1 --save "$TMP/ck3"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 3 --json --resume "$TMP/ck3"
[ "$(losses "$TMP/out" | tr '\n' ' ')" = "$(losses "$TMP/l2.3" | tail -n 2 | tr '\n' ' ')" ] && ok || bad "zero 3 resume is not bit for bit"
# a file of another save put into a committed one: refused, whatever its plan says
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 2 --save "$TMP/ck3b"
cp "$(newest "$TMP/ck3b")/rank-00001.ckpt" "$(newest "$TMP/ck3")/rank-00001.ckpt"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 3 --steps 3 --resume "$TMP/ck3"
expect_msg 'rank 1: checkpoint: .*ck3/save-000001-step-00000001/rank-00001.ckpt holds step 2, its save is of step 1'
# a checkpoint of another plan, another world size, another learning rate, a corrupt one
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 1 --steps 4 --resume "$TMP/ck"
expect_msg 'saved for a different plan: zero is 2 there, 1 now'
expect_rc 2 $MPI -np 1 "$SP" run $TINY --zero 2 --steps 4 --resume "$TMP/ck"
expect_msg 'rank-00000.ckpt was saved by 2 ranks, this job has 1'
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --lr 1e-3 --resume "$TMP/ck"
expect_msg 'saved with different settings: lr is 0.0003[0-9]* there, 0.001[0-9]* now'
printf 'x' | dd of="$CK/rank-00001.ckpt" bs=1 seek=700 conv=notrunc 2>/dev/null
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --resume "$TMP/ck"
expect_msg 'rank-00001.ckpt is corrupt \(checksum mismatch\)'
no_leaks "a rejected checkpoint"
head -c 100 "$CK/rank-00000.ckpt" >"$TMP/trunc" && mv "$TMP/trunc" "$CK/rank-00000.ckpt"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --resume "$TMP/ck"
expect_msg 'rank-00000.ckpt is truncated'
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --resume "$TMP/nothing-here"
expect_msg 'checkpoint: cannot read .*nothing-here: No such file or directory'
mkdir "$TMP/empty"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --zero 2 --steps 4 --resume "$TMP/empty"
expect_msg 'no committed checkpoint in .*empty'

# --- trace and database ----------------------------------------------------------------------------
expect_rc 0 $MPI -np 2 "$SP" run $TINY --zero 1 --steps 2 --trace "$TMP/t.json" --db "$TMP/r.db"
json_events "$TMP/t.json" >"$TMP/t.ev"
for pat in '"ph": "X", "name": "F", "cat": "compute", "pid": 1, "tid": 0' '"name": "BW"' '"name": "optimizer"' \
	   '"name": "reduce_scatter", "cat": "comm", "pid": 0, "tid": 1' '"name": "allgather", "cat": "comm", "pid": 1, "tid": 1' \
	   '"name": "thread_name", "pid": 1, "tid": 1, "args": \{"name": "comm"\}' '"args": \{"mb": 1, "chunk": 0, "stage": 0, "layers": 4, "first_layer": 0\}' '"name": "optimizer".*"args": \{"stage": 0\}'; do
	grep -Eq "$pat" "$TMP/t.ev" && ok || bad "trace lacks $pat"
done
[ "$(grep -c '"name": "F"' "$TMP/t.ev")" -eq 8 ] && ok || bad "trace: 2 ranks x 2 steps x 2 micro-batches = 8 F events expected"
no_leaks "trace and db"
out=$("$B/tests/mpi/read_runs" "$TMP/r.db")
[ "${out% mean_step_s*}" = "runs 1 finished 1 aborted 0 measurements 2 steps 2" ] && ok || bad "db rows: $out"
expect_rc 0 $MPI -np 1 "$SP" run $TINY --steps 1 --db "$TMP/r.db"
out=$("$B/tests/mpi/read_runs" "$TMP/r.db")
[ "${out% mean_step_s*}" = "runs 2 finished 2 aborted 0 measurements 3 steps 1" ] && ok || bad "db rows after a second run: $out"
# a run killed with -9 leaves its row `running` (in a store of its own, so the run ids below
# stay 1, 2, 3); the next open for writing marks it aborted
: >"$TMP/k.out"
mpirun --oversubscribe -np 1 "$SP" run $TINY --steps 100000000 --db "$TMP/k.db" >"$TMP/k.out" 2>"$TMP/k.err" &
mp=$!
for t in $(seq 300); do [ "$(grep -c '^step' "$TMP/k.out")" -ge 2 ] && break; sleep 0.1; done
victim=$(ps -o pid= --ppid "$mp" | tail -n 1 | tr -d ' ')
[ -n "$victim" ] && kill -9 "$victim"
wait "$mp"
out=$("$B/tests/mpi/read_runs" "$TMP/k.db")
case "$out" in "runs 1 finished 0 aborted 0 "*) ok ;; *) bad "killed run: $out" ;; esac
expect_rc 0 $MPI -np 1 "$SP" run $TINY --steps 1 --db "$TMP/k.db"
out=$("$B/tests/mpi/read_runs" "$TMP/k.db")
case "$out" in "runs 2 finished 1 aborted 1 "*) ok ;; *) bad "the killed run is not marked aborted: $out" ;; esac

# the recorded runs beside their prediction: db runs, db list --runs; the runs' own figures are
# the means of their measurement rows without the first step (independently from the rows)
expect_rc 0 "$SP" db --db "$TMP/r.db" runs --json
python3 - "$TMP/out" "$TMP/r.db" <<'PY' && ok || bad "db runs --json: $(head -c 300 "$TMP/out")"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
con = sqlite3.connect(sys.argv[2])
assert [r["run_id"] for r in d] == [1, 2]
for r in d:
    rows = con.execute("SELECT step, step_time_s FROM measurements WHERE run_id = ? ORDER BY step", (r["run_id"],)).fetchall()
    t = [x[1] for x in rows[1:]] or [rows[0][1]]
    assert r["measured"]["steps"] == len(rows) and abs(r["measured"]["mean_step_time_s"] - sum(t) / len(t)) < 1e-12
    assert r["predicted"]["source"] == "estimate" and r["predicted"]["step_time_s"] > 0 and r["plan"]["model"] == "tiny"
PY
expect_rc 0 "$SP" db --db "$TMP/r.db" list --runs
expect_out '^ +1 .*finished .*tiny dp2 .*\(estimate, on h100-sxm\)'
# a stored finalist run with --id: recorded with it, its prediction the finalist's
expect_rc 0 "$SP" tune --model tiny --gpu h100-sxm --gpus 2 --seq 16 --gbs 8 --top 2 --db "$TMP/r.db"
fin=$("$SP" db --db "$TMP/r.db" show 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["finalists"][0]["finalist_id"])')
expect_rc 0 $MPI -np 2 "$SP" run --id "$fin" --db "$TMP/r.db" --steps 2
expect_rc 0 "$SP" db --db "$TMP/r.db" runs
expect_out "^ +3 .*finished +1 +$fin .*\\(finalist, on h100-sxm\\)"
# --no-db is accepted (and refused beside --db); --json ends with the summary; the header
# names the whole plan
expect_rc 0 $MPI -np 2 "$SP" run $TINY --tp 2 --sp --steps 2 --json --no-db
tail -n 1 "$TMP/out" | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())["summary"]
assert s["steps"] == 2 and s["mean_step_time_s"] > 0 and s["tokens_per_s"] > 0 and s["final_loss"] > 0
assert len(s["peak_mem_bytes_per_rank"]) == 2 and s["plan"]["tp"] == 2' && ok || bad "run --json summary: $(tail -n 1 "$TMP/out")"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --db "$TMP/r.db" --no-db
expect_msg 'db and --no-db exclude each other'
expect_rc 0 $MPI -np 2 "$SP" run $TINY --pp 2 --schedule zb-h1 --steps 1
expect_out '^plan: dp 1 tp 1 pp 2 cp 1 ep 1 vpp 1, zero 0, sp off, .*schedule zb-h1, order tp-cp-dp-pp, overlap'

echo "not a database" >"$TMP/text.db"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 1 --db "$TMP/text.db"
expect_msg 'text.db is not a scaleplan database'
[ "$(cat "$TMP/text.db")" = "not a database" ] && ok || bad "a foreign file given to --db was changed"
# human output: one line per step with the memory of every rank
expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 2
grep -Eq '^step +2  loss [0-9.]+  grad norm [0-9.]+  [0-9.]+ s  [0-9]+ tokens/s  peak mem GiB/rank: [0-9.]+ [0-9.]+$' "$TMP/out" && ok ||
	bad "human output: $(head -c 300 "$TMP/out")"
expect_out '^run: tiny, 180800 parameters, 2 ranks, steps 1..2, 2 micro-batches of 2 x 16 tokens per pipeline'
expect_out '^plan: dp 2 tp 1 pp 1 cp 1 ep 1 vpp 1, zero 0, sp off, recompute none, mbs 2, gbs 8, seq 16'
expect_out '^run: mean step time over steps 2\.\.2: [0-9.]+ s, [0-9]+ tokens/s$'

# --- a killed or stopped rank ends the job ---------------------------------------------------------
# scenario SIGNAL PATTERN EXTRA-FLAGS...: 2 ranks train for ever; signal rank 1's process
scenario() {
	local sig=$1 pat=$2; shift 2
	: >"$TMP/k.out"; : >"$TMP/k.err"   # exist before the first poll below
	mpirun --oversubscribe -np 2 "$SP" run $TINY --steps 100000000 "$@" >"$TMP/k.out" 2>"$TMP/k.err" &
	local mp=$! t=0
	while [ "$(grep -c '^step' "$TMP/k.out")" -lt 2 ] && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
	if [ "$(grep -c '^step' "$TMP/k.out")" -lt 2 ]; then   # a signal during start-up is not the point
		bad "$sig: no 2 steps within 30 s: $(head -c 300 "$TMP/k.err")"; kill "$mp"; wait "$mp"; return
	fi
	local victim=""
	t=0
	while [ -z "$victim" ] && [ $t -lt 50 ]; do
		victim=$(ps -o pid= --ppid "$mp" | tail -n 1 | tr -d ' ')
		[ -z "$victim" ] && sleep 0.1
		t=$((t + 1))
	done
	if [ -z "$victim" ]; then
		bad "$sig: no rank process found under mpirun $mp: $(grep -c '^step' "$TMP/k.out") steps, $(head -c 300 "$TMP/k.err")"
		kill "$mp"; wait "$mp"; return
	fi
	local t0=$(date +%s)
	kill -"$sig" "$victim"
	t=0
	# the surviving rank must notice within 30 s: the job ends, or (a stopped process cannot
	# be torn down by mpirun until it runs again) the survivor has printed its message
	while kill -0 "$mp" 2>/dev/null && ! grep -Eq -- "$pat" "$TMP/k.err" && [ $t -lt 300 ]; do
		sleep 0.1; t=$((t + 1))
	done
	kill -CONT "$victim" 2>/dev/null
	t=0
	while kill -0 "$mp" 2>/dev/null && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
	if kill -0 "$mp" 2>/dev/null; then
		bad "$sig: job still running 30 s after the signal"
		kill -9 "$victim" "$mp" 2>/dev/null
	else
		ok
	fi
	wait "$mp"
	local rc=$?
	[ $rc -ne 0 ] && ok || bad "$sig: status 0"
	grep -Eq -- "$pat" "$TMP/k.err" && ok || bad "$sig: no message matching '$pat': $(head -c 300 "$TMP/k.err")"
	echo "$sig: job ended $(( $(date +%s) - t0 )) s after the signal, status $rc"
}
scenario KILL 'exited on signal 9'
scenario STOP 'did not complete within 3 s' --comm-timeout 3
summary

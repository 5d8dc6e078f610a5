#!/usr/bin/env bash
# Failures while writing, injected by the LD_PRELOAD shim tests/faults/failio.c (a write cut
# short with ENOSPC, a process killed at a write or a rename) and, where this machine lets us
# mount one, a real full tmpfs:
#  - checkpoints (dp 2, tiny config, saves at steps 2, 4 and 6): a rank killed while writing
#    the second save, a rank killed at its second rename, every rank's disk full during the
#    second save, rank 0's COMMIT failing: the job stops, the save of step 2 is still the
#    newest committed one, and a resume from it ends with losses and weights bit-identical to
#    the uninterrupted run's; leftovers are gone (at once, or at the next start);
#  - resume refuses another --data file, naming it;
#  - charts, the tune report, the run's trace and weight dump, and stdout: a failed write
#    exits 1 with one line carrying the OS reason and leaves no partial or temporary file.
. "$(dirname "$0")/lib.sh"
run_setup
SHIM="$PWD/$B/tests/libfailio.so"
[ -f "$SHIM" ] || { bad "$SHIM not built"; summary; exit; }
TINY="--model tiny --seq 16 --gbs 8 --mbs 2 --gpus 2 --zero 1"
# the shim goes to the ranks only; ASan must not insist on coming first in the library list
ASAN_SHIM="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
SHIMENV=(env LD_PRELOAD="$SHIM" ASAN_OPTIONS="$ASAN_SHIM")
fail_env() { FENV=(-x LD_PRELOAD="$SHIM" -x ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"); for v in "$@"; do FENV+=(-x "$v"); done; }
committed() { ls -d "$1"/save-*/COMMIT 2>/dev/null | sort | tail -n 1 | sed 's|/COMMIT$||'; }
hidden() { find "$1" -name '.*' ! -name . 2>/dev/null | head -n 3; }

expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 6 --json --dump-weights "$TMP/w.full"
cp "$TMP/out" "$TMP/full"

# resume_ok NAME DIR [RUN-FLAGS...]: the newest committed save is step 2; resuming gives steps
# 3-6 bit for bit and the same final weights
resume_ok() {
	local name=$1 dir=$2; shift 2
	case "$(committed "$dir")" in */save-000001-step-00000002) ok ;; *) bad "$name: newest committed save is '$(committed "$dir")'";; esac
	expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 6 --json --resume "$dir" --dump-weights "$TMP/w.$name" "$@"
	[ "$(losses "$TMP/out" | tr '\n' ' ')" = "$(losses "$TMP/full" | tail -n 4 | tr '\n' ' ')" ] && ok ||
		bad "$name: resumed losses $(losses "$TMP/out" | tr '\n' ' ') are not steps 3-6 of $(losses "$TMP/full" | tr '\n' ' ')"
	cmp -s "$TMP/w.$name" "$TMP/w.full" && ok || bad "$name: resumed weights differ from the uninterrupted run's"
}

# --- a rank killed while writing its file of the second save ---------------------------------------
fail_env FAILIO_PATH=step-00000004/.rank-00001 FAILIO_AFTER=100000 FAILIO_DO=kill FAILIO_RANK=1
$MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 6 --save "$TMP/k1" --save-every 2 >"$TMP/out" 2>"$TMP/err"
[ $? -ne 0 ] && ok || bad "killed rank: the job reported success"
ls "$TMP/k1" | grep -q 'step-00000004' && ok || bad "killed rank: the failed save left nothing to clean (the kill did not happen?)"
# resume and keep saving into the same directory: the leftovers go at start, the old save after
# the new commit
resume_ok kill-write "$TMP/k1" --save "$TMP/k1"
# (the failed save's serial 2 is free again once its directory is gone)
[ "$(ls -A "$TMP/k1")" = "save-000002-step-00000006" ] && ok || bad "kill-write: $TMP/k1 holds $(ls -A "$TMP/k1" | tr '\n' ' ')"

# --- a rank killed at its second rename (the file of step 4 complete, not yet in place) --------
fail_env FAILIO_OP=rename FAILIO_PATH=rank-00001.ckpt FAILIO_NTH=2 FAILIO_DO=kill FAILIO_RANK=1
$MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 6 --save "$TMP/k2" --save-every 2 >"$TMP/out" 2>"$TMP/err"
[ $? -ne 0 ] && ok || bad "killed at rename: the job reported success"
resume_ok kill-rename "$TMP/k2"

# --- every rank's disk full during the second save -------------------------------------------------
fail_env FAILIO_PATH=step-00000004/ FAILIO_AFTER=1000000
expect_rc 1 $MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 6 --save "$TMP/f1" --save-every 2
expect_msg 'step-00000004/rank-0000[01].ckpt: No space left on device'
[ "$(ls -A "$TMP/f1")" = "save-000001-step-00000002" ] && ok || bad "disk full: the failed save was not removed: $(ls -A "$TMP/f1" | tr '\n' ' ')"
[ -z "$(hidden "$TMP/f1")" ] && ok || bad "disk full: temporary files left: $(hidden "$TMP/f1")"
resume_ok enospc "$TMP/f1"

# --- rank 0's commit marker cannot be written ---------------------------------------------------------
fail_env FAILIO_PATH=step-00000004/.COMMIT FAILIO_RANK=0
expect_rc 1 $MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 6 --save "$TMP/f2" --save-every 2
expect_msg 'rank 0: checkpoint: writing .*step-00000004/COMMIT: No space left on device'
resume_ok commit "$TMP/f2"

# --- a real full disk: a tmpfs with room for one save and a half, not two ----------------------------
MNT="$TMP/mnt"
mkdir -p "$MNT"
KIB=$(( $(du -sk "$(committed "$TMP/f1")" | cut -f1) * 3 / 2 ))
if mount -t tmpfs -o size=${KIB}k tmpfs "$MNT" 2>/dev/null; then
	expect_rc 1 $MPI -np 2 "$SP" run $TINY --steps 6 --save "$MNT/ck" --save-every 2
	expect_msg 'No space left on device'
	resume_ok tmpfs "$MNT/ck"
	# a chart onto the full disk: refused whole (first fill it up)
	head -c 64M /dev/zero >"$MNT/fill" 2>/dev/null
	expect_rc 1 "$SP" plot bubble --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 8 --pp 2 --gbs 16 -o "$MNT/x.svg"
	expect_err_line 'x.svg: No space left on device'
	[ ! -e "$MNT/x.svg" ] && [ -z "$(hidden "$MNT")" ] && ok || bad "tmpfs: a partial chart or temporary file is left"
	# gnuplot's own directory on the full disk: refused, its directory removed
	expect_rc 1 env TMPDIR="$MNT" "$SP" plot bubble --model llama-3-8b --gpu h100-sxm --gpus 16 --tp 8 --pp 2 --gbs 16 -o "$TMP/y.svg"
	expect_err_line 'No space left on device|cut short|gnuplot failed'
	[ ! -e "$TMP/y.svg" ] && [ -z "$(ls -d "$MNT"/scaleplan-plot-* 2>/dev/null)" ] && ok || bad "TMPDIR full: $(ls -A "$MNT" | tr '\n' ' ')"
	umount "$MNT"
else
	echo "note: cannot mount a tmpfs here; the full-disk cases run through the shim only"
fi

# --- another data file than the checkpoint's ---------------------------------------------------------
tokens() { perl -e '($n,$s)=@ARGV; print pack("l<256", 20240520, 1, $n, (0) x 253); print pack("S<*", map { ($_*$s+3) % 256 } 0..$n-1)' "$@"; }
tokens 1000 7 >"$TMP/a.bin"
tokens 1000 5 >"$TMP/b.bin"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 2 --data "$TMP/a.bin" --save "$TMP/d"
expect_rc 2 $MPI -np 2 "$SP" run $TINY --steps 4 --data "$TMP/b.bin" --resume "$TMP/d"
expect_msg 'saved with different settings: data is "token file: 1000 tokens, FNV-1a [0-9a-f]{16}" there, "token file: 1000 tokens, FNV-1a [0-9a-f]{16}" now'
cp "$TMP/a.bin" "$TMP/a-moved.bin"
expect_rc 0 $MPI -np 2 "$SP" run $TINY --steps 3 --data "$TMP/a-moved.bin" --resume "$TMP/d"

# --- other writes: one line with the OS reason, nothing partial left ---------------------------------
P=(--model llama-3-8b --gpu h100-sxm --gpus 16 --tp 8 --pp 2 --gbs 16)
mkdir -p "$TMP/w"
expect_rc 0 "$SP" plot memory "${P[@]}" -o "$TMP/w/m.svg"
cp "$TMP/w/m.svg" "$TMP/m.before"
for chart in bubble memory; do
	expect_rc 1 "${SHIMENV[@]}" FAILIO_PATH=m.svg FAILIO_AFTER=4096 "$SP" plot $chart "${P[@]}" -o "$TMP/w/m.svg"
	expect_err_line '^scaleplan plot: .*/w/m.svg: No space left on device$'
done
cmp -s "$TMP/w/m.svg" "$TMP/m.before" && ok || bad "a failed chart changed the file it would have replaced"
expect_rc 1 "${SHIMENV[@]}" FAILIO_PATH=report.html FAILIO_AFTER=100 "$SP" tune --model llama-3-8b --gpu h100-sxm --gpus 8 --seq 4096 --gbs 16 --top 2 --no-db --report "$TMP/w/rep"
grep -q 'report: .*report.html: No space left on device' "$TMP/err" && ok || bad "tune --report: $(head -c 300 "$TMP/err")"
[ ! -e "$TMP/w/rep/report.html" ] && [ -s "$TMP/w/rep/report.md" ] && [ -z "$(find "$TMP/w/rep" -size 0)" ] && ok || bad "tune --report left $(ls -la "$TMP/w/rep")"
fail_env FAILIO_PATH=t.json FAILIO_AFTER=1000
expect_rc 1 $MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 1 --trace "$TMP/w/t.json"
expect_msg 't.json: No space left on device'
fail_env FAILIO_PATH=wts.bin FAILIO_AFTER=1000
expect_rc 1 $MPI "${FENV[@]}" -np 2 "$SP" run $TINY --steps 1 --dump-weights "$TMP/w/wts.bin"
expect_msg 'wts.bin: No space left on device'
[ ! -e "$TMP/w/t.json" ] && [ ! -e "$TMP/w/wts.bin" ] && [ -z "$(hidden "$TMP/w")" ] && ok || bad "partial files: $(ls -A "$TMP/w" | tr '\n' ' ')"
expect_rc 1 sh -c "\"$SP\" sim ${P[*]} --json >/dev/full"
expect_err_line 'scaleplan sim: stdout: No space left on device'
summary

#!/usr/bin/env bash
# A rank that dies (SIGKILL) or stops (SIGSTOP) in the middle of all-reduces must make every
# rank of the job exit with non-zero status within 30 s, with a message saying why — never a
# hang. Open MPI's mpirun aborts the job when a rank dies; a stopped rank is caught by the
# communicator's wait timeout, whose message names the operation and group.
. "$(dirname "$0")/lib.sh"
B=${SCALEPLAN_BUILD:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}detect_leaks=0"  # killed runs cannot free
PROG=$B/tests/mpi/kill_loop

gone() {   # pid not running (absent or a zombie)
	local s=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -z "$s" ] || [ "${s#Z}" != "$s" ]
}

# scenario SIGNAL TIMEOUT_S PATTERN: start 4 ranks, signal rank 2, expect all gone in 30 s
scenario() {
	local sig=$1 tmo=$2 pat=$3 dir=$TMP/$1
	mkdir -p "$dir"
	mpirun --oversubscribe -np 4 "$PROG" "$dir" "$tmo" >"$dir/out" 2>"$dir/err" &
	local mp=$!
	local t=0
	while [ "$(ls "$dir" | grep -c '^pid\.')" -lt 4 ] && [ $t -lt 200 ]; do sleep 0.1; t=$((t + 1)); done
	if [ "$(ls "$dir" | grep -c '^pid\.')" -lt 4 ]; then
		bad "$sig: ranks did not start: $(head -c 300 "$dir/err")"
		kill "$mp" 2>/dev/null; wait "$mp" 2>/dev/null
		return
	fi
	sleep 0.5
	local victim=$(cat "$dir/pid.2") t0=$(date +%s)
	kill -"$sig" "$victim"
	t=0
	while kill -0 "$mp" 2>/dev/null && [ $t -lt 300 ]; do sleep 0.1; t=$((t + 1)); done
	local dt=$(( $(date +%s) - t0 ))
	if kill -0 "$mp" 2>/dev/null; then
		bad "$sig: mpirun still running 30 s after the signal"
		for r in 0 1 2 3; do kill -9 "$(cat "$dir/pid.$r")" 2>/dev/null; done
		kill -9 "$mp" 2>/dev/null
	else
		ok
	fi
	wait "$mp"
	local rc=$?
	if [ "$rc" -ne 0 ]; then ok; else bad "$sig: mpirun exited with status 0"; fi
	sleep 0.5
	local left=0
	for r in 0 1 2 3; do gone "$(cat "$dir/pid.$r")" || left=$((left + 1)); done
	if [ $left -eq 0 ]; then ok; else bad "$sig: $left ranks still running"; fi
	if grep -Eq -- "$pat" "$dir/err"; then ok; else bad "$sig: no message matching '$pat': $(head -c 400 "$dir/err")"; fi
	echo "$sig: job ended ${dt}s after the signal, status $rc"
}

scenario KILL 20 'exited on signal 9'
scenario STOP 3 'allreduce on group world \(4 ranks\) did not complete within 3 s'
kill -CONT "$(cat "$TMP/STOP/pid.2" 2>/dev/null)" 2>/dev/null
summary

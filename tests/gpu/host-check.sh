#!/usr/bin/env bash
# tests/gpu/host-check.sh — what tests/gpu/run.sh will meet on the GPU machine, checked on a
# machine without a GPU: in a private mount namespace (unshare -m; root) the system's copies
# of the libraries the bundle supplies (cJSON, SQLite, GLPK and SuiteSparse, GSL, OpenBLAS and
# gfortran's runtime), their headers and Open MPI (headers, libraries, mpicc, mpirun) are
# hidden and the loader's cache is rebuilt without them, and NCCL and cuDNN are moved out of the
# toolkit into the layout of Python's nvidia-* wheels; then a scratch copy of the working
# tree (tracked and untracked files, and .gpu/) runs `tests/gpu/run.sh --build-only`, which
# can only succeed from the bundle; the nccl stage's programs must link and run (to their "no
# GPU" message). The NOMPI binary the build makes must load every library, and a
# one-rank run of the tiny model must give the losses the system's MPI build gives (computed
# before the namespace is entered): the same compiler and the same library versions.
#
# Usage: tests/gpu/host-check.sh   (after scripts/gpu-bundle.sh; prints "N passed, N failed")
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HC=${HOST_CHECK_DIR:-/tmp/scaleplan-host-check}
TINY="--model tiny --seq 16 --gbs 8 --mbs 2 --steps 3 --json --no-db"

if [ "${1:-}" != --inside ]; then
	cd "$ROOT" || exit 2
	[ -x ./scaleplan ] || { echo "host-check: build ./scaleplan first (make)"; echo "0 passed, 1 failed"; exit 1; }
	ls .gpu/debs/*.deb >/dev/null 2>&1 || { echo "host-check: no .gpu/debs (scripts/gpu-bundle.sh)"; echo "0 passed, 1 failed"; exit 1; }
	rm -rf "$HC" && mkdir -p "$HC/tree"
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 ./scaleplan run $TINY >"$HC/losses.mpi" ||
		{ echo "host-check: the MPI build's run failed"; echo "0 passed, 1 failed"; exit 1; }
	# the working tree as it would travel: tracked and untracked-not-ignored files, and .gpu
	if git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$HC/tree" 2>/dev/null
	else
		tar -c --exclude='./build*' --exclude=./scaleplan --exclude=./.gpu . | tar -x -C "$HC/tree"
	fi
	cp -r .gpu "$HC/tree/"
	exec unshare -m --propagation private bash "$0" --inside
fi

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }

# farm DIR NAME-PATTERN...: DIR shows every entry but those matching a pattern (the original
# stays reachable under $HC/orig for the links)
farm() {
	local dir=$1 key orig new e name p hide
	shift
	key=$(echo "$dir" | tr / _)
	orig=$HC/orig/$key
	new=$HC/farm/$key
	mkdir -p "$orig" "$new"
	mount --bind "$dir" "$orig" || return 1
	for e in "$orig"/* "$orig"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		name=$(basename "$e")
		hide=0
		for p in "$@"; do case "$name" in $p) hide=1;; esac; done
		[ $hide -eq 1 ] || ln -s "$e" "$new/$name"
	done
	mount --bind "$new" "$dir"
}

LIBS='libcjson* libsqlite3* libglpk* libgsl* libgslcblas* libopenblas* openblas-pthread blas lapack libblas* liblapack* libamd* libcolamd* libsuitesparseconfig* libgfortran* libquadmath* libmpi* libopen-pal* libopen-rte* openmpi'
farm /usr/lib/x86_64-linux-gnu $LIBS || { echo "host-check: mount failed (needs root)"; echo "0 passed, 1 failed"; exit 1; }
farm /usr/include 'cjson' 'gsl' 'sqlite3*.h' 'glpk.h' 'suitesparse' 'mpi*' 'openmpi' 'cblas*' 'openblas*' 'x86_64-linux-gnu'
# the multiarch include folder, reached through the original /usr/include
mkdir -p "$HC/farm/_usr_include"
rm -f "$HC/farm/_usr_include/x86_64-linux-gnu"
farm "$HC/orig/_usr_include/x86_64-linux-gnu" 'cblas*' 'openblas*' 'mpi*' 'openmpi'
ln -s "$HC/orig/_usr_include/x86_64-linux-gnu" "$HC/farm/_usr_include/x86_64-linux-gnu"
# (not a farm of /usr/bin: gcc finds cc1 from where its own binary really is)
: >"$HC/not-here"
chmod 644 "$HC/not-here"
for f in /usr/bin/mpicc /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun; do
	[ -e "$f" ] && mount --bind "$HC/not-here" "$(readlink -f "$f")"
done
# NCCL and cuDNN as the GPU machine has them: Python wheels (nvidia/nccl, nvidia/cudnn with
# include/ and lib/, versioned sonames only), not in the toolkit
CT=$(readlink -f /usr/local/cuda)/targets/x86_64-linux
if [ -e "$CT/include/nccl.h" ] && [ -z "${HOST_CHECK_TOOLKIT_NCCL:-}" ]; then
	farm "$CT/include" 'nccl*' 'cudnn*'
	farm "$CT/lib" 'libnccl*' 'libcudnn*'
	for w in nccl cudnn; do
		mkdir -p "$HC/site/nvidia/$w/include" "$HC/site/nvidia/$w/lib"
		for f in "$HC/orig/$(echo "$CT/include" | tr / _)"/$w*; do ln -s "$f" "$HC/site/nvidia/$w/include/"; done
		for f in "$HC/orig/$(echo "$CT/lib" | tr / _)"/lib$w*.so.[0-9]; do ln -s "$f" "$HC/site/nvidia/$w/lib/"; done
	done
	export PYTHONPATH=$HC/site
	echo '#include <nccl.h>' | gcc -E -x c -I"$CT/include" - 2>&1 | grep -q 'No such file' && ok || bad "the toolkit's nccl.h still visible"
fi
ldconfig -C "$HC/ld.so.cache" 2>/dev/null
mount --bind "$HC/ld.so.cache" /etc/ld.so.cache

# the hiding holds: gcc works, but finds no header, no library, no MPI
echo 'int main(void){return 0;}' | gcc -x c - -o "$HC/a.out" -lm && ok || bad "gcc cannot build a program here"
echo '#include <cjson/cJSON.h>' | gcc -E -x c - 2>&1 | grep -q 'No such file' && ok || bad "cJSON header still visible"
echo '#include <cblas.h>' | gcc -E -x c - 2>&1 | grep -q 'No such file' && ok || bad "cblas.h still visible"
echo 'int main(void){return 0;}' | gcc -x c - -o "$HC/a.out" -lglpk 2>&1 | grep -q 'cannot find -lglpk' && ok || bad "-lglpk still links"
ldconfig -p | grep -qE 'libcjson|libopenblas|libgsl|libmpi' && bad "the loader cache still lists them" || ok
mpicc --version >/dev/null 2>&1 && bad "mpicc still runs" || ok

cd "$HC/tree" || exit 2
GPU_WORK=$HC/work OUT=$HC/out bash tests/gpu/run.sh --build-only
rc=$?
[ $rc -eq 0 ] && ok || bad "run.sh --build-only: rc $rc"
# the nccl stage links its programs against the wheels' NCCL; without a GPU they say so
GPU_WORK=$HC/work bash tests/gpu/run.sh --stage nccl >"$HC/nccl.log" 2>&1
for p in nccl_smoke nccl_watchdog; do
	grep -q "^no GPU: comm: rank 0 cannot use CUDA device 0" "$HC/work/$p.out" 2>/dev/null && ok ||
		bad "$p did not link or run: $(grep "^$p" "$HC/work/results/nccl" 2>/dev/null)"
done
BIN=$HC/tree/$(cat "$HC/work/bin" 2>/dev/null || echo build-nompi/scaleplan)
if [ -x "$BIN" ]; then
	ldd "$BIN" >"$HC/ldd"
	grep -q 'not found' "$HC/ldd" && bad "libraries not found: $(grep 'not found' "$HC/ldd" | tr '\n' ' ')" || ok
	grep -q "$HC/work/" "$HC/ldd" && ok || bad "nothing loaded from the bundle: $(cat "$HC/ldd")"
	if [ -n "${PYTHONPATH:-}" ]; then
		grep -q "libnccl in $HC/site/nvidia/nccl/lib" "$HC/out/stages.log" &&
			grep -q "libcudnn in $HC/site/nvidia/cudnn/lib" "$HC/out/stages.log" && ok ||
			bad "NCCL and cuDNN not found in the wheel layout"
	fi
	grep -E 'cjson|glpk|gsl|openblas|sqlite|nccl|cudnn' "$HC/ldd"
	"$BIN" run $TINY >"$HC/losses.self" 2>"$HC/err" && ok || bad "NOMPI run: $(tail -n 2 "$HC/err")"
	l() { grep '^{"step"' "$1" | grep -o '"loss":[^,]*'; }
	[ -n "$(l "$HC/losses.self")" ] && cmp -s <(l "$HC/losses.self") <(l "$HC/losses.mpi") && ok ||
		bad "losses $(l "$HC/losses.self" | tr '\n' ' ') differ from the MPI build's $(l "$HC/losses.mpi" | tr '\n' ' ')"
	l "$HC/losses.self"
else
	bad "no $BIN"
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]

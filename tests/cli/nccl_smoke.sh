#!/usr/bin/env bash
# Links the NCCL test programs against the CUDA objects (build/libscaleplan_cuda.a, made
# whenever nvcc exists) and runs each on one rank. tests/cuda/nccl_smoke.c: the NCCL backend
# must link, and either run (GPU present) or fail with a clear message (no GPU).
# tests/cuda/nccl_watchdog.c: without a GPU, creating the NCCL world must fail with a clear
# message; with one, a receive that never completes must end after its timeout with every
# communicator aborted (the GPU run is tests/gpu/run.sh's). Nothing to do without nvcc.
. "$(dirname "$0")/lib.sh"
CUDA=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f build/libscaleplan_cuda.a ] || [ ! -f build/libsim.a ] || [ ! -f "$CUDA/include/nccl.h" ]; then
	echo "no CUDA build: skipped"
	summary; exit
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for prog in nccl_smoke nccl_watchdog; do
	expect_rc 0 mpicc -std=c11 -O1 -I. -I"$CUDA/include" -o "$TMP/$prog" tests/cuda/$prog.c \
		build/libscaleplan_cuda.a build/libruntime.a build/libkernels.a build/libsim.a -L"$CUDA/lib64" -lnccl -lcudart -lstdc++ \
		-lcjson -lsqlite3 -lglpk -lopenblas -lm -lpthread
	if [ -x "$TMP/$prog" ]; then
		LD_LIBRARY_PATH=$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} expect_rc 0 timeout 120 mpirun -np 1 "$TMP/$prog"
		cat "$TMP/out"
	fi
done
summary

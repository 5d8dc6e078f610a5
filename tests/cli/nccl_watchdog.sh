#!/usr/bin/env bash
# Links tests/cuda/nccl_watchdog.c against the CUDA objects (build/libscaleplan_cuda.a, made
# whenever nvcc exists) and runs it on one rank: without a GPU, creating the NCCL world must
# fail with a clear message; with one, a receive that never completes must end after its
# timeout with every communicator aborted (the GPU run is tests/gpu/run.sh's). Nothing to do
# without nvcc.
. "$(dirname "$0")/lib.sh"
CUDA=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f build/libscaleplan_cuda.a ] || [ ! -f build/libsim.a ] || [ ! -f "$CUDA/include/nccl.h" ]; then
	echo "no CUDA build: skipped"
	summary; exit
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
expect_rc 0 mpicc -std=c11 -O1 -I. -I"$CUDA/include" -o "$TMP/nccl_watchdog" tests/cuda/nccl_watchdog.c \
	build/libscaleplan_cuda.a build/libruntime.a build/libkernels.a build/libsim.a -L"$CUDA/lib64" -lnccl -lcudart -lstdc++ \
	-lcjson -lsqlite3 -lglpk -lopenblas -lm -lpthread
if [ -x "$TMP/nccl_watchdog" ]; then
	LD_LIBRARY_PATH=$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} expect_rc 0 timeout 120 mpirun -np 1 "$TMP/nccl_watchdog"
	cat "$TMP/out"
fi
summary

#!/usr/bin/env bash
# Links tests/cuda/nccl_smoke.c against the CUDA objects (build/libscaleplan_cuda.a, made
# whenever nvcc exists) and runs it on one rank: the NCCL backend must link, and either run
# (GPU present) or fail with a clear message (no GPU). Nothing to do without nvcc.
. "$(dirname "$0")/lib.sh"
CUDA=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f build/libscaleplan_cuda.a ] || [ ! -f build/libsim.a ] || [ ! -f "$CUDA/include/nccl.h" ]; then
	echo "no CUDA build: skipped"
	summary; exit
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
expect_rc 0 mpicc -std=c11 -O1 -I. -I"$CUDA/include" -o "$TMP/nccl_smoke" tests/cuda/nccl_smoke.c \
	build/libscaleplan_cuda.a build/libruntime.a build/libkernels.a build/libsim.a -L"$CUDA/lib64" -lnccl -lcudart -lstdc++ \
	-lcjson -lsqlite3 -lglpk -lopenblas -lm -lpthread
if [ -x "$TMP/nccl_smoke" ]; then
	LD_LIBRARY_PATH=$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} expect_rc 0 mpirun -np 1 "$TMP/nccl_smoke"
	cat "$TMP/out"
fi
summary

#!/usr/bin/env bash
# Pipeline executor (runtime/pp) under mpirun with 2, 4 and 8 ranks (oversubscribed): every
# schedule against a single-rank run of the same micro-batches; tests/mpi/test_pp.c prints
# "test_pp: N passed, N failed" on rank 0 and run_mpi (lib.sh) adds those up. The last run
# lowers Open MPI's shared-memory eager limit so that every transfer uses the rendezvous
# protocol (a send completes only once its receive is posted), the regime in which a wrong
# posting order would deadlock even if the model's hidden size made messages small.
. "$(dirname "$0")/lib.sh"
mpi_setup
# one BLAS thread per rank: the ranks already oversubscribe the cores
export OPENBLAS_NUM_THREADS=1
MPI_ECHO='.'   # the program's other lines (timings) are echoed too
for np in 2 4 8; do run_mpi "$np" test_pp; done
echo "rendezvous:"
run_mpi 2 test_pp --mca btl_vader_eager_limit 256 --mca btl_vader_rndv_eager_limit 256
summary

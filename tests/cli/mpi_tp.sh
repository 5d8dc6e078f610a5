#!/usr/bin/env bash
# Tensor and sequence parallelism of the model against the single-rank model under mpirun:
# np 2 (tp 2) and np 4 (two tp-2 replicas, then tp 4). Rank 0 prints "name: N passed, N
# failed"; run_mpi (lib.sh) adds those up.
. "$(dirname "$0")/lib.sh"
mpi_setup
for np in 2 4; do run_mpi "$np" test_tp; done
summary

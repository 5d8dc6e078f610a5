#!/usr/bin/env bash
# Multi-rank tests of runtime/comm, ctx, dp and zero under mpirun with 2, 4 and 8 ranks
# (oversubscribed: this runs on 2 cores). Each program adds up its ranks' checks and rank 0
# prints "name: N passed, N failed"; run_mpi (lib.sh) adds those up.
. "$(dirname "$0")/lib.sh"
mpi_setup
for np in 2 4 8; do
	for prog in test_comm test_zero; do run_mpi "$np" "$prog"; done
done
summary

#!/usr/bin/env bash
# Multi-rank tests of context parallelism (runtime/cp: zig-zag split, ring attention) and
# expert parallelism (runtime/ep: all-to-all dispatch and combine) under mpirun with 2 and 4
# ranks, plus 8 for CP and 1 for both (the degenerate group). Each program adds up its
# ranks' checks and rank 0 prints "name: N passed, N failed"; run_mpi (lib.sh) adds those up
# and echoes the measured-error lines.
. "$(dirname "$0")/lib.sh"
mpi_setup
MPI_ECHO='^(cp|ep)[0-9]'
for np in 1 2 4 8; do run_mpi "$np" test_cp; done
for np in 1 2 4; do
	[ -f tests/mpi/test_ep.c ] && run_mpi "$np" test_ep
done
summary

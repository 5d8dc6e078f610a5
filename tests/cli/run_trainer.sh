#!/usr/bin/env bash
# The trainer (runtime/train.h) against a plain single-rank llama_forward/backward/llama_step
# loop on the tiny dense and MoE configs, ZeRO 0-3, under mpirun with 1, 2 and 4 ranks
# (tests/mpi/test_train.c says what is checked); run_mpi (lib.sh) adds up the counts.
. "$(dirname "$0")/lib.sh"
mpi_setup
for np in 1 2 4; do run_mpi "$np" test_train; done
summary

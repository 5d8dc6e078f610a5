/* comm_nccl — the NCCL backend of runtime/comm.h (runtime/comm_nccl.cu, built into
 * build/libscaleplan_cuda.a when nvcc exists). Buffers are device pointers; operations are
 * enqueued on the communicator's own CUDA stream and a request is a CUDA event recorded after
 * the operation, so comm_wait() blocks the host and comm_test() polls the event. To order
 * compute after communication without blocking the host, make the compute stream wait on
 * comm_nccl_stream().
 *
 * Ownership: comm_nccl_world borrows `bootstrap` (an MPI world from comm_mpi_world, used to
 * broadcast NCCL's unique id and to abort the job); destroy NCCL groups, then the NCCL world,
 * then the bootstrap. Groups are made with comm_create_group (ncclCommSplit). One GPU per
 * rank: `device` is the CUDA device this rank drives. */
#ifndef SCALEPLAN_COMM_NCCL_H
#define SCALEPLAN_COMM_NCCL_H

#include "runtime/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

int comm_nccl_world(struct comm *bootstrap, int device, struct comm **out, char *err);
/* The cudaStream_t (as void *) every operation of c runs on. */
void *comm_nccl_stream(struct comm *c);

#ifdef __cplusplus
}
#endif

#endif

/* coll — the names of the collective operations, one enum for the whole tree: the simulator
 * prices the first COLL_PRICED of them (sim/collective.h, the order of a profile's measured
 * tables, sim/hw_table.h), the runtime runs all of them (runtime/comm.h). Plain C, no other
 * include, so the CUDA backend can include it too. */
#ifndef SCALEPLAN_COLL_H
#define SCALEPLAN_COLL_H

enum coll {
	COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER, COLL_ALLTOALL, COLL_SENDRECV,
	COLL_PRICED, /* the ones above have a cost model and a profile table */
	COLL_ALLTOALLV = COLL_PRICED, COLL_BROADCAST, COLL_BARRIER,
	COLL_COUNT
};

#endif

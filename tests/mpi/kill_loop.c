/* All-reduces in a loop until something fails; for tests/cli/mpi_kill.sh, which kills or
 * stops one rank and checks that every other rank ends with a clear error, never hangs.
 * Usage: kill_loop DIR TIMEOUT_S — writes DIR/pid.RANK once the world is up. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "runtime/comm.h"
#include "sim/util.h"

int main(int argc, char **argv)
{
	char err[ERR_LEN], path[512];
	if (argc != 3) {
		fprintf(stderr, "usage: kill_loop DIR TIMEOUT_S\n");
		return 2;
	}
	struct comm *world;
	if (comm_mpi_world(&world, err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	comm_set_timeout(world, atof(argv[2]));
	int r = comm_rank(world);
	snprintf(path, sizeof(path), "%s/pid.%d", argv[1], r);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	float x[4096] = {0};
	for (long i = 0;; i++) {
		if (comm_allreduce(world, x, x, 4096, COMM_F32, err)) {
			fprintf(stderr, "rank %d, iteration %ld: %s\n", r, i, err);
			comm_abort(world, 3);
			return 3;
		}
	}
}

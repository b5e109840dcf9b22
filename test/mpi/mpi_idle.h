/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef MPI_IDLE_H
#define MPI_IDLE_H

#include <mpi.h>
#include <time.h>

/*
 * A barrier that bystander ranks wait in asleep: with more ranks than
 * cores, busy-polling bystanders take the CPU from the ranks being
 * measured. Non-blocking collectives only match their own kind, so every
 * rank of the communicator must use this one at the same point.
 */
static inline void idle_barrier(int busy)
{
	struct timespec nap = { 0, 200000 };
	MPI_Request req;
	int done = 0;

	MPI_Ibarrier(MPI_COMM_WORLD, &req);
	if (busy) {
		MPI_Wait(&req, MPI_STATUS_IGNORE);
		return;
	}
	while (!done) {
		MPI_Test(&req, &done, MPI_STATUS_IGNORE);
		if (!done)
			nanosleep(&nap, NULL);
	}
}

#endif

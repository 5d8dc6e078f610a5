/* timeline — what happened on which rank and stream, when: the output of the event engine
 * (and, later, of measured runs), the input of bubble plots and trace files. One flat array
 * of events; producers append, readers walk it.
 *
 * Ownership: the timeline owns `ev`; timeline_free() releases it. Times are in the producer's
 * unit (the engine uses its caller's unit, seconds when costs come from the simulator).
 *
 * Invariant: events of one (rank, stream) pair never overlap, except the two halves of an
 * overlapped F&B pair (both flagged `overlap`), which share start and end. */
#ifndef SCALEPLAN_TIMELINE_H
#define SCALEPLAN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

enum tl_kind { TL_F, TL_B, TL_W, TL_BW, TL_P2P, TL_DP, TL_AG, TL_OPT, TL_KIND_COUNT };
enum tl_stream { TL_COMPUTE, TL_P2P_FWD, TL_P2P_BWD, TL_DP_COMM, TL_AG_COMM, TL_STREAM_COUNT };

struct tl_event {
	double start, end;
	double mem_bytes;  /* compute events: the rank's activation bytes after the op; else 0 */
	int32_t rank;
	int32_t mb;        /* micro-batch, -1 when none (DP, optimizer) */
	int32_t stage;     /* pipeline stage, -1 when none */
	uint8_t stream;    /* enum tl_stream */
	uint8_t kind;      /* enum tl_kind */
	uint8_t chunk;
	uint8_t dir;
	uint8_t overlap;   /* half of an overlapped F&B pair */
};

struct timeline {
	struct tl_event *ev;
	size_t n, cap;
	int nranks;
};

/* Reserves cap events (0 is fine). Returns 0 or -1 with err. */
int timeline_init(struct timeline *tl, int nranks, size_t cap, char *err);
void timeline_free(struct timeline *tl);
/* Appends one zeroed event, growing the array when full; NULL when out of memory. */
struct tl_event *timeline_push(struct timeline *tl);
/* Last end time over all events (0 when empty). */
double timeline_end(const struct timeline *tl);

const char *tl_kind_name(int kind);
const char *tl_stream_name(int stream);

#endif

/* bench — one line per figure: "bench <name> <value> <unit>". Each module adds a function here
 * and an entry in bench/bench.c's table. */
#ifndef SCALEPLAN_BENCH_H
#define SCALEPLAN_BENCH_H
#include <stdio.h>
#define BENCH_LINE(name, value, unit) printf("bench %s %.6g %s\n", name, (double)(value), unit)

void bench_estimate(void);   /* bench/bench_estimate.c */
void bench_engine(void);     /* bench/bench_engine.c */
void bench_comm(void);       /* bench/bench_comm.c; multi-rank figures: make bench-comm */
void bench_kernels(void);    /* bench/bench_kernels.c */
void bench_tune(void);       /* bench/bench_tune.c */

#endif

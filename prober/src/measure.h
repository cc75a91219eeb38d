/* measure.h: the sampler (TCP_INFO, slow-start, quick window). */
#ifndef QP_MEASURE_H
#define QP_MEASURE_H

#include <stdint.h>

#include "qperr.h"
#include "run.h"

/* Initialise the detectors, set t = 0 and announce the first phase: the sender
 * (sender.c) starts writing right after this. */
void measure_begin(qp_run *r);

/* Sample until the mode's end (or a signal); 0 when the test should end normally,
 * -1 with e set on a server or socket error. */
int measure_loop(qp_run *r, qp_err *e);

/* Read the final counters after the drain and fill r->out. */
void measure_final(qp_run *r);

/* Print the human report's last, partial interval. */
void measure_last_interval(qp_run *r);

/* inst_bps from a history of (t, acked) points (oldest first) and the current point:
 * bytes acked over the last 500 ms, or since t = 0 while t < 0.5 s. */
double measure_inst_bps(const qp_point *hist, int n, double t, uint64_t acked);

#endif

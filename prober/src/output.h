/* output.h: the human report and the JSON Lines events (written from one thread). */
#ifndef QP_OUTPUT_H
#define QP_OUTPUT_H

#include <stdint.h>

#include "qperr.h"
#include "run.h"

/* Aggregate figures of one sample. */
typedef struct {
    double t, inst_bps, cumu_bps;
    uint64_t bytes_sent, bytes_acked, cwnd_bytes;
    uint32_t retransmits;
} out_agg;

/* Choose JSON Lines (1) or the human report (0). */
void out_set_json(int json);

/* Print the start event (or the human header); r may be partly filled. */
void out_start(const qp_run *r);

/* Print a phase change. */
void out_phase(const char *phase, double t);

/* Print one sample (JSON only). */
void out_sample(const qp_run *r, const out_agg *a);

/* Print the end of slow-start. */
void out_ss_end(const qp_run *r);

/* Print the human interval lines for [t0, t1]: one per stream, then the sum. */
void out_interval(const qp_run *r, double t0, double t1);

/* Print the result event (or the human summary). */
void out_result(const qp_run *r);

/* Print an error event (JSON) or message (stderr). */
void out_error(const qp_err *e);

/* Print a usage error: event in JSON mode, else message and a hint on stderr. */
void out_usage_error(int json, const char *msg);

#endif

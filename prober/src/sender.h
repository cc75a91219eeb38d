/* sender.h: one thread writing every data stream through epoll (iperf3's design).
 *
 * The interface with the measurement (measure.c) is the qp_stream fields below and
 * nothing else:
 *   written     the sender adds every byte send() accepted (relaxed atomic);
 *   send_errno  the sender sets it once when a stream's socket fails, then leaves
 *               that stream alone; the sampler turns it into an `io` error;
 *   stop        (qp_run) set by sender_stop; the sender exits within one wake-up.
 * The sampler may setsockopt(TCP_NOTSENT_LOWAT) on a data socket at any time: epoll
 * then reports the socket writable only when its unsent queue is below that mark. */
#ifndef QP_SENDER_H
#define QP_SENDER_H

#include <stdint.h>

#include "qperr.h"
#include "run.h"

/* Make every data socket non-blocking and start the sender thread; 0 or -1 with e set.
 * SIGINT and SIGTERM stay blocked in it, so signals reach the sampler. */
int sender_start(qp_run *r, qp_err *e);

/* Ask the sender to stop and join it (idempotent; a no-op if it never started). */
void sender_stop(qp_run *r);

/* Data bytes written so far over all streams. */
uint64_t sender_written(const qp_run *r);

#endif

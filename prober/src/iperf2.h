/* iperf2.h: ending an iperf 2 upload (the start is just 4 zero flag bytes per stream). */
#ifndef QP_IPERF2_H
#define QP_IPERF2_H

#include <stddef.h>

#include "run.h"

/* Shut down writing on every stream and wait (until timeout_s) for the server's EOF;
 * 0, or -1 with a message if some server did not close in time. */
int iperf2_finish(qp_run *r, double timeout_s, char *err, size_t errlen);

#endif

/* iperf2.c: the iperf 2 end of test: shutdown(SHUT_WR), then wait for EOF. */
#include "iperf2.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* Drain fd until EOF or deadline; 0 on EOF or reset, -1 on timeout. */
static int wait_eof(int fd, double deadline, char *err, size_t errlen)
{
    char buf[4096];

    for (;;) {
        int w = net_wait_readable(fd, deadline, err, errlen);
        ssize_t n;

        if (w <= 0)
            return -1;
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 0;
    }
}

/* Shut down writing on every stream and wait (until timeout_s) for the server's EOF;
 * 0, or -1 with a message if some server did not close in time. */
int iperf2_finish(qp_run *r, double timeout_s, char *err, size_t errlen)
{
    double deadline = net_now() + timeout_s;
    int rc = 0;

    for (int i = 0; i < r->n; i++)
        shutdown(r->streams[i].fd, SHUT_WR);
    for (int i = 0; i < r->n; i++) {
        if (wait_eof(r->streams[i].fd, deadline, err, errlen) < 0) {
            snprintf(err, errlen, "the iperf 2 server did not close stream %d in time",
                     r->streams[i].id);
            rc = -1;
        }
    }
    return rc;
}

/* net.h: sockets with deadlines (in the spirit of redis's anet.c). */
#ifndef QP_NET_H
#define QP_NET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Error kinds so callers can map them onto EVENTS.md codes. */
enum {
    NET_OK = 0,
    NET_ERR_DNS = -2,
    NET_ERR_REFUSED = -3,
    NET_ERR_TIMEOUT = -4,
    NET_ERR_EOF = -5,
    NET_ERR_IO = -6,
    NET_ERR_INTR = -7,
    NET_ERR_CC = -8                 /* TCP_CONGESTION refused the algorithm */
};

/* A resolved target address. */
typedef struct {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char text[64];              /* numeric address */
} net_addr;

/* Set by the signal handler; blocking waits give up with NET_ERR_INTR when it is set. */
extern volatile sig_atomic_t net_interrupted;

/* Monotonic clock in seconds. */
double net_now(void);

/* Resolve host:port (IPv4, IPv6, names) within timeout_s into up to max addresses in the
 * resolver's order; returns how many (>= 1), NET_ERR_DNS or NET_ERR_INTR. */
int net_resolve(const char *host, int port, double timeout_s, net_addr *out, int max,
                char *err, size_t errlen);

/* The EVENTS.md error code for a net_connect failure rc: connect_refused, connect_timeout,
 * interrupted or io. */
const char *net_connect_code(int rc);

/* Turn off Nagle on fd: single state bytes must not wait. */
void net_set_nodelay(int fd);

/* Connect a blocking TCP socket to a, giving up after timeout_s; sndbuf > 0 sets
 * SO_SNDBUF before connect, cc != NULL sets TCP_CONGESTION. Returns fd or NET_ERR_*. */
int net_connect(const net_addr *a, double timeout_s, int sndbuf, const char *cc,
                char *err, size_t errlen);

/* Write all of buf before deadline (monotonic seconds); NET_OK or NET_ERR_*. */
int net_write_all(int fd, const void *buf, size_t len, double deadline, char *err, size_t errlen);

/* Wait until fd is readable or deadline passes; 1 readable, 0 timeout, NET_ERR_*. */
int net_wait_readable(int fd, double deadline, char *err, size_t errlen);

/* A small buffered reader: state bytes and JSON often share one segment. */
typedef struct {
    int fd;
    unsigned char buf[4096];
    size_t start, end;
    uint64_t total;             /* bytes ever received on fd */
    int reset;                  /* the connection ended with a reset (ECONNRESET) */
} net_reader;

/* Attach a reader to fd. */
void net_reader_init(net_reader *r, int fd);

/* Read exactly len bytes before deadline; NET_OK, NET_ERR_EOF (got is set) or NET_ERR_*. */
int net_read_exact(net_reader *r, void *out, size_t len, size_t *got, double deadline,
                   char *err, size_t errlen);

/* Bytes already buffered in the reader. */
size_t net_reader_pending(const net_reader *r);

#endif

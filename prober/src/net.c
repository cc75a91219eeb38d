/* net.c: name resolution, connect with a deadline, deadline-bounded reads and writes. */
#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t net_interrupted = 0;

/* Monotonic clock in seconds. */
double net_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds left until deadline, for poll(); never negative. */
static int ms_left(double deadline)
{
    double left = deadline - net_now();

    if (left <= 0)
        return 0;
    if (left > 3600)
        return 3600 * 1000;
    return (int)(left * 1000.0) + 1;
}

/* One getaddrinfo call run on its own thread, so that the caller can stop waiting: glibc's
 * resolver has no deadline of its own, and a silent DNS server would hang the prober. Whoever
 * finishes last (the thread, or a caller that gave up) frees the job. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, abandoned, rc, err_no;
    char host[256], port[16];
    struct addrinfo *res;
} resolve_job;

/* Thread body: resolve, publish the answer, free the job if the caller gave up. */
static void *resolve_thread(void *arg)
{
    resolve_job *j = arg;
    struct addrinfo hints, *res = NULL;
    int rc, abandoned;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(j->host, j->port, &hints, &res);
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->err_no = errno;
    j->res = res;
    j->done = 1;
    abandoned = j->abandoned;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) {
        if (res)
            freeaddrinfo(res);
        free(j);
    }
    return NULL;
}

/* Wait for the job until the monotonic deadline; 1 done, 0 gave up (job now the thread's). */
static int resolve_wait(resolve_job *j, double timeout_s)
{
    double deadline = net_now() + timeout_s;
    int done;

    pthread_mutex_lock(&j->mu);
    while (!j->done && net_now() < deadline && !net_interrupted) {
        struct timespec ts;
        double left = deadline - net_now();

        /* Short real-time waits, checked against the monotonic clock: immune to clock steps. */
        clock_gettime(CLOCK_REALTIME, &ts);
        left = left < 0.05 ? left : 0.05;
        ts.tv_nsec += (long)(left * 1e9);
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    done = j->done;
    if (!done)
        j->abandoned = 1;
    pthread_mutex_unlock(&j->mu);
    return done;
}

/* getaddrinfo for host:port with a deadline; 0 with *res set, or NET_ERR_DNS / NET_ERR_INTR. */
static int resolve_deadline(const char *host, int port, double timeout_s, struct addrinfo **res,
                            char *err, size_t errlen)
{
    resolve_job *j = calloc(1, sizeof(*j));
    pthread_t tid;
    int rc = NET_ERR_DNS;

    if (!j || strlen(host) >= sizeof(j->host)) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, j ? "name too long" : "out of memory");
        goto fail;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    snprintf(j->host, sizeof(j->host), "%s", host);
    snprintf(j->port, sizeof(j->port), "%d", port);
    if (pthread_create(&tid, NULL, resolve_thread, j) != 0) {
        snprintf(err, errlen, "cannot resolve '%s': no thread for the resolver", host);
        goto fail;
    }
    pthread_detach(tid);
    if (!resolve_wait(j, timeout_s)) {
        /* The job is the thread's now: it frees it when getaddrinfo returns. */
        if (net_interrupted) {
            snprintf(err, errlen, "interrupted");
            return NET_ERR_INTR;
        }
        snprintf(err, errlen, "cannot resolve '%s': no answer from the resolver within %.1f s",
                 host, timeout_s);
        return NET_ERR_DNS;
    }
    if (j->rc != 0 || !j->res) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host,
                 j->rc == EAI_SYSTEM ? strerror(j->err_no) : gai_strerror(j->rc));
        if (j->res)
            freeaddrinfo(j->res);
        goto fail;
    }
    *res = j->res;
    rc = 0;
fail:
    free(j);
    return rc;
}

/* Resolve host:port (IPv4, IPv6, names) within timeout_s into up to max addresses in the
 * resolver's order; returns how many (>= 1), NET_ERR_DNS or NET_ERR_INTR. */
int net_resolve(const char *host, int port, double timeout_s, net_addr *out, int max,
                char *err, size_t errlen)
{
    struct addrinfo *res = NULL;
    int rc, n = 0;

    rc = resolve_deadline(host, port, timeout_s, &res, err, errlen);
    if (rc < 0)
        return rc;
    for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(out[n].addr))
            continue;
        memcpy(&out[n].addr, ai->ai_addr, ai->ai_addrlen);
        out[n].addrlen = ai->ai_addrlen;
        if (getnameinfo(ai->ai_addr, ai->ai_addrlen, out[n].text, sizeof(out[n].text), NULL,
                        0, NI_NUMERICHOST) != 0)
            snprintf(out[n].text, sizeof(out[n].text), "%s", host);
        n++;
    }
    freeaddrinfo(res);
    if (n == 0) {
        snprintf(err, errlen, "cannot resolve '%s': no usable address", host);
        return NET_ERR_DNS;
    }
    return n;
}

/* The EVENTS.md error code for a net_connect failure rc. */
const char *net_connect_code(int rc)
{
    if (rc == NET_ERR_REFUSED)
        return "connect_refused";
    if (rc == NET_ERR_TIMEOUT)
        return "connect_timeout";
    if (rc == NET_ERR_INTR)
        return "interrupted";
    return "io";
}

/* Turn off Nagle on fd: single state bytes must not wait. */
void net_set_nodelay(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Wait for a non-blocking connect on fd to finish; NET_OK or NET_ERR_*. */
static int wait_connected(int fd, const net_addr *a, double deadline, char *err, size_t errlen)
{
    int soerr = 0;
    socklen_t sl = sizeof(soerr);

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int n = poll(&p, 1, ms_left(deadline));

        if (n < 0 && errno == EINTR) {
            if (net_interrupted) {
                snprintf(err, errlen, "interrupted while connecting");
                return NET_ERR_INTR;
            }
            continue;
        }
        if (n < 0) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            return NET_ERR_IO;
        }
        if (n == 0) {
            snprintf(err, errlen, "connect to %s port %d: no answer within the timeout",
                     a->text, ntohs(((struct sockaddr_in *)&a->addr)->sin_port));
            return NET_ERR_TIMEOUT;
        }
        break;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr == 0)
        return NET_OK;
    snprintf(err, errlen, "connect to %s port %d: %s", a->text,
             ntohs(((struct sockaddr_in *)&a->addr)->sin_port), strerror(soerr));
    if (soerr == ECONNREFUSED)
        return NET_ERR_REFUSED;
    if (soerr == ETIMEDOUT)
        return NET_ERR_TIMEOUT;
    return NET_ERR_IO;
}

/* Set socket options that must precede connect; NET_OK or NET_ERR_IO. */
static int pre_connect_opts(int fd, int sndbuf, const char *cc, char *err, size_t errlen)
{
    if (sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0) {
        snprintf(err, errlen, "setsockopt SO_SNDBUF %d: %s", sndbuf, strerror(errno));
        return NET_ERR_IO;
    }
    if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) < 0) {
        snprintf(err, errlen, "setsockopt TCP_CONGESTION '%s': %s", cc, strerror(errno));
        return NET_ERR_CC;
    }
    return NET_OK;
}

/* Connect a blocking TCP socket to a, giving up after timeout_s; sndbuf > 0 sets
 * SO_SNDBUF before connect, cc != NULL sets TCP_CONGESTION. Returns fd or NET_ERR_*. */
int net_connect(const net_addr *a, double timeout_s, int sndbuf, const char *cc,
                char *err, size_t errlen)
{
    int fd, rc, flags;

    fd = socket(a->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return NET_ERR_IO;
    }
    rc = pre_connect_opts(fd, sndbuf, cc, err, errlen);
    if (rc != NET_OK)
        goto fail;
    if (connect(fd, (const struct sockaddr *)&a->addr, a->addrlen) < 0) {
        if (errno != EINPROGRESS) {
            rc = errno == ECONNREFUSED ? NET_ERR_REFUSED : NET_ERR_IO;
            snprintf(err, errlen, "connect to %s port %d: %s", a->text,
                     ntohs(((struct sockaddr_in *)&a->addr)->sin_port), strerror(errno));
            goto fail;
        }
        rc = wait_connected(fd, a, net_now() + timeout_s, err, errlen);
        if (rc != NET_OK)
            goto fail;
    }
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
fail:
    close(fd);
    return rc;
}

/* Wait until fd has one of events or deadline passes; 1 ready, 0 timeout, NET_ERR_*. */
static int wait_for(int fd, short events, double deadline, char *err, size_t errlen)
{
    for (;;) {
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, ms_left(deadline));

        if (n > 0)
            return 1;
        if (n == 0)
            return 0;
        if (errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            return NET_ERR_IO;
        }
        if (net_interrupted) {
            snprintf(err, errlen, "interrupted");
            return NET_ERR_INTR;
        }
    }
}

/* Wait until fd is readable or deadline passes; 1 readable, 0 timeout, NET_ERR_*. */
int net_wait_readable(int fd, double deadline, char *err, size_t errlen)
{
    return wait_for(fd, POLLIN, deadline, err, errlen);
}

/* Write all of buf before deadline (monotonic seconds); NET_OK or NET_ERR_*. */
int net_write_all(int fd, const void *buf, size_t len, double deadline, char *err, size_t errlen)
{
    const char *p = buf;

    while (len > 0) {
        int w = wait_for(fd, POLLOUT, deadline, err, errlen);
        ssize_t n;

        if (w < 0)
            return w;
        if (w == 0) {
            snprintf(err, errlen, "write to the server timed out");
            return NET_ERR_TIMEOUT;
        }
        n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            snprintf(err, errlen, "write to the server: %s", strerror(errno));
            return NET_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return NET_OK;
}

/* Attach a reader to fd. */
void net_reader_init(net_reader *r, int fd)
{
    r->fd = fd;
    r->start = r->end = 0;
    r->total = 0;
    r->reset = 0;
}

/* Bytes already buffered in the reader. */
size_t net_reader_pending(const net_reader *r)
{
    return r->end - r->start;
}

/* Refill r's buffer with whatever one recv gives before deadline; NET_OK or NET_ERR_*. */
static int reader_fill(net_reader *r, double deadline, char *err, size_t errlen)
{
    int w = net_wait_readable(r->fd, deadline, err, errlen);
    ssize_t n;

    if (w < 0)
        return w;
    if (w == 0) {
        snprintf(err, errlen, "no answer from the server within the timeout");
        return NET_ERR_TIMEOUT;
    }
    if (r->start == r->end)
        r->start = r->end = 0;
    n = recv(r->fd, r->buf + r->end, sizeof(r->buf) - r->end, MSG_DONTWAIT);
    if (n == 0) {
        snprintf(err, errlen, "the server closed the connection");
        return NET_ERR_EOF;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return NET_OK;
    if (n < 0) {
        snprintf(err, errlen, "read from the server: %s", strerror(errno));
        r->reset = errno == ECONNRESET;
        return errno == ECONNRESET ? NET_ERR_EOF : NET_ERR_IO;
    }
    r->end += (size_t)n;
    r->total += (uint64_t)n;
    return NET_OK;
}

/* Read exactly len bytes before deadline; NET_OK, NET_ERR_EOF (got is set) or NET_ERR_*. */
int net_read_exact(net_reader *r, void *out, size_t len, size_t *got, double deadline,
                   char *err, size_t errlen)
{
    unsigned char *o = out;
    size_t done = 0;
    int rc = NET_OK;

    while (done < len) {
        size_t avail = r->end - r->start, take;

        if (avail == 0) {
            if (r->end == sizeof(r->buf))
                r->start = r->end = 0;
            rc = reader_fill(r, deadline, err, errlen);
            if (rc != NET_OK)
                break;
            continue;
        }
        take = avail < len - done ? avail : len - done;
        memcpy(o + done, r->buf + r->start, take);
        r->start += take;
        done += take;
    }
    if (got)
        *got = done;
    return rc;
}

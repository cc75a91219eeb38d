/* delayline.c: a userspace WAN path between two network namespaces.
 *
 * netem is not in this kernel, so the path lab emulates one: a TUN device in
 * the near namespace and one in the far namespace, and this process between
 * them. Each direction is a drop-tail bottleneck (rate, queue in bytes), then a
 * fixed one-way propagation delay, with optional seeded random loss at the
 * entry. Packets leave at serialization finish + delay (+ optional per-packet
 * jitter, clamped so a packet never leaves before the one ahead of it): release
 * times are non-decreasing per direction, so a FIFO byte ring is the time-ordered
 * queue and packets never reorder. With --jitter-order netem each packet keeps its own
 * draw, as netem's time-sorted queue does, and overtakes the ones ahead of it that drew
 * more: the ring stays in arrival order and a heap of release times says which is due. An
 * optional open-loop cross-traffic source
 * (on/off, constant rate while on) occupies the same bottleneck and queue. An
 * optional CoDel (RFC 8289) drops at the head of that queue instead of waiting for it to
 * fill, or PIE (RFC 8033) at its tail (dlaqm.c). Optional slotting, after netem's `slot`,
 * releases packets in bursts as a Wi-Fi link's aggregation does: a packet due when no slot
 * is open waits for the next one, a random gap later, and each slot carries at most so many
 * packets or bytes (FIFO order only).
 *
 * Counters are printed as one JSON line on stdout on SIGUSR1 and on exit.
 * Usage: see usage() below; labctl.py (same directory) is the normal caller. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "dlaqm.h"
#include "dlring.h"

#define READ_MAX 65536u      /* largest IP packet a TUN can hand us */
#define RING_MIN (8u << 20)
#define RING_MAX ((size_t)1 << 30)

/* in the order choice_arg() returns their names */
enum { JITTER_UNIFORM, JITTER_NORMAL };
enum { ORDER_FIFO, ORDER_NETEM };
static const char *const JITTER_DISTS[] = { "uniform", "normal" };
static const char *const JITTER_ORDERS[] = { "fifo", "netem" };

typedef struct {
    double rate_bps;         /* 0 = no bottleneck */
    uint64_t delay_ns;
    uint64_t queue_bytes;
    double loss;
    uint64_t jitter_ns;      /* uniform: +/- this; normal: this is the std-dev */
    int jitter_dist;
    int jitter_order;        /* ORDER_FIFO: never reorder; ORDER_NETEM: each its own draw */
    double cross_bps;        /* open-loop cross traffic while on; 0 = none */
    uint64_t cross_on_ns, cross_off_ns;   /* off 0 = always on */
    uint32_t cross_pkt;      /* bytes per cross packet */
    aqm_conf aqm;            /* CoDel or PIE at the bottleneck (dlaqm.c) */
    uint64_t slot_min_ns, slot_max_ns;    /* gap before a slot opens; max 0 = no slotting */
    uint32_t slot_packets, slot_bytes;    /* a slot's budget; 0 = no limit */
} dir_conf;

typedef struct {
    uint64_t rx_packets, rx_bytes, fwd_packets, fwd_bytes;
    uint64_t drop_queue_packets, drop_queue_bytes;
    uint64_t drop_loss_packets, drop_loss_bytes;
    uint64_t drop_overflow_packets, write_errors;
    uint64_t max_backlog_bytes, min_drop_backlog_bytes;
    uint64_t late_max_ns, late_sum_ns;
    uint64_t jitter_clamped_packets;      /* held back to keep FIFO order */
    uint64_t jitter_reordered_packets;    /* netem order: due before one ahead of them */
    uint64_t extra_n;
    double extra_sum_ns, extra_sq_ns;     /* applied delay beyond the fixed one */
    uint64_t cross_packets, cross_bytes, cross_drop_packets, cross_drop_bytes;
    uint64_t drop_aqm_packets, drop_aqm_bytes;
    uint64_t sojourn_n;
    double sojourn_sum_ns;                /* queueing delay of the packets the queue kept */
    uint64_t slots, slot_full;            /* slots opened; of them, closed by their budget */
} dir_stats;

typedef struct {
    const char *name;
    int in_fd, out_fd;
    dir_conf conf;
    uint64_t link_free_ns;   /* when the bottleneck finishes its last packet */
    uint64_t last_release_ns;
    uint64_t cross_next_ns;  /* arrival time of the next cross packet */
    uint64_t slot_next_ns;   /* when the next (or current) slot opens; 0 before the first */
    int64_t slot_packets_left, slot_bytes_left;
    ring q;
    aqm_state aqm;
    dir_stats st;
} direction;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t start_ns;

/* Monotonic time in nanoseconds. */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Uniform double in [0, 1) from xorshift64*: seeded so loss runs repeat. */
static double rng_uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* Bytes waiting for the bottleneck at time t (the drop-tail queue's fill). */
static uint64_t backlog_bytes(const direction *d, uint64_t t)
{
    if (d->conf.rate_bps <= 0 || d->link_free_ns <= t)
        return 0;
    return (uint64_t)((double)(d->link_free_ns - t) * d->conf.rate_bps / 8e9);
}

/* A standard normal deviate (Box-Muller) from the seeded generator. */
static double rng_normal(void)
{
    double u1 = 1.0 - rng_uniform();   /* in (0, 1]: the log stays finite */
    double u2 = rng_uniform();
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Take `len` bytes arriving at t into the bottleneck: 1 with the time its last bit leaves
 * in *finish; 0 if the drop-tail queue is too full to hold it; -1 if the AQM drops it. */
static int bottleneck(direction *d, uint64_t len, uint64_t t, uint64_t *finish)
{
    *finish = t;
    if (d->conf.rate_bps <= 0)
        return 1;
    uint64_t backlog = backlog_bytes(d, t);
    if (backlog + len > d->conf.queue_bytes) {
        if (d->st.min_drop_backlog_bytes == 0 || backlog + len < d->st.min_drop_backlog_bytes)
            d->st.min_drop_backlog_bytes = backlog + len;
        return 0;
    }
    uint64_t begin = d->link_free_ns > t ? d->link_free_ns : t;
    if (aqm_drop(&d->conf.aqm, &d->aqm, t, d->link_free_ns, backlog, (uint32_t)len, rng_uniform))
        return -1;
    *finish = begin + (uint64_t)((double)len * 8e9 / d->conf.rate_bps);
    d->link_free_ns = *finish;
    d->st.sojourn_n++;
    d->st.sojourn_sum_ns += (double)(begin - t);
    if (backlog + len > d->st.max_backlog_bytes)
        d->st.max_backlog_bytes = backlog + len;
    return 1;
}

/* Feed the bottleneck every cross packet due before t. Open loop: the source never
 * slows down, and what the full queue drops is lost. Doing this lazily, just before
 * each real packet, gives that packet exactly the queue it would have found. */
static void cross_until(direction *d, uint64_t t)
{
    const dir_conf *c = &d->conf;
    if (c->cross_bps <= 0 || c->rate_bps <= 0)
        return;
    uint64_t gap = (uint64_t)((double)c->cross_pkt * 8e9 / c->cross_bps);
    uint64_t period = c->cross_on_ns + c->cross_off_ns;
    while (d->cross_next_ns <= t) {
        uint64_t a = d->cross_next_ns, finish;
        uint64_t phase = c->cross_off_ns ? (a - start_ns) % period : 0;
        if (phase >= c->cross_on_ns) {          /* off: skip to the next on period */
            d->cross_next_ns = a - phase + period;
            continue;
        }
        if (bottleneck(d, c->cross_pkt, a, &finish) > 0) {
            d->st.cross_packets++;
            d->st.cross_bytes += c->cross_pkt;
        } else {
            d->st.cross_drop_packets++;
            d->st.cross_drop_bytes += c->cross_pkt;
        }
        d->cross_next_ns = a + (gap ? gap : 1);
    }
}

/* Schedule the next slot a random gap (uniform in [min, max]) after t, its budget full. */
static void open_slot(direction *d, uint64_t t)
{
    const dir_conf *c = &d->conf;
    double gap = (double)c->slot_min_ns + (double)(c->slot_max_ns - c->slot_min_ns) * rng_uniform();

    d->slot_next_ns = t + (uint64_t)gap;
    d->slot_packets_left = c->slot_packets ? c->slot_packets : INT64_MAX;
    d->slot_bytes_left = c->slot_bytes ? c->slot_bytes : INT64_MAX;
    d->st.slots++;
}

/* When a packet due at `due` leaves under slotting: with the next slot, which opens a gap
 * after the packet fell due if the slot before had already opened by then (netem redraws a
 * slot that opened with nothing due), or after the one before ran out of budget. Slot times
 * only move forward, so FIFO release times stay in order. */
static uint64_t slot_release(direction *d, uint64_t due, uint32_t len)
{
    uint64_t release;

    if (!d->conf.slot_max_ns)
        return due;
    if (d->slot_next_ns < due)
        open_slot(d, due);
    release = d->slot_next_ns;
    d->slot_packets_left--;
    d->slot_bytes_left -= len;
    if (d->slot_packets_left <= 0 || d->slot_bytes_left <= 0) {
        d->st.slot_full++;
        open_slot(d, release);
    }
    return release;
}

/* When a packet that left the bottleneck at `finish` is released: the fixed delay plus
 * jitter, but (FIFO order) never before the packet ahead of it, then the next slot's
 * opening when slotting. */
static uint64_t release_time(direction *d, uint64_t finish, uint32_t len)
{
    const dir_conf *c = &d->conf;
    double delay = (double)c->delay_ns;
    if (c->jitter_ns) {
        double j = (double)c->jitter_ns;
        /* a normal draw is cut at 4 std-devs, as netem's table is: the ring's size allows
         * for that much */
        delay += c->jitter_dist == JITTER_NORMAL ? j * fmax(-4.0, fmin(4.0, rng_normal()))
                                                 : j * (2.0 * rng_uniform() - 1.0);
        if (delay < 0)
            delay = 0;
    }
    uint64_t release = finish + (uint64_t)delay;
    if (release < d->last_release_ns && c->jitter_order == ORDER_NETEM)
        d->st.jitter_reordered_packets++;
    else if (release < d->last_release_ns) {
        release = d->last_release_ns;
        d->st.jitter_clamped_packets++;
    }
    release = slot_release(d, release, len);
    if (release > d->last_release_ns)
        d->last_release_ns = release;
    double extra = (double)(release - finish) - (double)c->delay_ns;
    d->st.extra_n++;
    d->st.extra_sum_ns += extra;
    d->st.extra_sq_ns += extra * extra;
    return release;
}

/* Decide the fate of one packet just read into the ring's tail. */
static void admit(direction *d, uint32_t len, uint64_t t)
{
    d->st.rx_packets++;
    d->st.rx_bytes += len;
    if (d->conf.loss > 0 && rng_uniform() < d->conf.loss) {
        d->st.drop_loss_packets++;
        d->st.drop_loss_bytes += len;
        return;
    }
    cross_until(d, t);
    uint64_t finish;
    int fate = bottleneck(d, len, t, &finish);
    if (fate == 0) {
        d->st.drop_queue_packets++;
        d->st.drop_queue_bytes += len;
        return;
    }
    if (fate < 0) {
        d->st.drop_aqm_packets++;
        d->st.drop_aqm_bytes += len;
        return;
    }
    ring_commit(&d->q, release_time(d, finish, len), len);
}

/* Read every packet the TUN has ready into this direction's queue. */
static int drain_input(direction *d)
{
    static uint8_t scratch[READ_MAX];
    for (;;) {
        uint8_t *slot = ring_reserve(&d->q, align16(HDR_SIZE + READ_MAX));
        uint8_t *dst = slot ? slot + HDR_SIZE : scratch;
        ssize_t n = read(d->in_fd, dst, READ_MAX);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            perror("delayline: read");
            return -1;
        }
        if (n == 0)
            return 0;
        if (!slot) {
            d->st.rx_packets++;
            d->st.rx_bytes += (uint64_t)n;
            d->st.drop_overflow_packets++;
            continue;
        }
        admit(d, (uint32_t)n, now_ns());
    }
}

/* Write one due packet out at t, counting how late it left. */
static void send_packet(direction *d, ring_hdr *h, uint64_t t)
{
    uint64_t late = t - h->release_ns;
    if (late > d->st.late_max_ns)
        d->st.late_max_ns = late;
    d->st.late_sum_ns += late;
    if (write(d->out_fd, (uint8_t *)h + HDR_SIZE, h->len) == (ssize_t)h->len) {
        d->st.fwd_packets++;
        d->st.fwd_bytes += h->len;
    } else {
        d->st.write_errors++;
    }
}

/* Write out every packet whose release time has come; return the next one's, or 0. In
 * netem order the heap says which are due, wherever they sit in the ring, and the ring
 * frees the written ones once they reach its head. */
static uint64_t release_due(direction *d, uint64_t t)
{
    ring *r = &d->q;
    ring_hdr *h;
    if (r->due) {
        while ((h = ring_take_due(r, t)) != NULL)
            send_packet(d, h, t);
        return ring_settle(r);
    }
    while ((h = ring_peek(r)) != NULL) {
        if (h->release_ns > t)
            return h->release_ns;
        send_packet(d, h, t);
        ring_pop(r, h);
    }
    return 0;
}

/* Print one direction's configuration and counters as a JSON object. */
static void print_dir(FILE *f, const direction *d)
{
    const dir_stats *s = &d->st;
    fprintf(f, "\"%s\":{\"rate_bps\":%.0f,\"delay_us\":%llu,\"queue_bytes\":%llu,"
            "\"loss\":%g,\"rx_packets\":%llu,\"rx_bytes\":%llu,\"fwd_packets\":%llu,"
            "\"fwd_bytes\":%llu,\"drop_queue_packets\":%llu,\"drop_queue_bytes\":%llu,"
            "\"drop_loss_packets\":%llu,\"drop_loss_bytes\":%llu,"
            "\"drop_overflow_packets\":%llu,\"write_errors\":%llu,"
            "\"max_backlog_bytes\":%llu,\"min_drop_backlog_bytes\":%llu,"
            "\"late_max_us\":%.1f,\"late_mean_us\":%.1f,\"queued_packets\":%llu",
            d->name, d->conf.rate_bps, (unsigned long long)(d->conf.delay_ns / 1000),
            (unsigned long long)d->conf.queue_bytes, d->conf.loss,
            (unsigned long long)s->rx_packets, (unsigned long long)s->rx_bytes,
            (unsigned long long)s->fwd_packets, (unsigned long long)s->fwd_bytes,
            (unsigned long long)s->drop_queue_packets, (unsigned long long)s->drop_queue_bytes,
            (unsigned long long)s->drop_loss_packets, (unsigned long long)s->drop_loss_bytes,
            (unsigned long long)s->drop_overflow_packets, (unsigned long long)s->write_errors,
            (unsigned long long)s->max_backlog_bytes,
            (unsigned long long)s->min_drop_backlog_bytes, s->late_max_ns / 1e3,
            s->fwd_packets ? (double)s->late_sum_ns / (double)s->fwd_packets / 1e3 : 0.0,
            (unsigned long long)(d->q.packets - d->q.sent));
}

/* Print a direction's jitter, cross-traffic, AQM and slot settings and counters (JSON
 * members). */
static void print_extras(FILE *f, const direction *d)
{
    const dir_stats *s = &d->st;
    const dir_conf *c = &d->conf;
    uint64_t n = s->extra_n;
    double mean = n ? s->extra_sum_ns / (double)n : 0.0;
    double var = n ? s->extra_sq_ns / (double)n - mean * mean : 0.0;
    fprintf(f, ",\"jitter_us\":%.1f,\"jitter_dist\":\"%s\",\"jitter_order\":\"%s\","
            "\"jitter_clamped_packets\":%llu,\"jitter_reordered_packets\":%llu,"
            "\"extra_delay_mean_us\":%.1f,\"extra_delay_sd_us\":%.1f,"
            "\"cross_rate_bps\":%.0f,\"cross_on_ms\":%.1f,\"cross_off_ms\":%.1f,"
            "\"cross_packet_bytes\":%u,\"cross_packets\":%llu,\"cross_bytes\":%llu,"
            "\"cross_drop_packets\":%llu,\"cross_drop_bytes\":%llu,"
            "\"aqm\":\"%s\",\"codel_target_us\":%.1f,\"codel_interval_us\":%.1f,"
            "\"pie_target_us\":%.1f,\"pie_tupdate_us\":%.1f,"
            "\"drop_aqm_packets\":%llu,\"drop_aqm_bytes\":%llu,\"sojourn_mean_us\":%.1f,"
            "\"slot_min_us\":%.1f,\"slot_max_us\":%.1f,\"slot_packets\":%u,\"slot_bytes\":%u,"
            "\"slots\":%llu,\"slots_full\":%llu}",
            (double)c->jitter_ns / 1e3, c->jitter_dist == JITTER_NORMAL ? "normal" : "uniform",
            c->jitter_order == ORDER_NETEM ? "netem" : "fifo",
            (unsigned long long)s->jitter_clamped_packets,
            (unsigned long long)s->jitter_reordered_packets, mean / 1e3,
            var > 0 ? sqrt(var) / 1e3 : 0.0, c->cross_bps, (double)c->cross_on_ns / 1e6,
            (double)c->cross_off_ns / 1e6, c->cross_pkt, (unsigned long long)s->cross_packets,
            (unsigned long long)s->cross_bytes, (unsigned long long)s->cross_drop_packets,
            (unsigned long long)s->cross_drop_bytes, aqm_name(c->aqm.kind),
            (double)c->aqm.codel_target_ns / 1e3, (double)c->aqm.codel_interval_ns / 1e3,
            (double)c->aqm.pie_target_ns / 1e3, (double)c->aqm.pie_tupdate_ns / 1e3,
            (unsigned long long)s->drop_aqm_packets, (unsigned long long)s->drop_aqm_bytes,
            s->sojourn_n ? s->sojourn_sum_ns / (double)s->sojourn_n / 1e3 : 0.0,
            (double)c->slot_min_ns / 1e3, (double)c->slot_max_ns / 1e3, c->slot_packets,
            c->slot_bytes, (unsigned long long)s->slots, (unsigned long long)s->slot_full);
}

/* Print the stats line: both directions' counters, flushed at once. */
static void print_stats(const char *event, direction *fwd, direction *rev)
{
    uint64_t t = now_ns();
    /* Cross traffic is fed in lazily: bring it up to now so idle periods count too. */
    cross_until(fwd, t);
    cross_until(rev, t);
    printf("{\"event\":\"%s\",\"t\":%.6f,", event, (double)(t - start_ns) / 1e9);
    print_dir(stdout, fwd);
    print_extras(stdout, fwd);
    putchar(',');
    print_dir(stdout, rev);
    print_extras(stdout, rev);
    printf("}\n");
    fflush(stdout);
}

/* Create a TUN device named `name` inside the namespace at `ns_path`. */
static int open_tun_in(const char *ns_path, const char *name, int home_ns)
{
    int ns = open(ns_path, O_RDONLY | O_CLOEXEC);
    if (ns < 0 || setns(ns, CLONE_NEWNET) < 0) {
        fprintf(stderr, "delayline: cannot enter namespace %s: %s\n", ns_path, strerror(errno));
        return -1;
    }
    close(ns);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
        fprintf(stderr, "delayline: cannot create TUN %s in %s: %s\n", name, ns_path,
                strerror(errno));
        return -1;
    }
    if (setns(home_ns, CLONE_NEWNET) < 0) {
        perror("delayline: setns back");
        return -1;
    }
    return fd;
}

/* Print the command line help. */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: delayline --near-ns PATH --far-ns PATH [--near-dev NAME] [--far-dev NAME]\n"
            "                 [--rate BPS] [--delay-us US] [--queue BYTES] [--loss P]\n"
            "                 [--fwd-rate|--rev-rate BPS] [--fwd-delay-us|--rev-delay-us US]\n"
            "                 [--fwd-queue|--rev-queue BYTES] [--fwd-loss|--rev-loss P]\n"
            "                 [--jitter-us US] [--jitter-dist uniform|normal]\n"
            "                 [--jitter-order fifo|netem]\n"
            "                 [--cross-rate BPS] [--cross-on-ms MS] [--cross-off-ms MS]\n"
            "                 [--cross-pkt BYTES] [--aqm none|codel|pie]\n"
            "                 [--codel-target-us US] [--codel-interval-us US]\n"
            "                 [--pie-target-us US] [--pie-tupdate-us US]\n"
            "                 [--slot-min-us US] [--slot-max-us US] [--slot-packets N]\n"
            "                 [--slot-bytes BYTES]\n"
            "                 (each also with fwd-/rev-)\n"
            "                 [--seed N] [--rt-prio 0-99]\n"
            "  fwd = near -> far, rev = far -> near; the unprefixed options set both.\n"
            "  rate in bit/s (0 = unlimited), delay one-way in microseconds,\n"
            "  queue in bytes (drop-tail), loss a probability in [0, 1).\n"
            "  jitter: per-packet delay variation after the bottleneck, uniform in +/- US or\n"
            "  normal with std-dev US (default uniform; cut at 4 std-devs); order fifo (the\n"
            "  default): a packet never leaves before the one ahead of it, no reordering;\n"
            "  netem: each packet keeps its own draw and overtakes any that drew more.\n"
            "  cross: an open-loop source sharing the bottleneck and its queue: BPS while on,\n"
            "  on/off periods from the start (off 0 = always on), packets of 1500 bytes.\n"
            "  aqm codel: CoDel (RFC 8289) drops at the queue's head, target 5000 us and\n"
            "  interval 100000 us by default; the queue's size stays its hard limit.\n"
            "  aqm pie: PIE (RFC 8033, as Linux's sch_pie) drops arrivals with a probability\n"
            "  updated every tupdate from the queue's delay, target 15000 us and tupdate\n"
            "  15000 us by default, after a first burst of 150 ms.\n"
            "  slot (netem's, Wi-Fi-like aggregation): a packet due with no slot open waits\n"
            "  for the next, uniform in [min, max] us after it fell due or after the slot\n"
            "  before used its budget of packets / bytes (0 = no limit); FIFO order only.\n"
            "  --rt-prio N runs the loop SCHED_FIFO at priority N (0 = normal scheduling).\n"
            "  SIGUSR1 prints counters as JSON on stdout; so does exit (SIGTERM/SIGINT).\n");
}

/* Parse a non-negative number with its allowed range; exits with a message if bad. */
static double num_arg(const char *opt, const char *val, double lo, double hi)
{
    char *end = NULL;
    errno = 0;
    double v = val ? strtod(val, &end) : 0;
    if (!val || errno || end == val || *end || v < lo || v > hi) {
        fprintf(stderr, "delayline: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi,
                val ? val : "(nothing)");
        exit(2);
    }
    return v;
}

/* Parse one of n names: its index (the enums' order); exits with a message saying which are
 * allowed ("a or b", "a, b or c") if none of them. */
static int choice_arg(const char *opt, const char *val, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (val && !strcmp(val, names[k]))
            return k;
    fprintf(stderr, "delayline: %s needs ", opt);
    for (int k = 0; k < n; k++)
        fprintf(stderr, "%s%s", names[k], k == n - 1 ? "" : k == n - 2 ? " or " : ", ");
    fprintf(stderr, ", got '%s'\n", val ? val : "(nothing)");
    exit(2);
}

/* Apply one per-direction setting (key is an option name without its --, fwd-, rev-). */
static int set_dir(dir_conf *c, const char *opt, const char *key, const char *val)
{
    if (!strcmp(key, "rate"))
        c->rate_bps = num_arg(opt, val, 0, 1e12);
    else if (!strcmp(key, "delay-us"))
        c->delay_ns = (uint64_t)num_arg(opt, val, 0, 10e6) * 1000ull;
    else if (!strcmp(key, "queue"))
        c->queue_bytes = (uint64_t)num_arg(opt, val, 1500, 1e9);
    else if (!strcmp(key, "loss"))
        c->loss = num_arg(opt, val, 0, 0.999);
    else if (!strcmp(key, "jitter-us"))
        c->jitter_ns = (uint64_t)(num_arg(opt, val, 0, 1e6) * 1000.0);
    else if (!strcmp(key, "jitter-dist"))
        c->jitter_dist = choice_arg(opt, val, JITTER_DISTS, 2);
    else if (!strcmp(key, "jitter-order"))
        c->jitter_order = choice_arg(opt, val, JITTER_ORDERS, 2);
    else if (!strcmp(key, "cross-rate"))
        c->cross_bps = num_arg(opt, val, 0, 1e12);
    else if (!strcmp(key, "cross-on-ms"))
        c->cross_on_ns = (uint64_t)(num_arg(opt, val, 1, 3.6e6) * 1e6);
    else if (!strcmp(key, "cross-off-ms"))
        c->cross_off_ns = (uint64_t)(num_arg(opt, val, 0, 3.6e6) * 1e6);
    else if (!strcmp(key, "cross-pkt"))
        c->cross_pkt = (uint32_t)num_arg(opt, val, 64, 65535);
    else if (!strcmp(key, "aqm"))
        c->aqm.kind = choice_arg(opt, val, aqm_names, AQM_KINDS);
    else if (!strcmp(key, "codel-target-us"))
        c->aqm.codel_target_ns = (uint64_t)(num_arg(opt, val, 1, 1e7) * 1000.0);
    else if (!strcmp(key, "codel-interval-us"))
        c->aqm.codel_interval_ns = (uint64_t)(num_arg(opt, val, 1, 1e8) * 1000.0);
    else if (!strcmp(key, "pie-target-us"))
        c->aqm.pie_target_ns = (uint64_t)(num_arg(opt, val, 1, 1e7) * 1000.0);
    else if (!strcmp(key, "pie-tupdate-us"))
        c->aqm.pie_tupdate_ns = (uint64_t)(num_arg(opt, val, 1000, 1e7) * 1000.0);
    else if (!strcmp(key, "slot-min-us"))
        c->slot_min_ns = (uint64_t)(num_arg(opt, val, 0, 1e6) * 1000.0);
    else if (!strcmp(key, "slot-max-us"))
        c->slot_max_ns = (uint64_t)(num_arg(opt, val, 0, 1e6) * 1000.0);
    else if (!strcmp(key, "slot-packets"))
        c->slot_packets = (uint32_t)num_arg(opt, val, 0, 1e6);
    else if (!strcmp(key, "slot-bytes"))
        c->slot_bytes = (uint32_t)num_arg(opt, val, 0, 1e9);
    else
        return -1;
    return 0;
}

typedef struct {
    const char *near_ns, *far_ns, *near_dev, *far_dev;
    int rt_prio;
    dir_conf fwd, rev;
} options;

/* Exit 2 with a message if a direction's slot settings cannot work together: a gap range
 * upside down, a budget with no gap, or slots in netem order (a slot releases the packets
 * due before it in the order they came). */
static void check_slot(const char *dir, const dir_conf *c)
{
    const char *bad = NULL;

    if (c->slot_min_ns > c->slot_max_ns)
        bad = "slot-min-us is above slot-max-us (allowed: min <= max)";
    else if (!c->slot_max_ns && (c->slot_packets || c->slot_bytes))
        bad = "a slot budget needs slot-max-us above 0";
    else if (c->slot_max_ns && c->jitter_order == ORDER_NETEM)
        bad = "slots work in fifo jitter order only";
    if (!bad)
        return;
    fprintf(stderr, "delayline: %s: %s\n", dir, bad);
    exit(2);
}

/* Parse the command line into opts; exits 2 with a message on bad input. */
static void parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        i++;
        if (!strcmp(a, "--near-ns") && v) o->near_ns = v;
        else if (!strcmp(a, "--far-ns") && v) o->far_ns = v;
        else if (!strcmp(a, "--near-dev") && v) o->near_dev = v;
        else if (!strcmp(a, "--far-dev") && v) o->far_dev = v;
        else if (!strcmp(a, "--seed")) rng_state = (uint64_t)num_arg(a, v, 1, 1e18);
        else if (!strcmp(a, "--rt-prio")) o->rt_prio = (int)num_arg(a, v, 0, 99);
        else if (!strncmp(a, "--fwd-", 6) && !set_dir(&o->fwd, a, a + 6, v)) continue;
        else if (!strncmp(a, "--rev-", 6) && !set_dir(&o->rev, a, a + 6, v)) continue;
        else if (!strncmp(a, "--", 2) && !set_dir(&o->fwd, a, a + 2, v))
            set_dir(&o->rev, a, a + 2, v);
        else {
            fprintf(stderr, "delayline: unknown option or missing value: %s\n", a);
            usage(stderr);
            exit(2);
        }
    }
    if (!o->near_ns || !o->far_ns) {
        fprintf(stderr, "delayline: --near-ns and --far-ns are required\n");
        usage(stderr);
        exit(2);
    }
    check_slot("fwd", &o->fwd);
    check_slot("rev", &o->rev);
}

/* Size and allocate a direction's ring: queue plus the bytes in flight on the wire. */
static int setup_dir(direction *d, const char *name, int in_fd, int out_fd, dir_conf c)
{
    /* Bytes on the wire: rate x (delay + 4 jitter + a slot's gap), the normal tail included. */
    double wire = c.rate_bps > 0
                      ? c.rate_bps / 8.0 * (double)(c.delay_ns + 4 * c.jitter_ns + c.slot_max_ns) / 1e9
                      : 64e6;
    double cap = 2.0 * ((double)c.queue_bytes + wire) + RING_MIN;
    memset(d, 0, sizeof *d);
    d->name = name;
    d->in_fd = in_fd;
    d->out_fd = out_fd;
    d->conf = c;
    d->cross_next_ns = start_ns;
    aqm_init(&d->conf.aqm, &d->aqm, start_ns);
    size_t size = cap > (double)RING_MAX ? RING_MAX : align16((size_t)cap);
    if (ring_open(&d->q, size, c.jitter_order == ORDER_NETEM) < 0) {
        fprintf(stderr, "delayline: cannot allocate %zu bytes for the %s queue\n", d->q.cap, name);
        return -1;
    }
    return 0;
}

/* Block the signals we handle and return a signalfd for them. */
static int setup_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Arm the release timer for the earliest due packet of both directions. */
static void arm_timer(int tfd, uint64_t a, uint64_t b)
{
    uint64_t next = (a && b) ? (a < b ? a : b) : (a ? a : b);
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (next) {
        its.it_value.tv_sec = (time_t)(next / 1000000000ull);
        its.it_value.tv_nsec = (long)(next % 1000000000ull);
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Returns 1 to go on, 0 to exit; prints stats on SIGUSR1. */
static int handle_signals(int sfd, direction *fwd, direction *rev)
{
    struct signalfd_siginfo si;
    int go_on = 1;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGUSR1)
            print_stats("stats", fwd, rev);
        else
            go_on = 0;
    }
    return go_on;
}

/* The event loop: read both TUNs, release due packets, until a stop signal. */
static int run(direction *fwd, direction *rev, int sfd)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    int fds[4] = {fwd->in_fd, rev->in_fd, tfd, sfd};
    for (int i = 0; i < 4; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
            perror("delayline: epoll_ctl");
            return 1;
        }
    }
    for (;;) {
        struct epoll_event evs[4];
        int n = epoll_wait(ep, evs, 4, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == sfd && !handle_signals(sfd, fwd, rev))
                return 0;
            if ((fd == fwd->in_fd && drain_input(fwd) < 0) ||
                (fd == rev->in_fd && drain_input(rev) < 0))
                return 1;
            if (fd == tfd) {
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    return 1;
            }
        }
        uint64_t t = now_ns();
        arm_timer(tfd, release_due(fwd, t), release_due(rev, t));
    }
}

/* Ask for real-time scheduling so a busy box delays packets less; say so if refused. */
static void set_rt(int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    if (prio > 0 && sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
        fprintf(stderr, "delayline: SCHED_FIFO %d refused (%s): timing will be noisier\n", prio,
                strerror(errno));
}

/* Create both TUNs in their namespaces, then forward until told to stop. */
int main(int argc, char **argv)
{
    options o = {.near_dev = "qpl0", .far_dev = "qpl1"};
    o.fwd.queue_bytes = o.rev.queue_bytes = 1u << 20;
    o.fwd.cross_on_ns = o.rev.cross_on_ns = 1000000000ull;
    o.fwd.cross_pkt = o.rev.cross_pkt = 1500;
    o.fwd.aqm.codel_target_ns = o.rev.aqm.codel_target_ns = 5000000ull;        /* RFC 8289's */
    o.fwd.aqm.codel_interval_ns = o.rev.aqm.codel_interval_ns = 100000000ull;
    o.fwd.aqm.pie_target_ns = o.rev.aqm.pie_target_ns = 15000000ull;           /* RFC 8033's */
    o.fwd.aqm.pie_tupdate_ns = o.rev.aqm.pie_tupdate_ns = 15000000ull;
    parse_args(argc, argv, &o);
    /* The lab's parent (labctl) may die by SIGKILL: die with it, and say why. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    prctl(PR_SET_TIMERSLACK, 1UL);
    set_rt(o.rt_prio);
    int sfd = setup_signals();
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (sfd < 0 || home < 0) {
        perror("delayline: setup");
        return 1;
    }
    int near_fd = open_tun_in(o.near_ns, o.near_dev, home);
    int far_fd = near_fd < 0 ? -1 : open_tun_in(o.far_ns, o.far_dev, home);
    if (far_fd < 0)
        return 1;
    direction fwd, rev;
    start_ns = now_ns();
    if (setup_dir(&fwd, "fwd", near_fd, far_fd, o.fwd) < 0 ||
        setup_dir(&rev, "rev", far_fd, near_fd, o.rev) < 0)
        return 1;
    print_stats("ready", &fwd, &rev);
    int rc = run(&fwd, &rev, sfd);
    print_stats("exit", &fwd, &rev);
    ring_close(&fwd.q);
    ring_close(&rev.q);
    return rc;
}

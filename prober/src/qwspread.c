/* qwspread.c: the long-run share of the link that Reno or CUBIC keeps under random loss,
 * from the spread of cwnd, not from its mean. The mean-field floor (qw_loss_floor) reads TCP
 * at the mean window its loss response keeps (Mathis et al.; RFC 9438). When that window sits
 * above the BDP, the mean-field floor is the link. But random losses come in clusters, and
 * each cut scales cwnd by beta again: two cuts a round apart take CUBIC to 0.49 of its peak.
 * The link then idles until cwnd climbs back to the BDP, a packet or half a packet a round.
 *
 * An example from an htb draw: CUBIC on 20 Mbit/s x 8 ms with 0.2 % random loss and
 * 1500-byte frames. The window saw 3-4 loss cycles at the link's rate and converged at
 * 1.0 s (+-0.5 %). Over 20 s, clusters of cuts took cwnd to 4-7 packets in 3 or 4 of the
 * seconds, and the 20 s figures were 0.8 and 1.5 % lower.
 *
 * That share has no closed form once the buffer's top, several streams and CUBIC's clock
 * are in it. So the streams' cwnd is played round by round, with a fixed seed: random loss
 * per packet, a cut from the buffer's top when the summed cwnd overflows it, and each cc's
 * growth law between cuts. The result is a pure function of its inputs. */
#include "qwint.h"

#include <math.h>
#include <stdint.h>

#define SPREAD_EVENTS 400        /* cuts a stream takes in the measured part, summed */
#define SPREAD_WARMUP 40         /* ... and before it, from the starting window */
#define SPREAD_WORK 400000       /* stream-rounds played at most */
#define SPREAD_STREAMS 16        /* streams played at most (see qw_spread_share) */
#define SPREAD_MIN_CWND 2.0      /* Linux keeps cwnd at 2 packets at least after a cut */
#define SPREAD_GRID 16.0         /* inputs are rounded to 1/16 of an octave (see key_of) */
#define SPREAD_MEMO 32           /* rounded keys kept: a window's inputs move slowly */

/* One stream's cwnd and its cc's state, in packets and seconds. */
typedef struct {
    double cwnd, w_max, epoch_s, w_est;
} spread_stream;

/* The inputs as played: rounded so that every rounding lowers the share (see key_of). */
typedef struct {
    double beta, p, bdp_pkts, top_bdps, rtt_s;
    int streams;
} spread_key;

/* A uniform draw in [0, 1) from a 64-bit xorshift state. */
static double draw(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (double)(*x >> 11) * 0x1.0p-53;
}

/* Cut stream s by beta (CUBIC: fast convergence lowers W_max when cwnd fell short of it). */
static void cut(spread_stream *s, double beta, int cubic)
{
    if (cubic)
        s->w_max = s->cwnd < s->w_max ? s->cwnd * (1.0 + beta) / 2.0 : s->cwnd;
    s->cwnd = fmax(SPREAD_MIN_CWND, s->cwnd * beta);
    s->w_est = s->cwnd;
    s->epoch_s = 0;
}

/* Grow stream s over one round of round_s seconds: Reno a packet; CUBIC the larger of its
 * cubic curve and its Reno-friendly estimate (RFC 9438 sections 4.2-4.3: 3 (1 - beta) /
 * (1 + beta) packets a round), at most 1.5 x cwnd. */
static void grow(spread_stream *s, double beta, int cubic, double round_s)
{
    double k, t, target;

    if (!cubic) {
        s->cwnd += 1.0;
        return;
    }
    s->epoch_s += round_s;
    s->w_est += 3.0 * (1.0 - beta) / (1.0 + beta);
    k = cbrt(s->w_max * (1.0 - beta) / QW_CUBIC_C);
    t = s->epoch_s - k;
    target = fmax(QW_CUBIC_C * t * t * t + s->w_max, s->w_est);
    s->cwnd = fmin(fmax(target, s->cwnd), 1.5 * s->cwnd);
}

/* Play the key's streams and return the share of the link their summed cwnd kept: over
 * each round, cwnd over the larger of cwnd and the BDP (a round lasts the base round trip,
 * or cwnd / the link's rate while a queue stands). */
static double play(const spread_key *k)
{
    spread_stream st[SPREAD_STREAMS];
    int n = k->streams, cubic = k->beta > 0.6, events = 0;
    double top = k->bdp_pkts * k->top_bdps, sent = 0, room = 0;
    double per_packet = log1p(-k->p);
    uint64_t x = 0x9e3779b97f4a7c15ULL;

    for (int i = 0; i < n; i++)
        st[i] = (spread_stream){ .cwnd = top / n, .w_max = top / n, .w_est = top / n };
    for (long work = 0; work < SPREAD_WORK && events < SPREAD_WARMUP + SPREAD_EVENTS; work += n) {
        double sum = 0, round_s;

        for (int i = 0; i < n; i++)
            sum += st[i].cwnd;
        if (events >= SPREAD_WARMUP) {
            sent += sum;
            room += fmax(sum, k->bdp_pkts);
        }
        round_s = k->rtt_s * fmax(1.0, sum / k->bdp_pkts);
        for (int i = 0; i < n; i++) {
            /* the buffer's top drops from every stream's flight: a cut for each */
            if (sum > top || draw(&x) < -expm1(st[i].cwnd * per_packet)) {
                cut(&st[i], k->beta, cubic);
                events++;
            } else {
                grow(&st[i], k->beta, cubic, round_s);
            }
        }
    }
    return room > 0 ? fmin(1.0, sent / room) : 1.0;
}

/* Round v up (dir 1) or down (dir -1) to the grid of 1/SPREAD_GRID octave. */
static double to_grid(double v, int dir)
{
    double e = log2(v) * SPREAD_GRID;

    return exp2((dir > 0 ? ceil(e - 1e-9) : floor(e + 1e-9)) / SPREAD_GRID);
}

/* The key played for these inputs. A rounded input is played on the side that lowers the
 * share, so rounding only widens: the loss rate and the BDP up, the buffer's top and (for
 * CUBIC's clock) the round trip down. The top is one BDP at least: peaks that random loss
 * cut below the BDP are no buffer's top, and a buffer overflows only past the BDP. Streams
 * past SPREAD_STREAMS are played as that many, each with its share of the BDP: fewer streams
 * sum to a rougher cwnd, a lower share. */
static spread_key key_of(double beta, double p, double bdp_pkts, double top_bdps, int streams,
                         double rtt_s)
{
    spread_key k = { .beta = beta, .streams = streams < SPREAD_STREAMS ? streams : SPREAD_STREAMS };

    k.p = fmin(1.0, to_grid(p, 1));
    k.bdp_pkts = to_grid(bdp_pkts * k.streams / streams, 1);
    k.top_bdps = fmax(1.0, to_grid(top_bdps, -1));
    k.rtt_s = to_grid(rtt_s, -1);
    return k;
}

/* 1 if keys a and b are the same inputs. */
static int same_key(const spread_key *a, const spread_key *b)
{
    return a->beta == b->beta && a->p == b->p && a->bdp_pkts == b->bdp_pkts &&
           a->top_bdps == b->top_bdps && a->rtt_s == b->rtt_s && a->streams == b->streams;
}

/* The long-run share of the link (0-1] that streams Reno (beta 0.5) or CUBIC (beta 0.7)
 * flows keep at random loss p per packet, a BDP of bdp_pkts packets (all streams), a
 * buffer whose top is at top_bdps BDPs and a base round trip of rtt_s. Played once per
 * rounded key and kept: a window asks at every slice, and its inputs move slowly. */
double qw_spread_share(double beta, double p, double bdp_pkts, double top_bdps, int streams,
                       double rtt_s)
{
    static _Thread_local spread_key seen[SPREAD_MEMO];
    static _Thread_local double share[SPREAD_MEMO];
    static _Thread_local int filled, next;
    spread_key k;
    int i;

    if (beta <= 0 || beta >= 1 || p <= 0 || bdp_pkts <= 0 || rtt_s <= 0 || streams < 1)
        return 1.0;
    if (p >= 1)
        return 0.0;
    k = key_of(beta, p, bdp_pkts, top_bdps, streams, rtt_s);
    for (i = 0; i < filled; i++)
        if (same_key(&seen[i], &k))
            return share[i];
    i = next;
    seen[i] = k;
    share[i] = play(&k);
    next = (next + 1) % SPREAD_MEMO;
    filled += filled < SPREAD_MEMO;
    return share[i];
}

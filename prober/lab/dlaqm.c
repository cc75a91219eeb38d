/* dlaqm.c: CoDel and PIE for the delay line's bottleneck (see dlaqm.h).
 *
 * The bottleneck is a FIFO at a fixed rate, so a packet's wait and the moment it reaches the
 * head are known when it arrives. CoDel judges packets at the head: judging them in arrival
 * order at their head times is judging them in CoDel's dequeue order at its dequeue times,
 * and a packet dropped at the head takes no serialisation time, as here. PIE judges them at
 * the tail, on arrival, with a probability it updates every tupdate from the queue's delay;
 * the updates due before an arrival run first, when the queue holds only earlier arrivals,
 * so each reads the delay the queue had at its own time. */
#include "dlaqm.h"

#include <math.h>
#include <stddef.h>

#define PIE_ALPHA 0.125          /* RFC 8033 / sch_pie: per second of delay above target */
#define PIE_BETA 1.25            /* ... per second of delay growth since the last update */
#define PIE_MAX_BURST_NS 150000000ull   /* RFC 8033's MAX_BURST: 150 ms let through */
#define PIE_HIGH_DELAY_NS 250000000ull  /* above this the probability steps up by 2 % */

/* CoDel's next drop time after t with `count` drops in this dropping state. */
static uint64_t codel_control_law(const aqm_conf *c, uint64_t t, uint32_t count)
{
    return t + (uint64_t)((double)c->codel_interval_ns / sqrt((double)count));
}

/* CoDel's verdict (1 = drop) on the packet that reaches the queue's head at `head` after
 * waiting `sojourn` behind `ahead` bytes. RFC 8289 leaves the queue's state alone below one
 * packet of backlog after the head; the bytes ahead on arrival stand in for that. */
static int codel_drop(const aqm_conf *c, aqm_state *s, uint64_t head, uint64_t sojourn,
                      uint64_t ahead)
{
    int ok_to_drop = 0;

    if (sojourn < c->codel_target_ns || ahead <= s->maxpacket)
        s->first_above_ns = 0;
    else if (s->first_above_ns == 0)
        s->first_above_ns = head + c->codel_interval_ns;
    else if (head >= s->first_above_ns)
        ok_to_drop = 1;
    if (s->dropping) {
        if (!ok_to_drop) {
            s->dropping = 0;
            return 0;
        }
        if (head < s->drop_next_ns)
            return 0;
        s->count++;
        s->drop_next_ns = codel_control_law(c, s->drop_next_ns, s->count);
        return 1;
    }
    if (!ok_to_drop)
        return 0;
    /* re-entering soon after the last dropping state (its next drop may still be ahead:
     * a signed difference) resumes near its drop rate */
    uint32_t delta = s->count - s->lastcount;
    int64_t since = (int64_t)(head - s->drop_next_ns);
    s->count = delta > 1 && since < (int64_t)(16 * c->codel_interval_ns) ? delta : 1;
    s->lastcount = s->count;
    s->dropping = 1;
    s->drop_next_ns = codel_control_law(c, head, s->count);
    return 1;
}

/* PIE's probability update with the queue delay qdelay_ns (RFC 8033 section 4.2, with
 * sch_pie's scaling): small probabilities move in small steps, so a light load is not
 * answered with a burst of drops; from 10 % up a step is 2 % at most. */
static void pie_update(const aqm_conf *c, aqm_state *s, uint64_t qdelay_ns)
{
    double q = (double)qdelay_ns / 1e9, old = (double)s->pie_qdelay_old_ns / 1e9;
    double delta = PIE_ALPHA * (q - (double)c->pie_target_ns / 1e9) + PIE_BETA * (q - old);
    static const double decades[] = { 1e-2, 1e-3, 1e-4, 1e-5, 1e-6 };
    double scale = 1.0;

    if (s->pie_prob < 0.1) {
        scale = 0.5;
        for (size_t i = 0; i < sizeof decades / sizeof decades[0] && s->pie_prob < decades[i]; i++)
            scale /= 4;
    }
    delta *= scale;
    if (delta > 0.02 && s->pie_prob >= 0.1)
        delta = 0.02;
    if (qdelay_ns > PIE_HIGH_DELAY_NS)
        delta += 0.02;
    s->pie_prob = fmin(1.0, fmax(0.0, s->pie_prob + delta));
    if (qdelay_ns == 0 && s->pie_qdelay_old_ns == 0)
        s->pie_prob -= s->pie_prob / 64;     /* an idle queue: decay */
    s->pie_burst_ns = s->pie_burst_ns > c->pie_tupdate_ns ? s->pie_burst_ns - c->pie_tupdate_ns : 0;
    /* low delay twice running and nothing left to drop: a new burst is let through */
    if (2 * qdelay_ns < c->pie_target_ns && 2 * s->pie_qdelay_old_ns < c->pie_target_ns &&
        s->pie_prob == 0) {
        s->pie_burst_ns = PIE_MAX_BURST_NS;
        s->pie_accu = 0;
    }
    s->pie_qdelay_old_ns = qdelay_ns;
}

/* PIE's verdict (1 = drop) on a packet arriving behind `ahead` bytes that wait qdelay_ns
 * (sch_pie's pie_drop_early, derandomised: no drop until the probabilities summed since the
 * last drop reach 0.85, a certain one at 8.5). */
static int pie_drop(const aqm_conf *c, aqm_state *s, uint64_t qdelay_ns, uint64_t ahead,
                    double (*uniform)(void))
{
    if (s->pie_burst_ns > 0 || (2 * qdelay_ns < c->pie_target_ns && s->pie_prob < 0.2) ||
        ahead < 2ull * s->maxpacket)
        return 0;
    if (s->pie_prob == 0) {
        s->pie_accu = 0;
        return 0;
    }
    s->pie_accu += s->pie_prob;
    if (s->pie_accu < 0.85)
        return 0;
    if (s->pie_accu < 8.5 && uniform() >= s->pie_prob)
        return 0;
    s->pie_accu = 0;
    return 1;
}

/* Start an AQM's state at time t: PIE lets its first burst through. */
void aqm_init(const aqm_conf *c, aqm_state *s, uint64_t t)
{
    *s = (aqm_state){0};
    s->pie_burst_ns = PIE_MAX_BURST_NS;
    s->pie_next_update_ns = t + c->pie_tupdate_ns;
}

/* The AQM's verdict (1 = drop) on a packet arriving at t (see dlaqm.h). */
int aqm_drop(const aqm_conf *c, aqm_state *s, uint64_t t, uint64_t link_free_ns,
             uint64_t ahead, uint32_t len, double (*uniform)(void))
{
    uint64_t head = link_free_ns > t ? link_free_ns : t;

    if (len > s->maxpacket)
        s->maxpacket = len;
    if (c->kind == AQM_CODEL)
        return codel_drop(c, s, head, head - t, ahead);
    if (c->kind != AQM_PIE)
        return 0;
    for (; s->pie_next_update_ns <= t; s->pie_next_update_ns += c->pie_tupdate_ns) {
        uint64_t u = s->pie_next_update_ns;

        /* idle since and settled (nothing to drop, a full burst): every update up to t
         * would leave that as it is */
        if (link_free_ns <= u && s->pie_qdelay_old_ns == 0 && s->pie_prob == 0 &&
            s->pie_burst_ns == PIE_MAX_BURST_NS) {
            s->pie_next_update_ns += (t - u) / c->pie_tupdate_ns * c->pie_tupdate_ns;
            continue;
        }
        pie_update(c, s, link_free_ns > u ? link_free_ns - u : 0);
    }
    return pie_drop(c, s, head - t, ahead, uniform);
}

const char *const aqm_names[AQM_KINDS] = { "none", "codel", "pie" };

/* The AQM's name as the counters print it. */
const char *aqm_name(int kind)
{
    return kind >= 0 && kind < AQM_KINDS ? aqm_names[kind] : "none";
}

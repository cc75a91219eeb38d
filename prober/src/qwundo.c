/* qwundo.c: the quick window's congestion events: counted at their first sample, judged
 * random or at the top of the buffer (qw_count_events), and taken back when the kernel undid
 * their cwnd reduction. Linux retransmits
 * packets that were only reordered or delayed (RACK marks a packet lost once later ones are
 * acked past its reordering window; an RTO fires on a delay spike), and when DSACKs or
 * timestamps show that every retransmission of a recovery was spurious it undoes the
 * recovery's reduction: cwnd goes back to at least where the recovery found it and ssthresh
 * to its old value. Such an event cut nothing: no packet was lost and the flow takes no loss
 * response, so the window takes it back (a jittered CUBIC path, 150 Mbit/s x 15 ms at
 * +-3 ms, had 13 recoveries in its 1.4 s window and every one undone; counted as random
 * losses, they held the answer at 14.1 Mbit/s against a figure of 69.6: the recorded run
 * cubic-150M-15ms-netem-jitter3-undone). BBR's verdicts are ignored (qw_mark_event). */
#include "qwint.h"

#include <math.h>

#define QW_CUT_KEEP_FRAC 0.875  /* cwnd at a recovery's end below this share of the one
                                   before it: kept (beta 0.5 or 0.7, a few packets of growth
                                   since); at or above: undone (cwnd back to at least the
                                   old one, as tcp_undo_cwnd_reduction puts it) */
#define QW_RANDOM_QUEUE 0.75    /* a loss below this share of the deepest queue seen did
                                   not come from a full buffer (qwloss.c's QW_QUEUE_SAME) */

/* The most one stream's cwnd (bytes) can grow in secs of congestion avoidance from a
 * window of cwnd_bytes by its cc's own law: a packet a round trip (Reno's; CUBIC's
 * Reno-friendly 3 (1 - beta) / (1 + beta) is less), and for CUBIC (beta above 0.6) also its
 * cubic from beta x that window, C ((T - K)^3 + K^3) packets (RFC 9438). 0 without a
 * round trip to count in. */
static double regrowth_bytes(double secs, const qw_cut_view *v, uint64_t cwnd_bytes)
{
    double mss = qw_mss(v->mss_bytes), pkts, k;

    if (secs <= 0 || v->rtt_us == 0)
        return 0;
    pkts = secs / (v->rtt_us * 1e-6);
    if (v->beta > 0.6) {
        k = cbrt((double)cwnd_bytes / mss * (1.0 - v->beta) / QW_CUBIC_C);
        pkts += QW_CUBIC_C * (pow(secs - k, 3) + k * k * k);
    }
    return pkts * mss;
}

/* Follow one stream's congestion events and judge each at its end (see quickwin.h). */
qw_cut qw_cut_step(qw_cut_track *t, int began, int rec, const qw_cut_view *v)
{
    double grown, kept_most;

    if (began && !t->open) {
        t->open = 1;
        t->cwnd_before = t->cwnd_bytes;
        t->t_before = t->t_s;
        t->rec_from = t->rec_to = 0;
    }
    t->cwnd_bytes = v->cwnd_bytes;
    t->t_s = v->t_s;
    if (t->open && rec) {
        if (t->rec_from == 0)
            t->rec_from = v->t_s;
        t->rec_to = v->t_s;
    }
    if (!t->open || rec)
        return QW_CUT_NONE;
    t->open = 0;
    /* with no cwnd from before the event (its first sample) nothing shows an undo */
    if (t->cwnd_before == 0 || (double)v->cwnd_bytes < QW_CUT_KEEP_FRAC * (double)t->cwnd_before)
        return QW_CUT_KEPT;
    /* The samples show cwnd before the event and after its recovery, not the cut between:
     * cwnd may have grown before the loss, and a kept cut grows again after it. Where the
     * sampling period is many round trips (20 ms on a 1-2 ms LAN path: 10-20 rounds, a
     * window of 17-40 packets) that growth takes a kept cut back over QW_CUT_KEEP_FRAC, and
     * a verdict of undone there took every loss of CUBIC on 100 Mbit/s x 1 ms for a
     * reordering path's, its upper side at 2-1000 x the link's rate. Linux undoes a cut when
     * DSACKs or timestamps show its retransmissions spurious, packets only reordered or
     * delayed, and it raises tcpi_reordering as it sees a path reorder: where it has, cwnd
     * back at its level stays the undo it most likely is (CUBIC on 50 Mbit/s x 8 ms through
     * netem-order jitter, windows of a few packets); where it has not, a loss the samples
     * cannot tell from an undo is kept. */
    if (v->reordering_segments > QW_KERNEL_REORDERING)
        return QW_CUT_UNDONE;
    /* cwnd does not grow in a recovery (PRR takes it down to ssthresh), and the samples that
     * showed this one in recovery span at least that long */
    grown = regrowth_bytes(v->t_s - t->t_before - (t->rec_to - t->rec_from), v, t->cwnd_before);
    kept_most = v->beta * ((double)t->cwnd_before + grown) + grown;
    return (double)v->cwnd_bytes <= kept_most ? QW_CUT_KEPT : QW_CUT_UNDONE;
}

/* Keep the window's event state as it stands before the congestion event that
 * qw_count_events (below) is about to count, until its streams show the cut kept or
 * undone. BBR keeps no cut to undo: it restores cwnd after every recovery. */
void qw_mark_event(qw_window *w)
{
    qw_event_mark *m = &w->mark;

    if (w->p.bbr || m->pending)
        return;
    *m = (qw_event_mark){
        .pending = 1, .events = w->events, .random_events = w->random_events,
        .random_stream_events = w->random_stream_events,
        .follow_events = w->follow_events, .follow_stream_events = w->follow_stream_events,
        .stream_events = w->stream_events, .event_t = w->event_t,
        .loss_queue = w->loss_queue, .cwnd_low_bytes = w->cwnd_low_bytes,
        .top_cut_bytes = w->top_cut_bytes, .run_peak = w->run_peak,
        .clean_from_bytes = w->clean_from_bytes, .npeaks = w->npeaks, .n = w->n,
    };
}

/* Put the event state back as it was before the marked event: it cut nothing. The cycle
 * it seemed to end goes on (its peak is the larger of the two parts), and the packets
 * since it count as loss-free: its retransmissions were of packets not lost. */
static void take_back(qw_window *w)
{
    const qw_event_mark *m = &w->mark;

    for (int i = m->n; i < w->n; i++)
        if (w->s[i].events > m->events)
            w->s[i].events--;
    w->events = m->events;
    w->random_events = m->random_events;
    w->random_stream_events = m->random_stream_events;
    w->follow_events = m->follow_events;
    w->follow_stream_events = m->follow_stream_events;
    w->stream_events = m->stream_events;
    w->event_t = m->event_t;
    w->loss_queue = m->loss_queue;
    w->cwnd_low_bytes = m->cwnd_low_bytes;
    w->top_cut_bytes = m->top_cut_bytes;
    w->npeaks = m->npeaks;
    if (m->run_peak > w->run_peak)
        w->run_peak = m->run_peak;
    w->clean_from_bytes = m->clean_from_bytes;
    w->undone_events++;
}

/* Add sample s's streams' outcomes to the marked event, and once no stream is in a
 * recovery (each judged its own event by then) take the event back if every stream that
 * ended one undid its cut. One cut kept keeps the event: a loss the cc answered. */
void qw_settle_event(qw_window *w, const qw_sample *s)
{
    qw_event_mark *m = &w->mark;

    if (!m->pending)
        return;
    m->kept += s->cuts_kept;
    m->undone += s->cuts_undone;
    if (s->in_recovery)
        return;
    if (m->undone > 0 && m->kept == 0)
        take_back(w);
    m->pending = 0;
}

/* The standing queue in BDPs at s from the smallest smoothed RTT over the streams: the
 * queue at its least. */
static double queue_lo_bdps(const qw_window *w, const qw_sample *s)
{
    return qw_queue_at(w, qw_srtt_lo(s));
}

/* Keep the smallest cwnd (summed) a loss at the top of a buffer cut: it came with more than
 * a BDP in flight, so the capacity is below it over the min RTT. */
static void see_top_cut(qw_window *w, uint64_t cwnd_bytes)
{
    if (cwnd_bytes && (w->top_cut_bytes == 0 || cwnd_bytes < w->top_cut_bytes))
        w->top_cut_bytes = cwnd_bytes;
}

/* Forget the capacity bounds a queue gave (qw_window.queue_cwnd_bytes, ss_bdp_bytes) once
 * sample s, outside a recovery, shows no queue (q_lo BDP) with twice that cwnd. At a fixed
 * capacity the queue says the BDP is below cwnd W; with 2 W in flight more than a BDP
 * would queue, and the RTT would be over twice the one with no queue. So the link is not
 * the one that queue proved full: the reading was delay jitter (the smoothed RTT's floor
 * is its lowest excursion: +-3 ms on a 15 ms path read a queue of 0.25 BDP at cwnd 13 kB,
 * 5 % of the BDP, and the flow went on to 140 Mbit/s), or cross traffic that has left. */
static void forget_refuted_queue(qw_window *w, const qw_sample *s, double q_lo)
{
    if (q_lo >= QW_BUSY_QUEUE || s->in_recovery)
        return;
    if (w->queue_cwnd_bytes && s->cwnd_bytes >= 2 * w->queue_cwnd_bytes)
        w->queue_cwnd_bytes = 0;
    if (w->ss_bdp_bytes && s->cwnd_bytes >= 2 * w->ss_bdp_bytes)
        w->ss_bdp_bytes = 0;
}

/* 1 if a loss at a queue of q BDP may be random: a loss at the top of a buffer the window has
 * seen (the deepest queue, slow-start's overshoot included) is the sawtooth's own; one well
 * below it, or with no buffer seen at all, may be random (qw_loss_floor). */
static int may_be_random(const qw_window *w, double q)
{
    double deepest = qw_deepest_queue(w);

    return deepest < QW_BUSY_QUEUE || q < QW_RANDOM_QUEUE * deepest;
}

/* 1 if the queue at a loss can tell a random loss from a full buffer's (may_be_random): a
 * random loss can come at a queue below QW_RANDOM_QUEUE of the deepest. With n streams a
 * cut takes (1 - beta) / n of the summed cwnd, so a sawtooth at the top of a buffer q BDP
 * deep (the deepest queue seen) keeps its summed cwnd between (1 + q)(1 - (1 - beta) / n)
 * and (1 + q) BDP, and a random loss, whenever it comes, finds a queue in that range. Where
 * its bottom is at least QW_RANDOM_QUEUE x q, every loss reads as the buffer's top: 4 CUBIC
 * streams, any buffer over 0.43 BDP; 2, over 1.5 BDP; 4 Reno streams, over 1 BDP; a single
 * stream, never (its cut takes 30 or 50 % of cwnd). On 4 CUBIC streams at 100 Mbit/s x
 * 90 ms with a 2.5-BDP buffer and 0.2 % loss, HyStart left slow-start at 1.3 BDP of queue
 * and every loss of the window came at 1.3-1.7: all read as the top while the 20 s figures,
 * 95.5 and 90.7, fell below intervals of 95.8-100.2 and 96.5-99.6. */
int qw_queue_tells_random(const qw_window *w)
{
    double deepest = qw_deepest_queue(w);
    double keep = 1.0 - (1.0 - w->p.beta) / qw_streams(w);

    return deepest < QW_BUSY_QUEUE || (1.0 + deepest) * keep - 1.0 < QW_RANDOM_QUEUE * deepest;
}

/* Follow the streams' loss recoveries: note when they all left one (quickwin.h). */
void qw_track_recovery(qw_window *w, const qw_sample *s)
{
    if (w->any_recovery && !s->in_recovery)
        w->recovery_end_t = s->t_s;
    w->any_recovery = s->in_recovery;
}

/* 1 if a congestion event at s began while another recovery ran (some stream's) or within
 * two smoothed RTTs of the last one's end, on a path whose reordering the kernel has learned
 * (tcpi_reordering above its default). Its lost packets were sent while that recovery cut
 * cwnd and drained the queue, so the queue at its start says nothing of where they were
 * lost; and on such a path one overflow's recovery is followed by others a round or two
 * apart, RACK marking packets of the same overflow, or only reordered, lost (qwfloor.c,
 * qw_reorder_overflow). Such an event is no proof of random loss: the upper side does not
 * take it as one (qw_random_losses_shown). Reno on 150 Mbit/s x 90 ms with netem-order
 * jitter left slow-start after such a cascade with cwnd at 44-89 kB a stream, and four cuts
 * in its first 0.6 s, each 40-80 ms after a recovery ended, read as random losses held its
 * climb back to 31.6 Mbit/s; it grew a packet a round to 57 by 20 s, and the 20 s figure
 * (45.6) was above its interval (22.0-39.6). */
int qw_follows_recovery(const qw_window *w, const qw_sample *s)
{
    if (w->reordering_segments <= QW_KERNEL_REORDERING)
        return 0;
    return w->any_recovery ||
           (w->recovery_end_t >= 0 && s->t_s - w->recovery_end_t <= 2e-6 * s->rtt_us);
}

/* Count the congestion event that sample s began at a queue of q BDP (random: it may be
 * random loss; follow: it followed another recovery): its time and cwnd, the lowest queue a
 * loss came at, a cut from the top of a buffer, and the peak of the cycle it ends. */
static void count_event(qw_window *w, const qw_sample *s, double q, int random, int follow)
{
    w->events++;
    w->event_t = s->t_s;
    w->cwnd_low_bytes = s->cwnd_bytes;
    if (w->events == 1 || q < w->loss_queue)
        w->loss_queue = q;
    if (random)
        w->random_events++;
    if (follow)
        w->follow_events++;
    if (!random)
        see_top_cut(w, w->run_peak > 0 ? w->run_peak : w->exit_cwnd_bytes);
    /* the first event can come at the window's first sample: the cycle it ends began before
     * the window, and its peak is unknown (0), not a peak of 0 */
    if (w->npeaks < QW_MAX_PEAKS && w->run_peak > 0) {
        w->peak[w->npeaks] = w->run_peak;
        w->peak_slice[w->npeaks++] = w->n;
    }
    w->run_peak = 0;
}

/* Count a congestion event at its first sample: entering recovery, or retransmissions
 * that came and went between two samples. A loss-based cc's retransmission outside any
 * recovery with no new ssthresh is neither a loss it answered nor one at all, most likely:
 * a tail-loss probe, or RACK resending packets that were only reordered (netem's jitter
 * reorders a bulk flow, and Linux sends such a retransmission in Disorder without cutting
 * cwnd). It neither counts as an event nor ends the loss-free packets. */
void qw_count_events(qw_window *w, const qw_sample *s)
{
    double q = qw_queue_bdps(w, s), q_lo = queue_lo_bdps(w, s);
    int random, follow, lost = qw_loss_answered(w->prev_recovery, s->in_recovery, w->prev_retrans,
                                        s->retrans, s->ssthresh_set, w->p.bbr);
    int began = qw_stream_event(w->prev_recovery, s->in_recovery, w->prev_retrans, s->retrans,
                                s->ssthresh_set, w->p.bbr);

    if (q > w->max_queue)
        w->max_queue = q;
    if (q < w->slice_qmin)
        w->slice_qmin = q;
    if (q_lo < w->slice_qlo_min)
        w->slice_qlo_min = q_lo;
    random = may_be_random(w, q);
    follow = random && qw_follows_recovery(w, s);
    if (began)
        qw_mark_event(w);
    w->stream_events += s->stream_events;
    if (random)
        w->random_stream_events += s->stream_events;
    if (follow)
        w->follow_stream_events += s->stream_events;
    if (began)
        count_event(w, s, q, random, follow);
    if (s->cwnd_bytes > w->run_peak)
        w->run_peak = s->cwnd_bytes;
    if (s->cwnd_bytes < w->cwnd_low_bytes)
        w->cwnd_low_bytes = s->cwnd_bytes;
    /* a queue stands only with more than a BDP in flight, and cwnd bounds what is in
     * flight: outside a recovery and a round (two smoothed RTTs: the RTT trails the queue)
     * after the latest cut, cwnd only grew since the packets that built it were sent */
    if (q_lo >= QW_BUSY_QUEUE && !s->in_recovery && s->retrans == w->prev_retrans &&
        s->t_s - w->event_t >= 2e-6 * s->rtt_us &&
        (w->queue_cwnd_bytes == 0 || s->cwnd_bytes < w->queue_cwnd_bytes))
        w->queue_cwnd_bytes = s->cwnd_bytes;
    forget_refuted_queue(w, s, q_lo);
    if (s->in_recovery || lost)
        w->clean_from_bytes = s->delivered_bytes;
    qw_settle_event(w, s);
    w->prev_recovery = s->in_recovery;
    w->prev_retrans = s->retrans;
}

/* qwundo.c: congestion events whose cwnd reduction the kernel undid. Linux retransmits
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

#define QW_CUT_KEEP_FRAC 0.875  /* cwnd at a recovery's end below this share of the one
                                   before it: kept (beta 0.5 or 0.7, a few packets of growth
                                   since); at or above: undone (cwnd back to at least the
                                   old one, as tcp_undo_cwnd_reduction puts it) */

/* Follow one stream's congestion events and judge each at its end (see quickwin.h). */
qw_cut qw_cut_step(qw_cut_track *t, int began, int rec, uint64_t cwnd_bytes)
{
    if (began && !t->open) {
        t->open = 1;
        t->cwnd_before = t->cwnd_bytes;
    }
    t->cwnd_bytes = cwnd_bytes;
    if (!t->open || rec)
        return QW_CUT_NONE;
    t->open = 0;
    /* with no cwnd from before the event (its first sample) nothing shows an undo */
    if (t->cwnd_before == 0 || (double)cwnd_bytes < QW_CUT_KEEP_FRAC * (double)t->cwnd_before)
        return QW_CUT_KEPT;
    return QW_CUT_UNDONE;
}

/* Keep the window's event state as it stands before the congestion event that
 * count_events (quickwin.c) is about to count, until its streams show the cut kept or
 * undone. BBR keeps no cut to undo: it restores cwnd after every recovery. */
void qw_mark_event(qw_window *w)
{
    qw_event_mark *m = &w->mark;

    if (w->p.bbr || m->pending)
        return;
    *m = (qw_event_mark){
        .pending = 1, .events = w->events, .random_events = w->random_events,
        .random_stream_events = w->random_stream_events, .event_t = w->event_t,
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

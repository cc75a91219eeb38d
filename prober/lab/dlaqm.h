/* dlaqm.h: the delay line's active queue management, judged as packets reach its bottleneck:
 * CoDel (RFC 8289) at the queue's head, PIE (RFC 8033, as Linux's sch_pie runs it) at its
 * tail. The kernel here has neither qdisc. */
#ifndef QP_DLAQM_H
#define QP_DLAQM_H

#include <stdint.h>

enum { AQM_NONE, AQM_CODEL, AQM_PIE, AQM_KINDS };

/* Each AQM's name, in the enum's order (the option's values and the counters' "aqm"). */
extern const char *const aqm_names[AQM_KINDS];

typedef struct {
    int kind;                /* AQM_NONE, AQM_CODEL or AQM_PIE */
    uint64_t codel_target_ns, codel_interval_ns;
    uint64_t pie_target_ns, pie_tupdate_ns;
} aqm_conf;

/* CoDel's state (RFC 8289 section 5): when the sojourn time first stayed above target,
 * whether it is dropping, its drop count and the time of the next drop. PIE's (RFC 8033
 * section 4): its drop probability, the queue delay at its last update, when the next
 * update falls, the burst it still lets through, and the derandomising sum of
 * probabilities since its last drop. */
typedef struct {
    uint64_t first_above_ns, drop_next_ns;
    uint32_t count, lastcount;
    uint32_t maxpacket;      /* the largest packet seen: RFC 8289's one-MTU floor */
    int dropping;
    double pie_prob, pie_accu;
    uint64_t pie_qdelay_old_ns, pie_next_update_ns, pie_burst_ns;
} aqm_state;

/* Start an AQM's state at time t. */
void aqm_init(const aqm_conf *c, aqm_state *s, uint64_t t);

/* The AQM's verdict (1 = drop) on a packet of len bytes arriving at t behind `ahead` bytes
 * of a FIFO bottleneck that is busy until link_free_ns (so it reaches the queue's head at
 * max(t, link_free_ns)). uniform draws the random numbers PIE needs. */
int aqm_drop(const aqm_conf *c, aqm_state *s, uint64_t t, uint64_t link_free_ns,
             uint64_t ahead, uint32_t len, double (*uniform)(void));

/* The AQM's name as the counters print it. */
const char *aqm_name(int kind);

#endif

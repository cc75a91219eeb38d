/* tcpinfo.h: the kernel's TCP_INFO in a struct of our own, units in every name. */
#ifndef QP_TCPINFO_H
#define QP_TCPINFO_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t rtt_us;
    uint32_t rttvar_us;
    uint32_t min_rtt_us;
    uint64_t cwnd_bytes;            /* tcpi_snd_cwnd * tcpi_snd_mss */
    uint32_t cwnd_segments;
    uint64_t ssthresh_bytes;        /* 0 when the kernel has never set it */
    uint32_t mss_bytes;
    uint64_t bytes_sent;            /* includes retransmissions */
    uint64_t bytes_acked;
    uint64_t bytes_retrans;
    uint32_t total_retrans;
    uint64_t delivery_rate_bps;     /* tcpi_delivery_rate * 8 */
    uint64_t pacing_rate_bps;
    uint32_t snd_wnd_bytes;
    uint32_t snd_wscale;            /* the peer's window scale (0 without the option): it
                                       never advertises more than 65535 << snd_wscale */
    uint64_t rwnd_limited_us;
    uint64_t sndbuf_limited_us;
    uint64_t busy_us;
    uint32_t ca_state;
    uint32_t notsent_bytes;
    uint32_t unacked_segments;
    uint32_t lost_segments;
    uint32_t retrans_out_segments;  /* tcpi_retrans: retransmitted and not yet acked */
    uint32_t sacked_segments;       /* SACKed, not yet cumulatively acked */
    uint32_t reordering_segments;   /* tcpi_reordering: how far out of order the kernel lets
                                       packets arrive before it calls one lost (3 until it
                                       sees reordering) */
    uint32_t reord_seen;            /* reordering events the kernel has seen (4.19+; 0 before) */
    uint32_t dsack_dups;            /* retransmissions DSACKs showed spurious (4.19+) */
    int delivery_rate_app_limited;  /* the rate sample was limited by the sender */
    uint32_t bbr_pacing_gain;       /* x256; 0 = unknown or not BBR */
    uint64_t bbr_bw_bps;            /* BBR's bandwidth estimate; 0 = unknown */
    uint32_t bbr_min_rtt_us;        /* BBR's min RTT filter; 0 = unknown */
    uint32_t bbr_cwnd_gain;         /* x256; 0 = unknown */
    int has_bbr;                    /* the four bbr_ fields were read */
} qp_tcpinfo;

/* Read TCP_INFO of fd into ti; 0 or -1 with a message. */
int tcpinfo_read(int fd, qp_tcpinfo *ti, char *err, size_t errlen);

/* Add BBR's own state (TCP_CC_INFO) to ti; 0, or -1 when fd is not using BBR. */
int tcpinfo_read_bbr(int fd, qp_tcpinfo *ti);

/* The congestion control in use on fd (TCP_CONGESTION) into name; 0 or -1. */
int tcpinfo_congestion(int fd, char *name, size_t namelen);

/* The kernel's available congestion controls (space separated) into buf; 0 or -1. */
int tcpinfo_available_cc(char *buf, size_t buflen);

/* 1 if name is in the kernel's available congestion controls (or the list is unreadable). */
int tcpinfo_cc_available(const char *name);

#endif

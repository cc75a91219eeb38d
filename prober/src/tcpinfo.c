/* tcpinfo.c: getsockopt(TCP_INFO) and TCP_CONGESTION, converted to our units. */
#include "tcpinfo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <linux/inet_diag.h>

/* The kernel reports "ssthresh never set" as a huge segment count. */
#define SSTHRESH_INFINITE 0x7fffffffU

/* Read TCP_INFO of fd into ti; 0 or -1 with a message. */
int tcpinfo_read(int fd, qp_tcpinfo *ti, char *err, size_t errlen)
{
    struct tcp_info k;
    socklen_t len = sizeof(k);

    memset(&k, 0, sizeof(k));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &k, &len) < 0) {
        snprintf(err, errlen, "getsockopt TCP_INFO: %s", strerror(errno));
        return -1;
    }
    /* An older kernel returns a shorter struct; the missing tail stays zero. */
    memset(ti, 0, sizeof(*ti));
    ti->rtt_us = k.tcpi_rtt;
    ti->rttvar_us = k.tcpi_rttvar;
    ti->min_rtt_us = k.tcpi_min_rtt;
    ti->mss_bytes = k.tcpi_snd_mss;
    ti->cwnd_segments = k.tcpi_snd_cwnd;
    ti->cwnd_bytes = (uint64_t)k.tcpi_snd_cwnd * k.tcpi_snd_mss;
    ti->ssthresh_bytes = k.tcpi_snd_ssthresh >= SSTHRESH_INFINITE
                             ? 0 : (uint64_t)k.tcpi_snd_ssthresh * k.tcpi_snd_mss;
    ti->bytes_sent = k.tcpi_bytes_sent;
    ti->bytes_acked = k.tcpi_bytes_acked;
    ti->bytes_retrans = k.tcpi_bytes_retrans;
    ti->total_retrans = k.tcpi_total_retrans;
    ti->delivery_rate_bps = k.tcpi_delivery_rate * 8;
    ti->pacing_rate_bps = k.tcpi_pacing_rate == ~0ULL ? 0 : k.tcpi_pacing_rate * 8;
    ti->snd_wnd_bytes = k.tcpi_snd_wnd;
    ti->snd_wscale = (k.tcpi_options & TCPI_OPT_WSCALE) ? k.tcpi_snd_wscale : 0;
    ti->rwnd_limited_us = k.tcpi_rwnd_limited;
    ti->sndbuf_limited_us = k.tcpi_sndbuf_limited;
    ti->busy_us = k.tcpi_busy_time;
    ti->ca_state = k.tcpi_ca_state;
    ti->notsent_bytes = k.tcpi_notsent_bytes;
    ti->unacked_segments = k.tcpi_unacked;
    ti->lost_segments = k.tcpi_lost;
    ti->retrans_out_segments = k.tcpi_retrans;
    ti->sacked_segments = k.tcpi_sacked;
    ti->reordering_segments = k.tcpi_reordering;
    ti->reord_seen = k.tcpi_reord_seen;
    ti->dsack_dups = k.tcpi_dsack_dups;
    ti->delivery_rate_app_limited = k.tcpi_delivery_rate_app_limited;
    return 0;
}

/* Add BBR's own state (TCP_CC_INFO) to ti; 0, or -1 when fd is not using BBR. */
int tcpinfo_read_bbr(int fd, qp_tcpinfo *ti)
{
    union tcp_cc_info info;
    socklen_t len = sizeof(info);

    memset(&info, 0, sizeof(info));
    /* Other algorithms answer with their own struct or nothing: only a full BBR one counts. */
    if (getsockopt(fd, IPPROTO_TCP, TCP_CC_INFO, &info, &len) < 0 ||
        len < sizeof(struct tcp_bbr_info))
        return -1;
    ti->bbr_pacing_gain = info.bbr.bbr_pacing_gain;
    ti->bbr_bw_bps = (((uint64_t)info.bbr.bbr_bw_hi << 32) | info.bbr.bbr_bw_lo) * 8;
    ti->bbr_min_rtt_us = info.bbr.bbr_min_rtt;
    ti->bbr_cwnd_gain = info.bbr.bbr_cwnd_gain;
    ti->has_bbr = 1;
    return 0;
}

/* The congestion control in use on fd (TCP_CONGESTION) into name; 0 or -1. */
int tcpinfo_congestion(int fd, char *name, size_t namelen)
{
    char buf[32];
    socklen_t len = sizeof(buf) - 1;

    memset(buf, 0, sizeof(buf));
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &len) < 0)
        return -1;
    snprintf(name, namelen, "%s", buf);
    return 0;
}

/* The kernel's available congestion controls (space separated) into buf; 0 or -1. */
int tcpinfo_available_cc(char *buf, size_t buflen)
{
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
    size_t n;

    if (!f)
        return -1;
    n = fread(buf, 1, buflen - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return 0;
}

/* 1 if name is in the kernel's available congestion controls (or the list is unreadable). */
int tcpinfo_cc_available(const char *name)
{
    char list[512], *save = NULL;

    if (tcpinfo_available_cc(list, sizeof(list)) < 0)
        return 1;
    for (char *tok = strtok_r(list, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
        if (strcmp(tok, name) == 0)
            return 1;
    return 0;
}

/* opts.h: the quickprobe command line (see prober/EVENTS.md). */
#ifndef QP_OPTS_H
#define QP_OPTS_H

#include <stddef.h>
#include <stdint.h>

#define QP_VERSION "0.1.0"
#define QP_MAX_STREAMS 128
/* The quick window answers this many smoothed RTTs after slow-start ended, converged or
 * not (within --quick-ms of measuring and --quick-max-ms): 12 BBR gain cycles, and for Reno /
 * CUBIC enough packets that a loss-free stretch starts to bound random loss. Half that (and a
 * 3 s cap) saved a second a run on bench-quick's matrix but, replaying its 48 validate runs,
 * covered 12 of 15 BBR runs' 20 s figures instead of 14 and widened CUBIC's median interval
 * from 34 to 51 %; a 24 ms lossy Reno path answered after 1.4 s at -49 %. */
#define QP_DEADLINE_RTTS 100

typedef enum { MODE_QUICK = 0, MODE_FULL, MODE_VALIDATE } qp_mode;

typedef struct {
    const char *host;
    char host_buf[64];          /* a bracketed IPv6 literal without its brackets */
    int port;                   /* 0 until parsed: then the protocol default */
    int time_s;
    int streams;
    uint64_t window_bytes;      /* 0 = not asked */
    const char *congestion;     /* NULL = kernel default */
    double interval_s;          /* 0 = no interval lines */
    int iperf2;
    qp_mode mode;
    int sample_ms;
    int quick_ms;               /* the quick window spans at least this long */
    int quick_max_ms;           /* ... and answers at the latest this long after slow-start
                                   ended */
    int until_converged;        /* not converged by then: run on to -t (the full run is the
                                   result) instead of answering */
    double quick_tolerance_pct; /* 95 % CI half-width it must reach, % of the rate */
    double connect_timeout_s;
    int json;
    int help;
    int version;
} qp_opts;

/* Fill o with the documented defaults. */
void opts_defaults(qp_opts *o);

/* Parse argv into o; 0 on success, -1 with a message saying what is allowed. */
int opts_parse(qp_opts *o, int argc, char **argv, char *err, size_t errlen);

/* Parse "64K", "1M", "1048576" (1024-based suffixes K/M/G) into bytes; 0 or -1. */
int opts_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/* The --help text. */
const char *opts_usage(void);

/* "quick", "full" or "validate". */
const char *opts_mode_name(qp_mode m);

#endif

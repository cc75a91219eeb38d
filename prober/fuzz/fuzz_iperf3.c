/* fuzz_iperf3.c: libFuzzer target for everything quickprobe decodes from an iperf3
 * server. The first byte picks the entry point; the rest is what the server sends:
 *   0: the results JSON alone (iperf3_parse_results);
 *   1: a control stream read as state bytes, SERVER_ERROR payloads and JSON messages;
 *   2: the end of a test (iperf3_finish) against that control stream.
 * Control streams travel through a real socketpair, so the deadline-bounded buffered
 * reader is exercised as in a run. Build and run: make -C prober fuzz FUZZ_SECONDS=60 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iperf3.h"

/* Put data in a socketpair and close the writing side; returns the reading fd or -1. */
static int feed(const uint8_t *data, size_t size, int *peer)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    if (size && send(sv[1], data, size, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)size) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    shutdown(sv[1], SHUT_WR);
    *peer = sv[1];
    return sv[0];
}

/* Read the stream as a client would between messages, until an error or EOF. */
static void replay_control(const uint8_t *data, size_t size)
{
    net_reader rd;
    iperf3_results res;
    char err[256];
    int peer, fd = feed(data, size, &peer), st;

    if (fd < 0)
        return;
    net_reader_init(&rd, fd);
    for (int steps = 0; steps < 64; steps++) {
        qp_err e = { 0 };
        char *json = NULL;
        size_t len = 0;

        if (iperf3_read_state(&rd, 0.2, &st, &e) < 0)
            break;
        if (st == ST_EXCHANGE_RESULTS) {
            if (iperf3_read_json(&rd, 0.2, iperf3_results_max(1), &json, &len, &e) < 0)
                break;
            iperf3_parse_results(json, len, &res, err, sizeof(err));
            free(json);
            continue;
        }
        if (st < 0 || st == ST_SERVER_TERMINATE) {
            iperf3_unexpected(&rd, st, ST_TEST_RUNNING, 0.2, &e);
            break;
        }
    }
    close(fd);
    close(peer);
}

/* Run the end-of-test exchange against the stream. */
static void replay_finish(const uint8_t *data, size_t size)
{
    static const char own[] = "{\"cpu_util_total\":0,\"cpu_util_user\":0,\"cpu_util_system\":0,"
                              "\"sender_has_retransmits\":1,\"streams\":[{\"id\":1,\"bytes\":1,"
                              "\"retransmits\":0,\"jitter\":0,\"errors\":0,\"packets\":0}]}";
    iperf3_results *res = malloc(sizeof(*res));
    net_reader rd;
    qp_err e = { 0 };
    int peer, fd = feed(data, size, &peer);

    if (fd >= 0 && res) {
        net_reader_init(&rd, fd);
        iperf3_finish(fd, &rd, own, 1, 0.2, res, &e);
    }
    if (fd >= 0) {
        close(fd);
        close(peer);
    }
    free(res);
}

/* libFuzzer entry: the first byte picks the decoder, the rest is the server's bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    iperf3_results *res;
    char err[256];

    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        res = malloc(sizeof(*res));
        if (res)
            iperf3_parse_results((const char *)data + 1, size - 1, res, err, sizeof(err));
        free(res);
        break;
    case 1:
        replay_control(data + 1, size - 1);
        break;
    default:
        replay_finish(data + 1, size - 1);
        break;
    }
    return 0;
}

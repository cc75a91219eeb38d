/* dlring.h: the delay line's queue. Packets wait in a byte ring in the order they left the
 * bottleneck; in FIFO order they also leave in it (release times never decrease). In netem
 * order each keeps its own release time, and a min-heap of the unsent entries says which is
 * due wherever it sits: a sent entry stays in the ring until it reaches the head. */
#ifndef QP_DLRING_H
#define QP_DLRING_H

#include <stddef.h>
#include <stdint.h>

#define HDR_SIZE 16u
#define WRAP_MARK 0xffffffffu

typedef struct {
    uint64_t release_ns;
    uint32_t len;
    uint32_t sent;           /* netem order: written out, waiting to leave the ring's head */
} ring_hdr;

/* Netem order: a packet in the ring by its release time (then arrival, for ties). */
typedef struct {
    uint64_t release_ns, seq;
    size_t off;
} due_entry;

typedef struct {
    uint8_t *buf;
    size_t cap, head, tail, used;
    uint64_t packets;        /* entries queued, for the conservation check */
    uint64_t sent;           /* ... of which already written out (netem order) */
    due_entry *due;          /* netem order: a min-heap of the unsent entries */
    size_t ndue, due_cap;
    uint64_t seq;
} ring;

/* Round up to the ring's 16-byte entry alignment. */
size_t align16(size_t n);
/* Allocate a ring of cap bytes (16-aligned), with the heap if netem: 0, or -1. */
int ring_open(ring *r, size_t cap, int netem);
/* Free what ring_open allocated. */
void ring_close(ring *r);
/* Contiguous room for `need` bytes at the tail, wrapping if needed; NULL if full. */
uint8_t *ring_reserve(ring *r, size_t need);
/* Make the entry written at the tail part of the queue. */
void ring_commit(ring *r, uint64_t release_ns, uint32_t len);
/* The oldest entry, skipping wrap marks; NULL when empty. */
ring_hdr *ring_peek(ring *r);
/* Drop the oldest entry (the one ring_peek returned). */
void ring_pop(ring *r, const ring_hdr *h);
/* Netem order: the earliest unsent entry due by t, marked sent; NULL if none is due. */
ring_hdr *ring_take_due(ring *r, uint64_t t);
/* Netem order: free the sent entries at the head; the next unsent release time, or 0. */
uint64_t ring_settle(ring *r);

#endif

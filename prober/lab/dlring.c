/* dlring.c: the delay line's queue (dlring.h). */
#include <stdlib.h>

#include "dlring.h"

/* Round up to the ring's 16-byte entry alignment. */
size_t align16(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

/* Contiguous room for `need` bytes at the tail, wrapping if needed; NULL if full. */
uint8_t *ring_reserve(ring *r, size_t need)
{
    if (r->used == 0)
        r->head = r->tail = 0;
    else if (r->tail == r->head)
        return NULL;
    if (r->tail >= r->head) {
        if (r->cap - r->tail >= need)
            return r->buf + r->tail;
        if (r->head < need)
            return NULL;
        ((ring_hdr *)(r->buf + r->tail))->len = WRAP_MARK;
        r->used += r->cap - r->tail;
        r->tail = 0;
        return r->buf;
    }
    return (r->head - r->tail >= need) ? r->buf + r->tail : NULL;
}

/* 1 if heap entry a leaves before b. */
static int due_before(const due_entry *a, const due_entry *b)
{
    return a->release_ns < b->release_ns || (a->release_ns == b->release_ns && a->seq < b->seq);
}

/* Netem order: add the entry at off to the heap of unsent ones (room is sized for a full
 * ring of the smallest packets). */
static void due_push(ring *r, uint64_t release_ns, size_t off)
{
    size_t i = r->ndue++;
    due_entry e = {release_ns, r->seq++, off};
    while (i > 0 && due_before(&e, &r->due[(i - 1) / 2])) {
        r->due[i] = r->due[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->due[i] = e;
}

/* Netem order: remove the heap's earliest entry. */
static void due_pop(ring *r)
{
    due_entry last = r->due[--r->ndue];
    size_t i = 0, n = r->ndue;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && due_before(&r->due[c + 1], &r->due[c]))
            c++;
        if (!due_before(&r->due[c], &last))
            break;
        r->due[i] = r->due[c];
        i = c;
    }
    if (n > 0)
        r->due[i] = last;
}

/* Make the entry written at the tail part of the queue. */
void ring_commit(ring *r, uint64_t release_ns, uint32_t len)
{
    ring_hdr *h = (ring_hdr *)(r->buf + r->tail);
    size_t span = align16(HDR_SIZE + len);
    if (r->due)
        due_push(r, release_ns, r->tail);
    h->release_ns = release_ns;
    h->len = len;
    h->sent = 0;
    r->tail += span;
    r->used += span;
    r->packets++;
    if (r->tail == r->cap)
        r->tail = 0;
}

/* The oldest entry, skipping wrap marks; NULL when empty. */
ring_hdr *ring_peek(ring *r)
{
    while (r->used > 0) {
        ring_hdr *h = (ring_hdr *)(r->buf + r->head);
        if (h->len != WRAP_MARK)
            return h;
        r->used -= r->cap - r->head;
        r->head = 0;
    }
    return NULL;
}

/* Drop the oldest entry (the one ring_peek returned). */
void ring_pop(ring *r, const ring_hdr *h)
{
    size_t span = align16(HDR_SIZE + h->len);
    r->head += span;
    r->used -= span;
    r->packets--;
    r->sent -= h->sent;
    if (r->head == r->cap)
        r->head = 0;
}

/* Allocate a ring of cap bytes (16-aligned), with the heap if netem: 0, or -1. */
int ring_open(ring *r, size_t cap, int netem)
{
    *r = (ring){.cap = cap};
    r->buf = malloc(cap);
    /* at most one heap entry per ring entry, and an entry takes 32 bytes at least */
    r->due_cap = netem ? cap / align16(HDR_SIZE + 1) : 0;
    r->due = r->due_cap ? malloc(r->due_cap * sizeof *r->due) : NULL;
    return r->buf && (!netem || r->due) ? 0 : -1;
}

/* Free what ring_open allocated. */
void ring_close(ring *r)
{
    free(r->buf);
    free(r->due);
    r->buf = NULL;
    r->due = NULL;
}

/* Netem order: the earliest unsent entry due by t, marked sent; NULL if none is due. */
ring_hdr *ring_take_due(ring *r, uint64_t t)
{
    ring_hdr *h;

    if (r->ndue == 0 || r->due[0].release_ns > t)
        return NULL;
    h = (ring_hdr *)(r->buf + r->due[0].off);
    due_pop(r);
    h->sent = 1;
    r->sent++;
    return h;
}

/* Netem order: free the sent entries at the head; the next unsent release time, or 0. */
uint64_t ring_settle(ring *r)
{
    ring_hdr *h;

    while ((h = ring_peek(r)) != NULL && h->sent)
        ring_pop(r, h);
    return r->ndue > 0 ? r->due[0].release_ns : 0;
}

#!/bin/sh
# make run's vantage worker runs the prober through this (its QUICKPROBE_BIN) while the path lab
# is up: a test of the lab's site (-c $QPLAB_FAR_ADDR) runs inside the lab's near namespace, the
# only place where that address has a route; every other test runs the prober as it is. exec
# both ways: the prober keeps the pid (and session) the worker started, so its stop and kill
# reach the prober itself.
prev=""
for arg in "$@"; do
    if [ "$prev" = "-c" ] && [ "$arg" = "$QPLAB_FAR_ADDR" ]; then
        exec nsenter --net="$QPLAB_NEAR_NS" -- "$QPLAB_PROBER" "$@"
    fi
    prev="$arg"
done
exec "$QPLAB_PROBER" "$@"

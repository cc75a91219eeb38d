"""Free ports and "wait until it listens", once for everything that starts servers: make run,
the benchmarks, the prober, e2e and lab tests. Plain standard library, importable as
`scripts.ports` with the repository on sys.path (pytest has it; scripts insert it).

Listening sockets are read from /proc/net/tcp{,6} rather than probed with connect(): a probing
connection counts as a client to iperf3 (3.12 blocks on its cookie) and makes it log errors.
"""

import socket
import time

# The TCP state column of /proc/net/tcp.
LISTEN = "0A"
ESTABLISHED = "01"


def free_port():
    """A TCP port nothing listens on right now, on IPv4 and IPv6 alike: a dual-stack :: bind
    covers 127.0.0.1 too (iperf3 listens on ::, iperf 2 and gunicorn on 0.0.0.0/127.0.0.1).
    Another process can take it before the caller binds it: callers that can, retry."""
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", 0))
        return s.getsockname()[1]


def port_is_free(port, host="127.0.0.1"):
    """Whether `port` on `host` can be bound now (for a preferred port, e.g. iperf3's 5201)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def sockets(state, pid=None):
    """Local ports of the TCP sockets in `state` (LISTEN, ESTABLISHED), IPv4 and IPv6, as a list
    (a port appears once per socket); pid: read that process's network namespace instead."""
    base = f"/proc/{pid}/net" if pid else "/proc/net"
    found = []
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{base}/{name}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == state:
                        found.append(int(fields[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:  # no IPv6 in this kernel or namespace
            pass
    return found


def listening_ports(pid=None):
    """Every local port in LISTEN state, IPv4 or IPv6 (in pid's namespace if given)."""
    return set(sockets(LISTEN, pid))


def listening(port, pid=None):
    return port in listening_ports(pid)


def established(port):
    """How many ESTABLISHED sockets have `port` as their local port (a server's connections)."""
    return sockets(ESTABLISHED).count(port)


def wait_until(predicate, timeout, what, proc=None, log=None):
    """Polls predicate() until it is true; raises AssertionError naming `what`, saying whether
    `proc` exited and showing the tail of `log` (a Path) if it does not come true in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
    state = f"exited with {proc.returncode}" if proc is not None and proc.poll() is not None else "still running"
    raise AssertionError(f"{what} not ready within {timeout} s ({state}); log tail:\n{tail}")


def wait_listening(port, timeout, what, proc=None, log=None):
    wait_until(lambda: listening(port), timeout, what, proc, log)

#!/usr/bin/env python3
"""The path lab: an emulated WAN path between two network namespaces.

    labctl.py up --path caltech                  # a named path from paths.json
    labctl.py up --rate 100M --rtt 50ms --queue 1M --loss 0.001 [--iperf2] [--server-window 256K]
                 [--jitter 2ms [--jitter-dist normal]] [--cross 40M --cross-on 1s --cross-off 1s]
                 [--bottleneck tbf|htb]          # the kernel's shaper as the bottleneck (README)
                 [--aqm codel|pie]               # CoDel or PIE at the delay line's bottleneck
                 [--slot 1ms,6ms [--slot-packets 42] [--slot-bytes 64K]]   # Wi-Fi-like bursts
                 [--ack-rate 2M [--ack-queue 25K]]   # a slower ACK direction (asymmetric access)
                 [--ack-cross 1M --ack-cross-on 2s --ack-cross-off 3s]  # the site's uploads there
    labctl.py exec [--lab NAME] -- quickprobe -c 10.99.0.2 --json
    labctl.py stats [--lab NAME]                 # the delay line's counters now (JSON)
    labctl.py down [--lab NAME]
    labctl.py paths                              # list the named paths

Topology: a "near" namespace (the vantage: 10.99.0.1 on qpl0) and a "far" namespace
(the site: 10.99.0.2 on qpl1, running `iperf3 -s` or `iperf -s`), joined only by
prober/build/delayline. The addresses exist only inside those two namespaces; the root
namespace has no route to them, so lab traffic can go nowhere else. Every lab has its own
pair of namespaces, so several labs (and the fixed server port inside them) never collide.

Teardown, chosen to survive SIGKILL: the namespaces are anonymous (unshare(CLONE_NEWNET) in
a holder child, never bind-mounted under /run/netns), so they live exactly as long as the
processes inside them. Every process the lab starts (holders, delay line, server, and
commands run with Lab.run / Lab.popen) gets PR_SET_PDEATHSIG=SIGKILL, so if labctl or the
Python process using Lab dies, even by SIGKILL, they die too and the kernel frees the
namespaces and the TUN devices. Nothing needs a cleanup pass. Commands started by
`labctl exec` from another shell are not children of the lab: they keep the near namespace
alive until they exit (the path is gone then, so they fail fast).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path as FsPath

LAB_DIR = FsPath(__file__).resolve().parent
# The repository's shared port helpers (scripts/ports.py), also when run as prober/lab/labctl.py.
sys.path.insert(0, str(LAB_DIR.parents[1]))
from scripts import ports  # noqa: E402

PROBER_DIR = LAB_DIR.parent
DELAYLINE = PROBER_DIR / "build" / "delayline"
PATHS_FILE = LAB_DIR / "paths.json"
STATE_DIR = FsPath(os.environ.get("QPLAB_STATE_DIR", "/run/qplab"))

NEAR_ADDR = "10.99.0.1"
FAR_ADDR = "10.99.0.2"
NEAR_DEV = "qpl0"
FAR_DEV = "qpl1"
IPERF3_PORT = 5201
IPERF2_PORT = 5001
BOTTLENECKS = ("delayline", "tbf", "htb")
AQMS = ("none", "codel", "pie")
JITTER_ORDERS = ("fifo", "netem")
IFB_DEV = "qplb"

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


class LabError(RuntimeError):
    """The lab could not be brought up; the message says what is missing."""


# ---------------------------------------------------------------- units


def parse_rate(text: str | float | int) -> float:
    """'100M' -> 100e6 bit/s. SI suffixes (k, M, G) as in link rates; a bare number is bit/s."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)(?:bit|bps|b)?(?:/s)?\s*", text)
    if not m:
        raise ValueError(f"bad rate {text!r}: use a number of bit/s with an optional k/M/G suffix, e.g. 100M")
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
    return float(m.group(1)) * scale


def parse_size(text: str | int) -> int:
    """'1M' -> 1048576 bytes: K/M/G are 1024-based, like iperf's -w."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)[bB]?\s*", text)
    if not m:
        raise ValueError(f"bad size {text!r}: use bytes with an optional K/M/G suffix (1024-based), e.g. 1M")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def parse_time_ms(text: str | float | int) -> float:
    """'50ms' / '0.05s' / '50' (ms) -> milliseconds."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s|us)?\s*", text)
    if not m:
        raise ValueError(f"bad time {text!r}: use e.g. 50ms, 0.05s or 50 (milliseconds)")
    return float(m.group(1)) * {None: 1.0, "ms": 1.0, "s": 1e3, "us": 1e-3}[m.group(2)]


# ---------------------------------------------------------------- paths


def _cross_problems(
    field: str, rate_name: str, rate_mbps: float, mbps: float, on_ms: float, off_ms: float
) -> list[str]:
    """What is wrong with one direction's cross-traffic settings (field "cross" for the data
    direction's, "ack_cross" for the ACK direction's): below that direction's rate, on
    1 ms-1 h, off 0-1 h."""
    problems = []
    if not (0 <= mbps < rate_mbps):
        problems.append(f"{field}_mbps {mbps} (allowed: 0 <= cross < {rate_name}, {rate_mbps:g})")
    if not (1 <= on_ms <= 3.6e6) or not (0 <= off_ms <= 3.6e6):
        problems.append(f"{field.replace('_', ' ')} on/off {on_ms:g}/{off_ms:g} ms (allowed: on 1 ms-1 h, off 0-1 h)")
    return problems


def _cross_args(direction: str, mbps: float, on_ms: float, off_ms: float) -> list[str]:
    """The delay line's options for open-loop cross traffic in one direction (fwd or rev)."""
    return [
        f"--{direction}-cross-rate",
        str(int(mbps * 1e6)),
        f"--{direction}-cross-on-ms",
        repr(float(on_ms)),
        f"--{direction}-cross-off-ms",
        repr(float(off_ms)),
    ]


@dataclass
class PathSpec:
    """One emulated path: both directions get the same rate, half the RTT, queue and loss."""

    name: str = "custom"
    rate_mbps: float = 100.0
    rtt_ms: float = 50.0
    queue_bytes: int = 1 << 20
    loss: float = 0.0
    mtu: int = 9000
    server: str = "iperf3"
    server_window: str | None = None
    description: str = ""
    # Per-packet one-way delay jitter on both directions: uniform in +/- jitter_ms, or normal
    # with std-dev jitter_ms (cut at 4 std-devs). jitter_order "fifo": a packet never leaves
    # before the one ahead of it; "netem": each keeps its own draw and overtakes those ahead
    # that drew more, as netem's time-sorted queue reorders a bulk flow.
    jitter_ms: float = 0.0
    jitter_dist: str = "uniform"
    jitter_order: str = "fifo"
    # Open-loop cross traffic on the forward (data) bottleneck: cross_mbps while on, periodic
    # on/off from the delay line's start (cross_off_ms 0 = always on), 1500-byte packets.
    cross_mbps: float = 0.0
    cross_on_ms: float = 1000.0
    cross_off_ms: float = 0.0
    # Where the data direction's bottleneck (rate and drop-tail queue) is: the delay line's own
    # model ("delayline"), or the kernel's tbf or htb + bfifo on the far namespace's ingress
    # (through an ifb device), the delay line then only delaying: a second, independent
    # emulation (token-bucket bursts, hrtimer release) to check that quick mode does not
    # depend on the delay line's exact serialisation.
    bottleneck: str = "delayline"
    # Active queue management at the delay line's bottleneck (both directions): "none"
    # (drop-tail alone), "codel" (RFC 8289: target 5 ms, interval 100 ms) or "pie" (RFC 8033,
    # as Linux's sch_pie and DOCSIS cable modems run it: target 15 ms, early drops at the
    # tail); the queue's size stays the hard limit. The kernel here has no codel, fq_codel,
    # red or pie qdisc.
    aqm: str = "none"
    # The tbf bottleneck's token bucket in ms at the rate (0: 3 MTUs or 1 ms, whichever is
    # larger). With a queue of a packet or two it is a policer: bursts pass up to the bucket,
    # the rest is dropped, nothing waits.
    burst_ms: float = 0.0
    # netem's slotting on both directions (Wi-Fi-like aggregation): a packet due with no slot
    # open waits for the next one, a gap uniform in [slot_min_ms, slot_max_ms] later, and a
    # slot carries at most slot_packets packets and slot_bytes bytes (0: no limit) before
    # the next one's gap begins. 0 / 0: no slots.
    slot_min_ms: float = 0.0
    slot_max_ms: float = 0.0
    slot_packets: int = 0
    slot_bytes: int = 0
    # The ACK direction's (far -> near) own bottleneck, for asymmetric access links (a cable
    # modem's or DSL line's upstream carries the site's ACKs at a tenth of the rate or less):
    # its rate (0: the data direction's) and its drop-tail queue (0: queue_bytes).
    ack_rate_mbps: float = 0.0
    ack_queue_bytes: int = 0
    # Open-loop cross traffic in the ACK direction (the site's own uploads sharing that
    # upstream with its ACKs), as cross_* in the data direction: ack_cross_mbps while on.
    ack_cross_mbps: float = 0.0
    ack_cross_on_ms: float = 1000.0
    ack_cross_off_ms: float = 0.0

    def __post_init__(self):
        problems = []
        if not (0 < self.rate_mbps <= 10000):
            problems.append(f"rate {self.rate_mbps} Mbit/s (allowed: > 0 and <= 10000)")
        if not (0 <= self.rtt_ms <= 10000):
            problems.append(f"rtt {self.rtt_ms} ms (allowed: 0-10000)")
        if not (1500 <= self.queue_bytes <= 1 << 30):
            problems.append(f"queue {self.queue_bytes} bytes (allowed: 1500 B - 1 GiB)")
        if not (0 <= self.loss < 1):
            problems.append(f"loss {self.loss} (allowed: a probability in [0, 1))")
        if not (1280 <= self.mtu <= 65000):
            problems.append(f"mtu {self.mtu} (allowed: 1280-65000)")
        if not (0 <= self.jitter_ms <= 1000):
            problems.append(f"jitter_ms {self.jitter_ms} (allowed: 0-1000)")
        if self.jitter_dist not in ("uniform", "normal"):
            problems.append(f"jitter_dist {self.jitter_dist!r} (allowed: uniform, normal)")
        if self.jitter_order not in JITTER_ORDERS:
            problems.append(f"jitter_order {self.jitter_order!r} (allowed: {', '.join(JITTER_ORDERS)})")
        problems += _cross_problems(
            "cross", "the rate", self.rate_mbps, self.cross_mbps, self.cross_on_ms, self.cross_off_ms
        )
        if self.bottleneck not in BOTTLENECKS:
            problems.append(f"bottleneck {self.bottleneck!r} (allowed: {', '.join(BOTTLENECKS)})")
        elif self.bottleneck != "delayline" and self.cross_mbps:
            problems.append("cross traffic with a kernel bottleneck (allowed only with bottleneck delayline)")
        if not (0 <= self.burst_ms <= 10000):
            problems.append(f"burst_ms {self.burst_ms} (allowed: 0-10000)")
        elif self.burst_ms and self.bottleneck != "tbf":
            problems.append("burst_ms without a tbf bottleneck (allowed only with bottleneck tbf)")
        if self.aqm not in AQMS:
            problems.append(f"aqm {self.aqm!r} (allowed: {', '.join(AQMS)})")
        elif self.aqm != "none" and self.bottleneck != "delayline":
            problems.append(f"aqm {self.aqm} with a kernel bottleneck (allowed only with bottleneck delayline)")
        problems += self._slot_problems()
        if not (0 <= self.ack_rate_mbps <= 10000):
            problems.append(f"ack_rate_mbps {self.ack_rate_mbps} (allowed: 0 = the rate, or up to 10000)")
        if self.ack_queue_bytes and not (1500 <= self.ack_queue_bytes <= 1 << 30):
            problems.append(f"ack_queue_bytes {self.ack_queue_bytes} (allowed: 0 = the queue, or 1500 B - 1 GiB)")
        problems += _cross_problems(
            "ack_cross",
            "the ACK direction's rate",
            self.ack_rate_mbps or self.rate_mbps,
            self.ack_cross_mbps,
            self.ack_cross_on_ms,
            self.ack_cross_off_ms,
        )
        if self.server not in ("iperf3", "iperf2"):
            problems.append(f"server {self.server!r} (allowed: iperf3, iperf2)")
        elif self.server_window is not None:
            try:
                parse_size(self.server_window)
            except ValueError as e:
                problems.append(f"server_window: {e}")
            if self.server == "iperf3":
                # iperf3 -s refuses -w ("client only"): the client sets an iperf3 window.
                problems.append("server_window with iperf3 (allowed only with server iperf2: `iperf3 -s` has no -w)")
        if problems:
            raise ValueError(f"path {self.name!r}: bad " + "; bad ".join(problems))

    def _slot_problems(self) -> list[str]:
        if not (0 <= self.slot_min_ms <= self.slot_max_ms <= 1000):
            return [f"slot gap {self.slot_min_ms:g}-{self.slot_max_ms:g} ms (allowed: 0 <= min <= max <= 1000)"]
        if not (0 <= self.slot_packets <= 1_000_000) or not (0 <= self.slot_bytes <= 1_000_000_000):
            return [f"slot budget {self.slot_packets} packets / {self.slot_bytes} bytes (allowed: 0-1e6 / 0-1e9)"]
        if not self.slot_max_ms:
            if self.slot_packets or self.slot_bytes:
                return ["slot budget with no slot gap (allowed: slot_max_ms > 0)"]
            return []
        if self.jitter_ms and self.jitter_order == "netem":
            return ["slots with jitter_order netem (allowed only with fifo)"]
        budget = min(b for b in (self.slot_bytes, self.slot_packets * self.mtu, 1 << 62) if b)
        carried_mbps = budget * 8 / ((self.slot_min_ms + self.slot_max_ms) / 2e3) / 1e6
        if carried_mbps < self.rate_mbps:
            # the excess would wait behind the slots in the delay line's ring, a queue with no
            # drop-tail limit
            return [
                f"slot budget {budget} bytes per {(self.slot_min_ms + self.slot_max_ms) / 2:g} ms "
                f"carries {carried_mbps:.1f} Mbit/s (allowed: at least the rate, {self.rate_mbps:g})"
            ]
        return []

    @property
    def rate_bps(self) -> float:
        return self.rate_mbps * 1e6

    @property
    def bdp_bytes(self) -> int:
        return int(self.rate_bps / 8 * self.rtt_ms / 1e3)

    @property
    def cross_duty(self) -> float:
        """The share of time the cross-traffic source is on."""
        if not self.cross_mbps:
            return 0.0
        return self.cross_on_ms / (self.cross_on_ms + self.cross_off_ms)

    @property
    def port(self) -> int:
        return IPERF2_PORT if self.server == "iperf2" else IPERF3_PORT


def load_paths(file: FsPath = PATHS_FILE) -> dict[str, PathSpec]:
    """The named paths of paths.json (the one data file the bench and the portal share)."""
    data = json.loads(FsPath(file).read_text())
    return {name: PathSpec(name=name, **spec) for name, spec in data["paths"].items()}


# ---------------------------------------------------------------- namespaces


def _check_libc(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _die_with_parent(parent_pid: int) -> None:
    # In the forked child: die with the lab; if the lab already died, do not linger.
    _check_libc(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() != parent_pid:
        os.write(2, b"labctl: the lab process died before this child started\n")
        os._exit(125)


def _setns(ns_path: str) -> None:
    fd = os.open(ns_path, os.O_RDONLY)
    try:
        _check_libc(_libc.setns(fd, CLONE_NEWNET), f"setns {ns_path}")
    finally:
        os.close(fd)


def lab_unavailable_reason() -> str | None:
    """Why the lab cannot run here (None if it can): root, /dev/net/tun, netns, the binary."""
    if os.geteuid() != 0:
        return "the path lab needs root (network namespaces and TUN devices)"
    try:
        os.close(os.open("/dev/net/tun", os.O_RDWR))
    except OSError as e:
        return f"the path lab needs /dev/net/tun: {e.strerror}"
    for tool in ("ip", "sleep"):
        if shutil.which(tool) is None:
            return f"the path lab needs the '{tool}' command (Debian: iproute2 / coreutils)"
    if not os.access(DELAYLINE, os.X_OK):
        return f"{DELAYLINE} is not built: run `make lab`"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.strip()}"
    return None


class Lab:
    """An emulated path with a server in the far namespace; a context manager.

    with Lab(load_paths()["wan50"]) as lab:
        out = lab.run(["quickprobe", "-c", lab.far_addr, "--json"], capture_output=True)
        print(lab.stats())
    """

    def __init__(
        self,
        path: PathSpec,
        *,
        seed: int = 1,
        server: bool = True,
        tcp_mem_max: int = 32 << 20,
        log_dir: FsPath | None = None,
        rt_prio: int = 10,
    ):
        self.path = path
        self.seed = seed
        self.want_server = server
        self.tcp_mem_max = tcp_mem_max
        self.log_dir = log_dir
        self.rt_prio = rt_prio
        self.near_addr, self.far_addr = NEAR_ADDR, FAR_ADDR
        self.port = path.port
        self._procs: list[subprocess.Popen] = []
        self._near = self._far = self._delay = self._server = None
        self._lines: queue.Queue = queue.Queue()
        self.final_stats: dict | None = None

    # -- lifecycle

    def __enter__(self) -> "Lab":
        reason = lab_unavailable_reason()
        if reason:
            raise LabError(reason)
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _spawn(self, argv, ns: str | None, new_ns: bool = False, **kw) -> subprocess.Popen:
        parent = os.getpid()

        def pre():
            _die_with_parent(parent)
            if new_ns:
                _check_libc(_libc.unshare(CLONE_NEWNET), "unshare")
            elif ns:
                _setns(ns)

        p = subprocess.Popen(argv, preexec_fn=pre, **kw)
        self._procs.append(p)
        return p

    def _start(self) -> None:
        self._near = self._spawn(["sleep", "infinity"], None, new_ns=True)
        self._far = self._spawn(["sleep", "infinity"], None, new_ns=True)
        for holder in (self._near, self._far):
            self._wait_new_ns(holder)
            self._sysctls(self.ns_path(holder))
        self._start_delayline()
        self._configure(self.near_ns, NEAR_DEV, NEAR_ADDR, FAR_ADDR)
        self._configure(self.far_ns, FAR_DEV, FAR_ADDR, NEAR_ADDR)
        if self.path.bottleneck != "delayline":
            self._kernel_bottleneck()
        if self.want_server:
            self._start_server()

    @staticmethod
    def ns_path(p: subprocess.Popen) -> str:
        return f"/proc/{p.pid}/ns/net"

    @property
    def near_ns(self) -> str:
        return self.ns_path(self._near)

    @property
    def far_ns(self) -> str:
        return self.ns_path(self._far)

    def _wait_new_ns(self, holder: subprocess.Popen) -> None:
        # The holder unshares after fork: wait until its namespace differs from ours.
        mine = os.readlink("/proc/self/ns/net")
        for _ in range(500):
            if holder.poll() is not None:
                raise LabError(f"namespace holder exited with {holder.returncode}")
            try:
                if os.readlink(self.ns_path(holder)) != mine:
                    return
            except FileNotFoundError:
                pass
            time.sleep(0.002)
        raise LabError("namespace holder did not create its namespace within 1 s")

    def _ns_cmd(self, ns: str, argv: list[str]) -> str:
        """Run a short command in a lab namespace; its output (stdout and stderr)."""
        p = self._spawn(argv, ns, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = p.communicate(timeout=10)
        self._procs.remove(p)
        if p.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed in the lab namespace: {out.strip()}")
        return out

    def _sysctls(self, ns: str) -> None:
        # Autotuning is bounded by tcp_rmem/tcp_wmem[2], which are per namespace: raise them so
        # windows can exceed the japan path's ~5 MB BDP. net.core.[rw]mem_max (explicit -w)
        # are global in this kernel and stay at the host's value. Cached ssthresh would let a
        # second connection skip slow-start: turn the metrics cache off. IPv6 is off so that
        # no router/MLD chatter crosses the path (the lab is IPv4 only).
        top = self.tcp_mem_max
        self._ns_cmd(
            ns,
            [
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                f"net.ipv4.tcp_rmem=4096 131072 {top}",
                f"net.ipv4.tcp_wmem=4096 16384 {top}",
                "net.ipv4.tcp_no_metrics_save=1",
            ],
        )

    def _start_delayline(self) -> None:
        p = self.path
        one_way_us = int(round(p.rtt_ms * 1000 / 2))
        argv = [
            str(DELAYLINE),
            "--near-ns",
            self.near_ns,
            "--far-ns",
            self.far_ns,
            "--near-dev",
            NEAR_DEV,
            "--far-dev",
            FAR_DEV,
            "--rate",
            str(int(p.rate_bps)),
            "--delay-us",
            str(one_way_us),
            "--queue",
            str(p.queue_bytes),
            "--loss",
            repr(p.loss),
            "--seed",
            str(self.seed),
            # The delay line needs ~20 % of a core at 300 Mbit/s and never spins, so
            # SCHED_FIFO costs others little and keeps its release times honest on a
            # box shared with the prober, iperf3 and everyone else's work.
            "--rt-prio",
            str(self.rt_prio),
        ]
        if p.bottleneck != "delayline":
            # The kernel's qdisc on the far side is the data direction's bottleneck: the delay
            # line only delays (and drops at random) on the way there.
            argv += ["--fwd-rate", "0"]
        if p.aqm != "none":
            argv += ["--aqm", p.aqm]
        if p.slot_max_ms:
            argv += [
                "--slot-min-us",
                str(round(p.slot_min_ms * 1000)),
                "--slot-max-us",
                str(round(p.slot_max_ms * 1000)),
            ]
            argv += ["--slot-packets", str(p.slot_packets), "--slot-bytes", str(p.slot_bytes)]
        if p.ack_rate_mbps:
            argv += ["--rev-rate", str(int(p.ack_rate_mbps * 1e6))]
        if p.ack_queue_bytes:
            argv += ["--rev-queue", str(p.ack_queue_bytes)]
        if p.ack_cross_mbps:
            argv += _cross_args("rev", p.ack_cross_mbps, p.ack_cross_on_ms, p.ack_cross_off_ms)
        if p.jitter_ms:
            argv += ["--jitter-us", str(round(p.jitter_ms * 1000)), "--jitter-dist", p.jitter_dist]
            argv += ["--jitter-order", p.jitter_order]
        if p.cross_mbps:
            # The data direction (near -> far); the ACK direction has its own (ack_cross_*).
            argv += _cross_args("fwd", p.cross_mbps, p.cross_on_ms, p.cross_off_ms)
        self._delay = self._spawn(argv, None, stdout=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._read_delayline, daemon=True).start()
        first = self._next_line(5.0)
        if first is None or first.get("event") != "ready":
            self._delay.wait(timeout=5)
            raise LabError(f"delayline did not start (exit {self._delay.returncode}); see stderr above")

    def _read_delayline(self) -> None:
        for line in self._delay.stdout:
            try:
                self._lines.put(json.loads(line))
            except ValueError:
                pass
        self._lines.put(None)

    def _next_line(self, timeout: float) -> dict | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _configure(self, ns: str, dev: str, addr: str, peer: str) -> None:
        self._ns_cmd(ns, ["ip", "link", "set", "lo", "up"])
        self._ns_cmd(ns, ["ip", "link", "set", dev, "mtu", str(self.path.mtu), "txqueuelen", "10000", "up"])
        self._ns_cmd(ns, ["ip", "addr", "add", addr, "peer", f"{peer}/32", "dev", dev])

    def _kernel_bottleneck(self) -> None:
        """The data direction's bottleneck as the kernel's tbf (token bucket, hrtimer release,
        a burst of a few packets or 1 ms at the rate) or htb with a bfifo leaf, with the
        path's queue in bytes, on the far side's ingress: qpl1's ingress is redirected to an
        ifb device, whose egress qdisc shapes it before the far stack sees the packets."""
        p, ns = self.path, self.far_ns
        rate = f"{int(p.rate_bps)}bit"
        burst = max(3 * (p.mtu + 14), int(p.rate_bps / 8 * max(p.burst_ms, 1.0) / 1000))
        cmds = [
            f"ip link add {IFB_DEV} type ifb",
            f"ip link set {IFB_DEV} mtu {p.mtu} txqueuelen 10000 up",
            f"tc qdisc add dev {FAR_DEV} handle ffff: ingress",
            f"tc filter add dev {FAR_DEV} parent ffff: protocol all u32 match u32 0 0"
            f" action mirred egress redirect dev {IFB_DEV}",
        ]
        if p.bottleneck == "tbf":
            cmds.append(f"tc qdisc add dev {IFB_DEV} root tbf rate {rate} burst {burst} limit {p.queue_bytes}")
        else:
            cmds += [
                f"tc qdisc add dev {IFB_DEV} root handle 1: htb default 1",
                f"tc class add dev {IFB_DEV} parent 1: classid 1:1 htb rate {rate} ceil {rate}"
                f" burst {burst} cburst {burst}",
                f"tc qdisc add dev {IFB_DEV} parent 1:1 bfifo limit {p.queue_bytes}",
            ]
        for cmd in cmds:
            self._ns_cmd(ns, cmd.split())

    def kernel_bottleneck_stats(self) -> str:
        """`tc -s qdisc` on the far side's ifb device (drops, backlog), or "" without one."""
        if self.path.bottleneck == "delayline":
            return ""
        return self._ns_cmd(self.far_ns, ["tc", "-s", "qdisc", "show", "dev", IFB_DEV])

    def _start_server(self) -> None:
        p = self.path
        if p.server == "iperf2":
            argv = ["iperf", "-s", "-p", str(self.port)]
        else:
            argv = ["iperf3", "-s", "-p", str(self.port)]
        if p.server_window:
            argv += ["-w", p.server_window]
        out = open(self.log_dir / f"server-{p.name}.log", "w") if self.log_dir else subprocess.DEVNULL
        self._server = self._spawn(argv, self.far_ns, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 5
        while not ports.listening(self.port, pid=self._far.pid):
            if self._server.poll() is not None or time.monotonic() > deadline:
                raise LabError(f"{argv[0]} -s did not start listening on port {self.port}")
            time.sleep(0.01)

    def stats(self, timeout: float = 5.0) -> dict:
        """The delay line's counters now (per direction: fwd = near->far, rev = far->near)."""
        while not self._lines.empty():
            self._lines.get_nowait()
        self._delay.send_signal(signal.SIGUSR1)
        while True:
            line = self._next_line(timeout)
            if line is None:
                raise LabError("delayline did not answer SIGUSR1")
            if line.get("event") == "stats":
                return line

    def close(self) -> None:
        """Stop everything the lab started; keeps the delay line's exit counters in final_stats."""
        if self._delay is not None and self._delay.poll() is None:
            self._delay.terminate()
            try:
                self._delay.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            while True:
                line = self._next_line(1.0)
                if line is None:
                    break
                if line.get("event") == "exit":
                    self.final_stats = line
        for p in reversed(self._procs):
            if p.poll() is None:
                p.kill()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if p.stdout:
                p.stdout.close()
        self._procs.clear()

    # -- using the lab

    def popen(self, argv: list[str], where: str = "near", **kw) -> subprocess.Popen:
        """Start a command in the near (vantage) or far (site) namespace; dies with the lab."""
        ns = self.near_ns if where == "near" else self.far_ns
        return self._spawn(argv, ns, **kw)

    def run(
        self, argv: list[str], where: str = "near", timeout: float | None = None, **kw
    ) -> subprocess.CompletedProcess:
        """Run a command to completion in a lab namespace (like subprocess.run)."""
        if kw.pop("capture_output", False):
            kw["stdout"] = kw["stderr"] = subprocess.PIPE
        p = self.popen(argv, where, **kw)
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException:
            p.kill()
            p.wait()
            raise
        finally:
            if p in self._procs:
                self._procs.remove(p)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def socket(self, family=socket.AF_INET, type=socket.SOCK_STREAM, where: str = "near"):
        """A socket created inside a lab namespace (a socket keeps the namespace it was born in)."""
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            _setns(self.near_ns if where == "near" else self.far_ns)
            return socket.socket(family, type)
        finally:
            _check_libc(_libc.setns(home, CLONE_NEWNET), "setns home")
            os.close(home)

    def info(self) -> dict:
        return {
            "path": asdict(self.path),
            "near_addr": self.near_addr,
            "far_addr": self.far_addr,
            "port": self.port,
            "server": self.path.server,
            "pid": os.getpid(),
            "near_ns": self.near_ns,
            "far_ns": self.far_ns,
            "near_holder": self._near.pid,
            "far_holder": self._far.pid,
            "delayline": self._delay.pid,
        }


# ---------------------------------------------------------------- command line


def _path_from_args(a) -> PathSpec:
    if a.path:
        paths = load_paths()
        if a.path not in paths:
            raise SystemExit(f"labctl: unknown path {a.path!r}; named paths: {', '.join(paths)}")
        spec = paths[a.path]
    else:
        spec = PathSpec()
    over = {}
    if a.rate:
        over["rate_mbps"] = parse_rate(a.rate) / 1e6
    if a.rtt:
        over["rtt_ms"] = parse_time_ms(a.rtt)
    if a.queue:
        over["queue_bytes"] = parse_size(a.queue)
    if a.loss is not None:
        over["loss"] = a.loss
    if a.mtu:
        over["mtu"] = a.mtu
    if a.iperf2:
        over["server"] = "iperf2"
    if a.server_window:
        over["server_window"] = a.server_window
    if a.jitter:
        over["jitter_ms"] = parse_time_ms(a.jitter)
    if a.jitter_dist:
        over["jitter_dist"] = a.jitter_dist
    if a.jitter_order:
        over["jitter_order"] = a.jitter_order
    if a.cross:
        over["cross_mbps"] = parse_rate(a.cross) / 1e6
    if a.cross_on:
        over["cross_on_ms"] = parse_time_ms(a.cross_on)
    if a.cross_off:
        over["cross_off_ms"] = parse_time_ms(a.cross_off)
    if a.bottleneck:
        over["bottleneck"] = a.bottleneck
    if a.aqm:
        over["aqm"] = a.aqm
    if a.slot:
        lo, _, hi = a.slot.partition(",")
        over["slot_min_ms"] = parse_time_ms(lo)
        over["slot_max_ms"] = parse_time_ms(hi or lo)
    if a.slot_packets is not None:
        over["slot_packets"] = a.slot_packets
    if a.slot_bytes:
        over["slot_bytes"] = parse_size(a.slot_bytes)
    if a.ack_rate:
        over["ack_rate_mbps"] = parse_rate(a.ack_rate) / 1e6
    if a.ack_queue:
        over["ack_queue_bytes"] = parse_size(a.ack_queue)
    if a.ack_cross:
        over["ack_cross_mbps"] = parse_rate(a.ack_cross) / 1e6
    if a.ack_cross_on:
        over["ack_cross_on_ms"] = parse_time_ms(a.ack_cross_on)
    if a.ack_cross_off:
        over["ack_cross_off_ms"] = parse_time_ms(a.ack_cross_off)
    if over:
        d = asdict(spec)
        d.update(over)
        spec = PathSpec(**d)
    return spec


def _state_file(name: str) -> FsPath:
    return STATE_DIR / f"{name}.json"


def _stats_file(name: str) -> FsPath:
    return STATE_DIR / f"{name}.stats.json"


def _load_state(name: str) -> dict:
    f = _state_file(name)
    try:
        st = json.loads(f.read_text())
    except FileNotFoundError:
        raise SystemExit(f"labctl: no lab named {name!r} is up (no {f})")
    try:
        os.kill(st["pid"], 0)
    except ProcessLookupError:
        f.unlink(missing_ok=True)
        raise SystemExit(f"labctl: lab {name!r} is gone (its labctl process {st['pid']} died)")
    return st


def cmd_up(a) -> int:
    try:
        spec = _path_from_args(a)
    except ValueError as e:
        raise SystemExit(f"labctl: {e}")
    stop, want_stats = threading.Event(), threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda *_: stop.set())
    # `labctl stats` asks with SIGUSR1; the counters are written next to the state file.
    signal.signal(signal.SIGUSR1, lambda *_: (want_stats.set(), stop.set()))
    try:
        with Lab(spec, seed=a.seed) as lab:
            STATE_DIR.mkdir(parents=True, exist_ok=True)
            _state_file(a.lab).write_text(json.dumps(lab.info()))
            print(json.dumps({"event": "up", "lab": a.lab, **lab.info()}), flush=True)
            try:
                while True:
                    stop.wait(0.5)
                    if want_stats.is_set():
                        want_stats.clear()
                        stop.clear()
                        tmp = _stats_file(a.lab).with_suffix(".tmp")
                        tmp.write_text(json.dumps(lab.stats()))
                        tmp.replace(_stats_file(a.lab))
                    if stop.is_set():
                        break
                    if lab._delay.poll() is not None:
                        print("labctl: the delay line died", file=sys.stderr)
                        return 1
            finally:
                _state_file(a.lab).unlink(missing_ok=True)
                _stats_file(a.lab).unlink(missing_ok=True)
        print(json.dumps(lab.final_stats), flush=True)
        return 0
    except LabError as e:
        print(f"labctl: {e}", file=sys.stderr)
        return 1


def cmd_exec(a) -> int:
    st = _load_state(a.lab)
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not argv:
        raise SystemExit("labctl: exec needs a command after --")
    _setns(st["near_ns"] if a.where == "near" else st["far_ns"])
    os.execvp(argv[0], argv)


def cmd_stats(a) -> int:
    st = _load_state(a.lab)
    f = _stats_file(a.lab)
    f.unlink(missing_ok=True)
    os.kill(st["pid"], signal.SIGUSR1)
    for _ in range(200):
        if f.exists():
            print(f.read_text())
            return 0
        time.sleep(0.05)
    print(f"labctl: lab process {st['pid']} did not write its counters", file=sys.stderr)
    return 1


def _alive(pid: int) -> bool:
    # A zombie (exited, not yet reaped by its parent) has finished its teardown.
    try:
        stat = FsPath(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cmd_down(a) -> int:
    st = _load_state(a.lab)
    os.kill(st["pid"], signal.SIGTERM)
    for _ in range(100):
        if not _alive(st["pid"]):
            return 0
        time.sleep(0.05)
    print(f"labctl: lab process {st['pid']} did not stop", file=sys.stderr)
    return 1


def cmd_paths(a) -> int:
    for name, p in load_paths().items():
        extra = (
            (f" jitter {p.jitter_dist} {p.jitter_ms:g} ms {p.jitter_order}" if p.jitter_ms else "")
            + (f" cross {p.cross_mbps:g} Mbit/s {p.cross_on_ms:g}/{p.cross_off_ms:g} ms" if p.cross_mbps else "")
            + (f" aqm {p.aqm}" if p.aqm != "none" else "")
            + (f" slot {p.slot_min_ms:g}-{p.slot_max_ms:g} ms" if p.slot_max_ms else "")
            + (f" acks {p.ack_rate_mbps:g} Mbit/s" if p.ack_rate_mbps else "")
            + (f" ack-cross {p.ack_cross_mbps:g} Mbit/s" if p.ack_cross_mbps else "")
        )
        print(
            f"{name:8s} {p.rate_mbps:7g} Mbit/s {p.rtt_ms:5g} ms queue {p.queue_bytes:>8d} B "
            f"loss {p.loss:<6g} BDP {p.bdp_bytes / 1e6:6.2f} MB{extra}  {p.server}"
            f"{' -w ' + p.server_window if p.server_window else ''}  {p.description}"
        )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="labctl", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="bring a path up; Ctrl-C / SIGTERM / `down` tears it down")
    up.add_argument("--path", help="a named path from paths.json")
    up.add_argument("--rate", help="bottleneck rate per direction, e.g. 100M (bit/s)")
    up.add_argument("--rtt", help="round-trip propagation delay, e.g. 50ms")
    up.add_argument("--queue", help="drop-tail queue per direction, e.g. 1M (bytes)")
    up.add_argument("--loss", type=float, help="random loss probability per packet, e.g. 0.001")
    up.add_argument("--mtu", type=int, help="TUN MTU (default 9000)")
    up.add_argument("--iperf2", action="store_true", help="run `iperf -s` instead of `iperf3 -s`")
    up.add_argument("--server-window", help="the server's -w, e.g. 256K")
    up.add_argument(
        "--jitter",
        help="per-packet one-way delay jitter, e.g. 2ms (uniform +/-, or "
        "the std-dev with --jitter-dist normal); packets never reorder unless --jitter-order netem",
    )
    up.add_argument("--jitter-dist", choices=("uniform", "normal"), help="jitter distribution")
    up.add_argument(
        "--jitter-order",
        choices=JITTER_ORDERS,
        help="fifo (default): never reorder; netem: each packet its own draw, reordering as netem does",
    )
    up.add_argument("--cross", help="open-loop cross traffic on the data direction, e.g. 40M")
    up.add_argument("--cross-on", help="cross traffic on period, e.g. 1s (default 1s)")
    up.add_argument("--cross-off", help="cross traffic off period, e.g. 1s (default 0: always on)")
    up.add_argument(
        "--bottleneck", choices=BOTTLENECKS, help="the data direction's bottleneck (default: the delay line's)"
    )
    up.add_argument("--aqm", choices=AQMS, help="active queue management at the bottleneck (default none)")
    up.add_argument(
        "--slot",
        help="netem-style slots (Wi-Fi-like aggregation) both ways: the gap before a slot, "
        "e.g. 1ms,6ms (uniform in that range) or 4ms",
    )
    up.add_argument("--slot-packets", type=int, help="at most this many packets per slot (default 0: no limit)")
    up.add_argument("--slot-bytes", help="at most this many bytes per slot, e.g. 64K (default: no limit)")
    up.add_argument("--ack-rate", help="the ACK direction's own rate, e.g. 2M (default: --rate's)")
    up.add_argument("--ack-queue", help="the ACK direction's own drop-tail queue, e.g. 25K (default: --queue's)")
    up.add_argument("--ack-cross", help="open-loop cross traffic in the ACK direction, e.g. 1M")
    up.add_argument("--ack-cross-on", help="its on period, e.g. 2s (default 1s)")
    up.add_argument("--ack-cross-off", help="its off period, e.g. 3s (default 0: always on)")
    up.add_argument("--seed", type=int, default=1, help="loss and jitter random seed")
    for p in (up,) + tuple(
        sub.add_parser(n, help=h)
        for n, h in (
            ("exec", "run a command in the lab's near namespace"),
            ("stats", "print the delay line's counters"),
            ("down", "tear the lab down"),
        )
    ):
        p.add_argument("--lab", default="default", help="lab name (several can be up at once)")
    execp = sub.choices["exec"]
    execp.add_argument(
        "--far",
        dest="where",
        action="store_const",
        const="far",
        default="near",
        help="run in the far (server) namespace instead",
    )
    execp.add_argument("argv", nargs=argparse.REMAINDER)
    sub.add_parser("paths", help="list the named paths")
    a = ap.parse_args(argv)
    return {"up": cmd_up, "exec": cmd_exec, "stats": cmd_stats, "down": cmd_down, "paths": cmd_paths}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

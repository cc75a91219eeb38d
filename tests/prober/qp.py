"""Helpers for the prober's integration tests: run the real quickprobe binary, start real
iperf servers on free ports, read the event contract out of prober/EVENTS.md."""

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from scripts.ports import established, free_port, listening_ports  # noqa: F401 (qp.free_port in tests)

ROOT = Path(__file__).resolve().parents[2]
QUICKPROBE = ROOT / "prober" / "build" / "quickprobe"
EVENTS_MD = ROOT / "prober" / "EVENTS.md"

RULES = {"paper_cwnd_stable", "paper_small_cwnd", "ssthresh_set", "bbr_plateau", "streams_plateau"}


class Proc:
    """A child process that is always reaped: stop() terminates, then kills."""

    def __init__(self, argv, **kw):
        self.argv = argv
        self.p = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw
        )
        self.output = None

    def stop(self, sig=signal.SIGTERM):
        if self.output is not None:
            return self.output
        if self.p.poll() is None:
            try:
                self.p.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            self.output, _ = self.p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.output, _ = self.p.communicate()
        return self.output


class Server(Proc):
    """A real iperf3 / iperf server on a free port, ready when its port listens."""

    def __init__(self, argv_without_port, port=None):
        self.port = port or free_port()
        super().__init__(argv_without_port + ["-p", str(self.port)])
        deadline = time.monotonic() + 10
        while self.port not in listening_ports():
            if self.p.poll() is not None:
                raise RuntimeError(f"{argv_without_port[0]} exited: {self.stop()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{argv_without_port[0]} did not listen on {self.port}")
            time.sleep(0.01)


def start_server(kind, extra=()):
    """Start a real server; retries on the rare port race with another engineer's run."""
    argv = {"iperf3": ["iperf3", "-s"], "iperf2": ["iperf", "-s", "-y", "C"]}[kind]
    last = None
    for _ in range(3):
        try:
            return Server(argv + list(extra))
        except RuntimeError as e:
            last = e
    raise last


@dataclass
class Run:
    argv: list
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    events: list = field(default_factory=list)

    def of(self, name):
        return [e for e in self.events if e.get("event") == name]

    def one(self, name):
        found = self.of(name)
        assert len(found) == 1, f"want exactly one {name!r} event, got {len(found)}:\n{self}"
        return found[0]

    @property
    def last(self):
        assert self.events, f"no events:\n{self}"
        return self.events[-1]

    def __str__(self):
        return (
            f"argv: {' '.join(map(str, self.argv))}\nrc: {self.rc}  wall: {self.wall_s:.2f}s\n"
            f"stdout (tail):\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-2000:]}"
        )


def parse_lines(stdout):
    """Every stdout line must be one JSON object (JSON Lines)."""
    events = []
    for n, line in enumerate(stdout.splitlines(), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise AssertionError(f"stdout line {n} is not JSON ({e}): {line!r}") from None
        assert isinstance(obj, dict) and "event" in obj, f"line {n} has no 'event': {line!r}"
        events.append(obj)
    return events


def quickprobe_argv(*args, json_out=True):
    # --json first, so that even a usage error in a later option is reported as an event.
    return [str(QUICKPROBE), *(["--json"] if json_out else []), *map(str, args)]


def run_qp(*args, timeout=30, json_out=True):
    """Run quickprobe to completion (killed at `timeout`); JSON Lines parsed when --json."""
    argv = quickprobe_argv(*args, json_out=json_out)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(
            f"quickprobe still running after {timeout}s: {argv}\n{out[-2000:]}\n{err[-2000:]}"
        ) from None
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    run = Run(argv, p.returncode, out, err, time.monotonic() - t0)
    if json_out:
        run.events = parse_lines(out)
    return run


def wmem_max():
    return int(Path("/proc/sys/net/core/wmem_max").read_text())


def available_cc():
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def events_contract():
    """The fields each event must carry, taken from the examples in EVENTS.md itself so
    that the test follows the contract rather than a copy of it."""
    text = EVENTS_MD.read_text()
    examples = {}
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    inline = re.findall(r"`(\{\"event\".*?\})`", text)
    for raw in blocks + inline:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        examples.setdefault(obj["event"], obj)
    return examples


def _documented_values(field):
    """The values a result field can take: the table under its bullet in EVENTS.md."""
    text = EVENTS_MD.read_text()
    section = text[text.index(f"- `{field}`") :]
    section = section[: section.index("\n- ")]
    return re.findall(r"^\s*\| `(\w+)` \|", section, re.M)


def quick_holds():
    """The values quick_held_by can take."""
    return _documented_values("quick_held_by")


def quick_bounds():
    """The values quick_bound_by can take."""
    return _documented_values("quick_bound_by")


def missing_fields(example, actual, path=""):
    """Keys of the documented example (recursively into objects and the first element of
    lists of objects) that the actual event lacks."""
    missing = []
    for key, want in example.items():
        where = f"{path}.{key}" if path else key
        if key not in actual:
            missing.append(where)
            continue
        got = actual[key]
        if isinstance(want, dict) and isinstance(got, dict):
            missing += missing_fields(want, got, where)
        elif isinstance(want, list) and want and isinstance(want[0], dict) and isinstance(got, list):
            for i, item in enumerate(got):
                missing += missing_fields(want[0], item, f"{where}[{i}]")
    return missing


def iperf3_server_reports(output):
    """The JSON documents `iperf3 -s -J` printed, one per test."""
    docs, dec, i = [], json.JSONDecoder(), 0
    while True:
        i = output.find("{", i)
        if i < 0:
            return docs
        doc, i = dec.raw_decode(output, i)
        docs.append(doc)


def established_to(port):
    """Number of ESTABLISHED TCP sockets whose local port is `port` (server side)."""
    return established(port)


def answered_loopback_run(*args):
    """One quick run on loopback (`args`: the target and options); checks that it answered
    by its deadline, whatever loopback's rate did, and returns it.

    Loopback's rate is the CPU's: when other work takes a core it can fall from 14 to
    4 Gbit/s within three 20 ms slices and jump back later. A window that cannot converge
    across that answers at its deadline all the same (quick mode never runs on to -t unless
    asked), with an interval that spans the levels it saw, and says what held it."""
    run = run_qp(*args)
    assert run.rc == 0 and run.last["event"] == "result", run
    res = run.last
    assert res["quick_answered"] is True and res["full_bps"] is None, res
    assert res["quick_lo_bps"] <= res["quick_bps"] <= res["quick_hi_bps"], res
    assert res["quick_bound_by"] in quick_bounds(), res
    if res["quick_converged"]:
        assert res["quick_held_by"] is None, res
    else:
        assert res["quick_held_by"] in quick_holds(), res
    return run


def iperf2_server_bytes(csv_output):
    """Per-connection received bytes from `iperf -s -y C` (field 8; id -1 lines are sums)."""
    per_conn = []
    for line in csv_output.splitlines():
        f = line.strip().split(",")
        if len(f) >= 9 and f[0].isdigit() and f[5] != "-1":
            per_conn.append(int(f[7]))
    return per_conn


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

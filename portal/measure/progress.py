"""Live progress of a running measurement, kept in the Django cache by the worker (Redis when
REDIS_URL is set, so the web process sees what the worker writes)."""

from django.conf import settings
from django.core.cache import cache

from .models import Measurement
from .vocab import Phase, Status

SAMPLE_KEYS = ("t", "inst_bps", "cumu_bps", "cwnd_bytes")
TTL_S = 3600


def _key(measurement_id):
    return f"measure:progress:{measurement_id}"


def write(measurement_id, phase, elapsed_s=0.0, samples=()):
    cache.set(
        _key(measurement_id), {"phase": str(phase), "elapsed_s": float(elapsed_s), "samples": list(samples)}, TTL_S
    )


def clear(measurement_id):
    cache.delete(_key(measurement_id))


def read(measurement_id):
    """{"phase", "elapsed_s", "samples"}; when the worker has written nothing (yet, or any
    more), the phase follows the stored status so a poller always learns the end."""
    state = cache.get(_key(measurement_id))
    if state is not None:
        return state
    status = Measurement.objects.filter(pk=measurement_id).values_list("status", flat=True).first()
    phase = {Status.RUNNING: Phase.CONNECTING, Status.DONE: Phase.DONE, Status.FAILED: Phase.FAILED}.get(
        status, Phase.QUEUED
    )
    return {"phase": phase.value, "elapsed_s": 0.0, "samples": []}


class Decimator:
    """Keeps at most `limit` evenly spaced samples of an unbounded stream: when full, every
    other kept sample is dropped and the stride doubles, so memory and cache writes stay small
    whatever the duration."""

    def __init__(self, limit=None):
        self.limit = limit or settings.PROGRESS_MAX_SAMPLES
        self.stride = 1
        self.seen = 0
        self.samples = []

    def add(self, sample):
        if self.seen % self.stride == 0:
            self.samples.append({key: sample.get(key) for key in SAMPLE_KEYS})
            if len(self.samples) > self.limit:
                self.samples = self.samples[::2]
                self.stride *= 2
        self.seen += 1


# The steps of the progress bar; the other phases share one of them.
PHASE_STEPS = [
    (phase.value, phase.label)
    for phase in (Phase.QUEUED, Phase.CONNECTING, Phase.SLOW_START, Phase.MEASURING, Phase.STORING)
]
_PHASE_STEP = {
    Phase.FULL: Phase.MEASURING,
    Phase.FINISHING: Phase.STORING,
    Phase.DONE: Phase.STORING,
    Phase.FAILED: Phase.STORING,
}


def page_context(m):
    """The progress bar's context for a queued or running measurement: its phase, the steps
    (past, current, future), the elapsed time and the live samples."""
    state = read(m.pk) or {}
    phase = state.get("phase") or (Phase.QUEUED if m.status == Status.QUEUED else Phase.CONNECTING)
    if m.status == Status.QUEUED and phase != Phase.QUEUED:
        # The worker claimed the row between our read of it and of its progress: show the
        # status that goes with the phase.
        m.refresh_from_db(fields=["status", "started_at", "finished_at"])
    step = str(_PHASE_STEP.get(phase, phase))
    keys = [key for key, _ in PHASE_STEPS]
    current = keys.index(step) if step in keys else 0
    steps = []
    for i, (key, label) in enumerate(PHASE_STEPS):
        if key == Phase.MEASURING and phase == Phase.FULL:
            label = Phase.FULL.label
        steps.append(
            {"key": key, "label": label, "state": "past" if i < current else "current" if i == current else "future"}
        )
    return {
        "m": m,
        "phase": phase,
        "steps": steps,
        "elapsed_s": state.get("elapsed_s"),
        # A full run ends at its -t: what the progress line promises.
        "remaining_s": max(0.0, m.duration_s - state["elapsed_s"]) if state.get("elapsed_s") is not None else None,
        "samples": state.get("samples") or [],
    }

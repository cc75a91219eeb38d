#!/usr/bin/env python3
"""HTTP load as users feel it: N concurrent keep-alive clients (locust's FastHttpUser) reading
a list of pages in turn through real sockets, every response time recorded.

Shared by the benchmarks that time pages (`make bench-portal`, `make bench-load`). locust
patches the standard library with gevent when imported, so the load runs in a process of its
own: call run(spec) from the benchmark (it starts `python scripts/httpload.py SPEC.json` and
reads the result as JSON from its stdout), or start(spec_path) ... finish(proc) to do
something while the load runs.

spec:
  base_url            "http://127.0.0.1:8000"
  users, seconds      clients at once (each one keep-alive connection per session) and the
                      measured duration; warmup_s before it is not recorded
  targets             [{"name", "path", "cookie"?: "sessionid=...",
                        "after_marker"?: {"path"?: ".../{slug}/", "expect": "...{slug}..."}}]
  marker_file         optional: a JSON file {"slug", "committed_at"} the benchmark writes once
                      it has committed a new result (committed_at: time.monotonic(), which is
                      one clock for every process on Linux). A response to a request sent
                      after committed_at that lacks after_marker["expect"] is a stale read.

result: {"targets": {name: {"ms": [...], "errors": n, "checked": n, "stale": n,
         "first_error": str}}, "seconds": measured, "users": n}
"""

import json
import os
import subprocess
import sys
import time


def start(spec_path):
    """Starts the load described by the JSON file spec_path in a child process."""
    return subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), str(spec_path)],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc, timeout_s):
    """Waits for the load started by start() and returns its result dict."""
    out, err = proc.communicate(timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"httpload failed ({proc.returncode}): {err[-3000:]}")
    return json.loads(out)


def run(spec, spec_path):
    """Writes spec to spec_path, runs the load and returns its result dict."""
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    return finish(start(spec_path), spec["seconds"] + spec.get("warmup_s", 0) + 120)


def _load(spec):
    import gevent
    from locust import FastHttpUser, constant, task
    from locust.contrib.fasthttp import FastHttpSession
    from locust.env import Environment

    targets = spec["targets"]
    results = {t["name"]: {"ms": [], "errors": 0, "checked": 0, "stale": 0, "first_error": ""} for t in targets}
    marker = {}
    start = time.monotonic()
    record_from = start + spec.get("warmup_s", 0)

    def watch_marker():
        # The benchmark writes the file once; reading it every few ms keeps the check exact
        # enough (a request is judged by when it was sent, not when this notices the file).
        while not marker and spec.get("marker_file"):
            try:
                with open(spec["marker_file"]) as f:
                    marker.update(json.load(f))
            except (OSError, ValueError):
                gevent.sleep(0.005)

    class Reader(FastHttpUser):
        wait_time = constant(0)
        host = spec["base_url"]

        def on_start(self):
            self.offset = id(self) % len(targets)  # clients do not move in lockstep
            # A second keep-alive session for the logged-in reads: its cookies stay its own.
            self.authed = FastHttpSession(base_url=self.host, request_event=self.environment.events.request, user=self)

        @task
        def read_all(self):
            for i in range(len(targets)):
                self.read(targets[(i + self.offset) % len(targets)])

        def read(self, target):
            after = target.get("after_marker") if marker else None
            path = after["path"].format(**marker) if after and after.get("path") else target["path"]
            client = self.authed if target.get("cookie") else self.client
            headers = {"Cookie": target["cookie"]} if target.get("cookie") else {}
            sent = time.monotonic()
            with client.get(path, name=target["name"], headers=headers, catch_response=True) as response:
                body = response.text or ""
                elapsed_ms = 1000 * (time.monotonic() - sent)
                entry = results[target["name"]]
                if response.status_code != 200:
                    entry["errors"] += 1
                    entry["first_error"] = entry["first_error"] or f"{path}: HTTP {response.status_code}"
                    response.failure(f"HTTP {response.status_code}")
                    return
                if after and sent > marker["committed_at"]:
                    entry["checked"] += 1
                    if after["expect"].format(**marker) not in body:
                        entry["stale"] += 1
                        response.failure("stale")
                if sent >= record_from:
                    entry["ms"].append(elapsed_ms)

    env = Environment(user_classes=[Reader])
    runner = env.create_local_runner()
    watcher = gevent.spawn(watch_marker)
    runner.start(spec["users"], spawn_rate=spec["users"])
    gevent.sleep(max(0.0, record_from + spec["seconds"] - time.monotonic()))
    runner.quit()
    watcher.kill()
    return {"targets": results, "seconds": spec["seconds"], "users": spec["users"]}


if __name__ == "__main__":
    with open(sys.argv[1]) as spec_file:
        json.dump(_load(json.load(spec_file)), sys.stdout)

#!/usr/bin/env python3
"""The phases of a lost node's cost, from what measure-loss.sh kept in DIR (its argument).

Times: the kill's (the script's clock), the pods' conditions and timestamps as the API
server stored them (whole seconds), log lines as the kubelet stamped them, wait's lines as
they came. Prints a Markdown table, then the work lost.
"""

import datetime
import json
import pathlib
import re
import sys


def when(stamp):
    """Seconds since the epoch of an RFC 3339 time (any fraction, Z)."""
    stamp = stamp.rstrip("Z")
    whole, _, frac = stamp.partition(".")
    t = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() + (float("0." + frac) if frac else 0.0)


def watched(path):
    """The last version of each pod (by uid) in kubectl's --watch -o json stream."""
    text, pods, decoder, at = path.read_text(), {}, json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return pods
        try:
            event, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return pods  # the watch was killed mid-object
        pod = event.get("object", event)
        pods[pod["metadata"]["uid"]] = pod


def evicted(path):
    """When each pod (by uid) was first deleted, from the first version in the watch with a
    deletionTimestamp: that time less its grace period (the API server sets the timestamp to
    the deletion plus the grace). For v1.20, whose taint manager sets no DisruptionTarget."""
    text, times, decoder, at = path.read_text(), {}, json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        try:
            event, at = decoder.raw_decode(text, at) if at < len(text) else (None, at)
        except json.JSONDecodeError:
            event = None
        if event is None:
            return times
        meta = event.get("object", event)["metadata"]
        if meta.get("deletionTimestamp") and meta["uid"] not in times:
            times[meta["uid"]] = (when(meta["deletionTimestamp"])
                                  - meta.get("deletionGracePeriodSeconds", 0))


def condition(pod, kind, status=None):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == kind and (status is None or c["status"] == status):
            return when(c["lastTransitionTime"])
    return None


def lines(path, cri):
    """(time, text) of a log: the kubelet's CRI file, or kubectl logs --timestamps."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split(" ", 3 if cri else 1)
        if len(parts) < (4 if cri else 2):
            continue
        out.append((when(parts[0]), parts[-1]))
    return out


def first(log, needle):
    return next((t for t, text in log if needle in text), None)


def main(d):
    killed = float((d / "killed").read_text())
    new = json.loads((d / "new-pods.json").read_text())["items"]
    new_uids = {p["metadata"]["uid"] for p in new}
    old = [p for uid, p in watched(d / "watch.json").items() if uid not in new_uids]
    stamped = [(float(t), text) for t, _, text in
               (line.partition(" ") for line in (d / "wait.txt").read_text().splitlines())]
    new_logs = [lines(d / f"new-loss-worker-{w}.log", cri=False) for w in (0, 1)]
    evictions = evicted(d / "watch.json")

    def latest(values):
        values = [v for v in values if v is not None]
        return max(values) if values else None

    def earliest(values):
        values = [v for v in values if v is not None]
        return min(values) if values else None

    def started(p):
        for s in (p.get("status") or {}).get("containerStatuses") or []:
            for state in ("running", "terminated"):
                if "startedAt" in (s.get("state") or {}).get(state, {}):
                    return when(s["state"][state]["startedAt"])
        return None

    steps = [
        ("detection", "the node-lifecycle controller marks the pods not ready",
         earliest(condition(p, "Ready", "False") for p in old), "pods' Ready False"),
        ("(seen)", "wait's line names the lost node",
         first(stamped, "lost node"), "wait's line"),
        ("eviction", "the taint manager evicts them (--node-lost-after 5s)",
         earliest(condition(p, "DisruptionTarget", "True") for p in old)
         or earliest(evictions.get(p["metadata"]["uid"]) for p in old),
         "pods' DisruptionTarget (v1.20: their first deletionTimestamp less the grace)"),
        ("deletion", "the restart force-deletes them", first(stamped, "force-deleting"),
         "wait's line"),
        ("creation", "the new attempt's pods exist",
         latest(when(p["metadata"]["creationTimestamp"]) for p in new), "creationTimestamp"),
        ("scheduling", "both are bound to the healthy node",
         latest(condition(p, "PodScheduled", "True") for p in new), "PodScheduled"),
        ("container start", "both containers run", latest(started(p) for p in new),
         "startedAt"),
        ("TensorFlow start", "every worker's strategy is up (peers connected)",
         latest(first(log, "replicas in sync") for log in new_logs), "log line"),
        ("restore", "the backup is restored and training goes on",
         latest(first(log, "resuming from epoch") for log in new_logs), "log line"),
    ]
    print("| phase | until | at (s after the kill) | took (s) | read from |")
    print("| --- | --- | ---: | ---: | --- |")
    before = killed
    for phase, what, t, source in steps:
        if t is None:
            print(f"| {phase} | {what} | ? | ? | {source} |")
            continue
        took = "" if phase.startswith("(") else f"{t - before:.1f}"
        print(f"| {phase} | {what} | {t - killed:.1f} | {took} | {source} |")
        if not phase.startswith("("):
            before = t
    end = first(stamped, "exit ")
    if end:
        print(f"\nwait ended {end - killed:.1f} s after the kill: "
              + next(text for t, text in stamped if t == end))
    lost_work(d, killed, new_logs[0])


def lost_work(d, killed, new_log):
    """Steps the old attempt trained after its last backup: the new one does them again.

    The old attempt's pods were frozen at the kill, so the chief's last backup file is the
    one the new attempt restored; what it trained after that is the time from that file
    to the kill, at the old attempt's step time (Keras' last epoch line).
    """
    step_ms = None
    for _, text in lines(d / "old-loss-worker-0.log", cri=True):
        m = re.match(r"(\d+)/(\d+) - .* (\d+)(ms|s)/step", text)
        if m:
            step_ms = int(m.group(3)) * (1 if m.group(4) == "ms" else 1000)
    resumed = next((text for _, text in new_log if "resuming from epoch" in text), "?")
    backups = (d / "backup-files").read_text().splitlines()
    # The chief's backup is in backup/gen-0/chief/ (examples/mnist.py: a folder per start).
    last = max((float(b.split(" ", 1)[0]) for b in backups
                if re.search(r"backup/(gen-\d+/)?chief/", b)), default=None)
    if step_ms is None or last is None:
        print("\nwork lost: not enough in the logs to say")
        return
    since = killed - last
    print(f"\nwork lost: the chief's last backup was written {since:.1f} s before the kill, "
          f"about {since * 1000 / step_ms:.0f} steps at {step_ms} ms/step, trained again; "
          f"the new attempt said: {resumed.strip()}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))

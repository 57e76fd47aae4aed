#!/usr/bin/python3
"""Reads a data-parallel run's --trace and says, per step, whether gradient
all-reduces ran during the backward: a bucket's span that starts before the
step's last micro-batch span ends started during it, and one that also ends
before then completed during it.

usage: check_trace.py TRACE.json
"""
import json
import sys


def main():
    events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
    steps, current = [], None
    for e in sorted(events, key=lambda e: e["ts"]):
        if e["name"].startswith("micro-batch"):
            if current is None or current["closed"]:
                current = {"last_end": 0, "buckets": [], "closed": False}
                steps.append(current)
            current["last_end"] = max(current["last_end"], e["ts"] + e["dur"])
        elif e["name"].startswith("all-reduce") and current is not None:
            current["buckets"].append((e["ts"], e["ts"] + e["dur"]))
        elif e["name"].startswith("update") and current is not None:
            current["closed"] = True
    started = sum(any(b < s["last_end"] for b, _ in s["buckets"]) for s in steps)
    completed = sum(any(e < s["last_end"] for _, e in s["buckets"]) for s in steps)
    buckets = max((len(s["buckets"]) for s in steps), default=0)
    print(f"{len(steps)} steps, {buckets} buckets per step")
    print(f"all-reduces started during the backward in {started} of {len(steps)} steps")
    print(f"all-reduces completed during the backward in {completed} of {len(steps)} steps")
    # The all-reduce's share of the run: time covered by some bucket's span,
    # over the time from the first micro-batch to the last update.
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("all-reduce"))
    covered, end = 0.0, float("-inf")
    for b, e in spans:
        covered += max(0.0, e - max(b, end))
        end = max(end, e)
    exposed = 0.0  # all-reduce time after the last micro-batch of its step
    for s in steps:
        tail = [e for _, e in s["buckets"] if e > s["last_end"]]
        exposed += max(tail, default=s["last_end"]) - s["last_end"]
    total = max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events) if events else 0
    if total > 0:
        print(f"all-reduce spans cover {100 * covered / total:.1f}% of the run; "
              f"{100 * exposed / total:.1f}% runs after the backward")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Summarizes nvidia-smi clock samples per phase (scripts/device-run.sh clocks).

Arguments: the phase log (lines "phase NAME start|end HH:MM:SS.ns") and the nvidia-smi CSV
(timestamp, SM clock, memory clock, utilization, power). Prints, per phase, the samples' count and
the SM clock's median, minimum and maximum (and its median over the samples with utilization of at least 50%), the memory clock's median and the median utilization.
"""
import sys
from datetime import datetime


def seconds(hms):
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def number(text):
    return float(text.strip().split()[0])


phases = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 4 and parts[0] == "phase":
        phases.setdefault(parts[1], {})[parts[2]] = seconds(parts[3][:15])

samples = []
for line in open(sys.argv[2]):
    cols = [c.strip() for c in line.split(",")]
    if len(cols) < 5:
        continue
    try:
        t = datetime.strptime(cols[0], "%Y/%m/%d %H:%M:%S.%f")
        samples.append((t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6, number(cols[1]), number(cols[2]), number(cols[3])))
    except ValueError:
        continue


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


for name, span in phases.items():
    inside = [s for s in samples if span.get("start", 0) <= s[0] <= span.get("end", 0)]
    sm = [s[1] for s in inside]
    busy = [s[1] for s in inside if s[3] >= 50]
    print(
        f"clocks {name}: {len(inside)} samples, SM MHz median {median(sm):.0f} (min {min(sm, default=0):.0f}, max {max(sm, default=0):.0f}), "
        f"SM MHz median while utilization >= 50%: {median(busy):.0f} ({len(busy)} samples), memory MHz median {median([s[2] for s in inside]):.0f}, utilization median {median([s[3] for s in inside]):.0f}%"
    )

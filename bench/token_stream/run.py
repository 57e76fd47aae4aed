#!/usr/bin/python3
"""Token streaming at scale: the chargpt example trained from a 2 GiB
synthetic token file (random windows read through a memory map on a
prefetch thread) against the same run from its in-memory arrays.

  run.py [--gib G] [--steps S] [--keep DIR]

Builds the chargpt training executable (CPU), writes G GiB of uint16 tokens
(nanoGPT's .bin format) in a scratch folder, reads it once so it is in the
page cache, then times S steps of micro-batch 32 from the token file and S
steps from examples/chargpt/data/train, alternating five times, and
reports samples per second (median and best) and each run's peak resident memory (the
kernel's ru_maxrss). Prints one JSON line per run and a summary.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "chargpt"
OTC = ROOT / "build" / "bin" / "otc"


def run(cmd):
    # Peak RSS from /usr/bin/time, not wait4: a child forked from this
    # Python counts Python's pages until it execs.
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss %M", *cmd], stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{p.stderr}")
    done = re.search(r"train: done in ([0-9.]+) s", p.stderr)
    rss = re.search(r"maxrss ([0-9]+)", p.stderr)
    return {"seconds": float(done.group(1)), "max_rss_bytes": int(rss.group(1)) * 1024}


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--gib", type=float, default=2.0)
    a.add_argument("--steps", type=int, default=300)
    a.add_argument("--keep")
    args = a.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="otc-token-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        train = work / "train"
        subprocess.run([str(OTC), "compile", str(EXAMPLE / "model.onnx"), "-o", str(train),
                        "--target", "cpu", "--optimizer", "adamw", "--micro-batch", "32"],
                       check=True, stderr=subprocess.DEVNULL)
        tokens = work / "tokens.bin"
        count = int(args.gib * 2**30) // 2
        chunk = np.arange(2**24, dtype=np.uint32)
        with open(tokens, "wb") as f:
            for at in range(0, count, len(chunk)):
                n = min(len(chunk), count - at)
                ((chunk[:n] + at) * 2654435761 % 61).astype(np.uint16).tofile(f)
        start = time.perf_counter()
        with open(tokens, "rb") as f:
            while f.read(1 << 24):
                pass
        read = time.perf_counter() - start
        size = tokens.stat().st_size
        print(json.dumps({"file_bytes": size, "page_cache_read_gib_per_s": size / read / 2**30}))
        common = ["--steps", str(args.steps), "--lr", "0.003", "--threads", "2"]
        runs = {"stream": [], "arrays": []}
        for _ in range(5):
            runs["stream"].append(run([str(train), "--tokens", str(tokens), "--token-input", "tokens",
                                       "--token-labels", "targets", *common]))
            runs["arrays"].append(run([str(train), "--data", str(EXAMPLE / "data" / "train"), *common]))
        for name, rs in runs.items():
            for r in rs:
                print(json.dumps({"run": name, **r}))
        med = {k: sorted(r["seconds"] for r in v)[2] for k, v in runs.items()}
        best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
        rss = {k: max(r["max_rss_bytes"] for r in v) for k, v in runs.items()}
        samples = args.steps * 32
        print(f"stream: {samples / med['stream']:.0f} samples/s, peak RSS {rss['stream'] / 2**20:.1f} MiB "
              f"({rss['stream'] / size:.4f} of the {size / 2**30:.2f} GiB file)")
        print(f"arrays: {samples / med['arrays']:.0f} samples/s, peak RSS {rss['arrays'] / 2**20:.1f} MiB")
        print(f"stream / arrays time: median {med['stream'] / med['arrays']:.3f}, "
              f"best {best['stream'] / best['arrays']:.3f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

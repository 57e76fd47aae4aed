#!/usr/bin/python3
"""8-bit AdamW's loss curve against float32 AdamW's.

  check_adamw8bit.py LOG8 LOG32 LOG32_LOW LOG32_HIGH [--window W]

The tolerance comes from the quantisation error. bitsandbytes' signed map
holds 64 codes in the top decade [0.1, 1] of a block's absmax (spacing
0.9/64), so a first moment there is stored within 0.7% of absmax, at most
7% of itself; the unsigned map's 128 codes put the second moment within
3.5%, 1.8% after its square root. An 8-bit step is then AdamW's step with
its size off by up to about 9%: the run behaves as float32 AdamW at a
learning rate within lr x (1 +- 0.09). LOG32_LOW and LOG32_HIGH are float32
AdamW runs at lr x 0.91 and lr x 1.09; the 8-bit curve, averaged over
windows of W steps (default 10: single steps on a tiny model are noisy),
must lie in each window inside the envelope of the three float32 curves.
"""
import json
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path) if '"loss"' in line]


def main():
    args = sys.argv[1:]
    w = 10
    if "--window" in args:
        i = args.index("--window")
        w = int(args[i + 1])
        del args[i:i + 2]
    q, a, lo, hi = (losses(p) for p in args)
    out = 0
    for s in range(0, len(q) - w + 1, w):
        mean = lambda x: sum(x[s:s + w]) / w
        env = [mean(a), mean(lo), mean(hi)]
        if not min(env) <= mean(q) <= max(env):
            print(f"steps {s + 1}-{s + w}: 8-bit {mean(q):.4f} outside [{min(env):.4f}, {max(env):.4f}]")
            out += 1
    print(f"{len(q)} steps, {out} windows outside the envelope; first {q[0]:.4f} last {q[-1]:.4f}")
    print("8-bit curve within the quantisation envelope" if out == 0 else "8-bit curve outside")
    return 0 if out == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Issue 9's point 4 from `otc compile` logs of one model under none,
selective, blocks and sqrt: selective cuts the kept activations by at least
35% at no more than 5% added FLOPs (both the compiler's counts, its `step:`
line), and blocks and sqrt cut them further. Prints each policy's kept
fraction and added FLOPs, then "savings: ok" or what fails.

usage: check_savings.py NONE.log SELECTIVE.log BLOCKS.log SQRT.log
"""
import re
import sys


def step(path):
    m = re.search(r"^step: (\d+) FLOPs, (\d+) of them recomputed .*activations kept for the backward (\d+) bytes",
                  open(path).read(), re.M)
    if not m:
        sys.exit(f"{path}: no step line")
    total, recomputed, kept = map(int, m.groups())
    return kept, recomputed / (total - recomputed)


def main():
    names = ["none", "selective", "blocks", "sqrt"]
    r = dict(zip(names, map(step, sys.argv[1:5])))
    base = r["none"][0]
    for n in names:
        print(f"{n}: kept {r[n][0] / base:.3f} of none's, FLOPs +{100 * r[n][1]:.2f}%")
    bad = []
    if r["selective"][0] > 0.65 * base:
        bad.append("selective keeps more than 65% of none's activations")
    if r["selective"][1] > 0.05:
        bad.append("selective adds more than 5% FLOPs")
    for n in ("blocks", "sqrt"):
        if r[n][0] >= r["selective"][0]:
            bad.append(f"{n} keeps no less than selective")
    print("savings: " + ("; ".join(bad) if bad else "ok"))


if __name__ == "__main__":
    main()

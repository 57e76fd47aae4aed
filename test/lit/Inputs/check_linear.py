#!/usr/bin/python3
"""Reads three sizes of generated source, for chains of n, 2n and 4n links,
and checks the growth is linear: doubling the chain again adds about twice
what the first doubling added (2, within 20%). Pasting an operand per use
made each link double the source, which this would report."""
import sys

s1, s2, s4 = (int(open(p).read().split()[0]) for p in sys.argv[1:4])
ratio = (s4 - s2) / (s2 - s1)
print(f"sizes {s1} {s2} {s4}: growth ratio {ratio:.2f}")
sys.exit(0 if 1.6 <= ratio <= 2.4 else 1)

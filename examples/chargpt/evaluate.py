#!/usr/bin/python3
"""Compares a character model's held-out loss with the unigram entropy.

usage: evaluate.py LOSSES.npy [--max-ratio R]
LOSSES.npy: the forward-only executable's per-micro-batch mean cross-entropy
on data/test (nats per character). The unigram entropy is that of the
training characters' frequencies, evaluated on the held-out characters
(the cross-entropy of the best model that ignores context). Exits 1 when
the model's loss is above R times it (default 0.8).
"""
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_example import read_text, split  # noqa: E402


def main():
    losses = np.load(sys.argv[1])
    ratio = float(sys.argv[sys.argv.index("--max-ratio") + 1]) if "--max-ratio" in sys.argv else 0.8
    vocab = (HERE / "vocab.txt").read_text()
    train = np.array([vocab.index(c) for c in split(read_text())[0]])
    test = np.load(HERE / "data" / "test" / "targets.npy")
    counts = np.bincount(train, minlength=len(vocab)) + 1.0  # add-one: no log(0)
    p = counts / counts.sum()
    unigram = float(-np.log(p[test]).mean())
    model = float(losses.mean())
    print(f"held-out loss {model:.3f} nats/char, unigram entropy {unigram:.3f}, "
          f"ratio {model / unigram:.3f} (required <= {ratio})")
    sys.exit(0 if model <= ratio * unigram else 1)


if __name__ == "__main__":
    main()

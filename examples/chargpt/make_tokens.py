#!/usr/bin/python3
"""The chargpt example's token stream: the training part of the texts (the
same split as make_example.py) as one flat file of uint16 character ids,
data/train.bin, in nanoGPT's format. ./train --tokens data/train.bin reads
random windows of T + 1 characters from it."""
import numpy as np

from make_example import HERE, read_text, split


def main():
    vocab = (HERE / "vocab.txt").read_text()
    train = np.array([vocab.index(c) for c in split(read_text())[0]], dtype=np.uint16)
    train.tofile(HERE / "data" / "train.bin")
    print(f"data/train.bin: {len(train)} tokens")


if __name__ == "__main__":
    main()

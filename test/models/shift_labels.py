"""shift_labels.py IN OUT: a causal LM's data with the labels moved one
position left and -100 (ignored) last, so a cross-entropy over every
position of the logits is Hugging Face's loss over logits[:, :-1] and
labels[:, 1:]."""
import shutil
import sys
from pathlib import Path

import numpy as np

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
dst.mkdir(parents=True, exist_ok=True)
for f in src.glob("*.npy"):
    shutil.copy(f, dst / f.name)
labels = np.load(src / "labels.npy")
shifted = np.full_like(labels, -100)
shifted[:, :-1] = labels[:, 1:]
np.save(dst / "labels.npy", shifted)

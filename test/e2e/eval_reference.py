#!/usr/bin/python3
"""The training executable's --eval-data loss against PyTorch in eval mode.

  eval_reference.py CASE SAVED.onnx LOG.jsonl DATA N

Loads SAVED's weights (and buffers: BatchNorm's running statistics) into
the zoo's CASE model, switches it to eval mode (Dropout the identity,
BatchNorm on its running statistics), and averages its loss over DATA's
micro-batches of N samples. The last "eval_loss" of LOG, which otc computed
at the end of the same run from the same weights, must agree within 1e-5
relative: both are float32 sums over the same few thousand terms.
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "zoo"))
import make_zoo  # noqa: E402


def main():
    case, saved, log, data, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    model = make_zoo.CASES[case].build()
    trained = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
               for t in onnx.load(saved).graph.initializer}
    state = model.state_dict()
    for k in state:
        if k in trained:
            state[k] = trained[k]
    model.load_state_dict(state)
    model.eval()
    # The zoo's DropoutMLP calls F.dropout with its default training=True,
    # which model.eval() does not reach; evaluation means no dropout.
    torch.nn.functional.dropout = lambda x, *args, **kwargs: x
    order = [i.name for i in onnx.load(saved).graph.input]
    arrays = [np.load(Path(data) / f"{k}.npy") for k in order if (Path(data) / f"{k}.npy").exists()]
    losses = []
    with torch.no_grad():
        for first in range(0, len(arrays[0]) - n + 1, n):
            losses.append(float(model(*[torch.from_numpy(a[first:first + n]) for a in arrays])))
    want = float(np.mean(losses))
    got = [json.loads(line)["eval_loss"] for line in open(log) if "eval_loss" in line][-1]
    ok = abs(got - want) <= 1e-5 * abs(want)
    print(f"eval loss {got:.6f}, PyTorch eval mode {want:.6f}: {'match' if ok else 'differ'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

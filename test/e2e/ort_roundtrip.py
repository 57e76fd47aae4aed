"""onnxruntime as the consumer of a model otc trained.

  prepare TRAINED EVAL DATA HELDOUT SAMPLES SEED
      EVAL: TRAINED with the loss node's first input (the logits) as a second
      graph output. HELDOUT: SAMPLES fresh samples of every input in DATA:
      float inputs drawn from N(0, 1), integer ones (labels, tokens) uniformly
      from the range the training data spans. With SAMPLES 0, the training
      data itself (masks and -100 labels that a uniform draw would break).
  compare EVAL HELDOUT OUT MICRO_BATCH
      Runs EVAL in onnxruntime on each micro-batch of HELDOUT and checks
      otc's forward-only outputs in OUT: the per-sample outputs concatenated,
      the loss one value per micro-batch. Both run the same float32 graph, so
      they differ by reassociation only: 1e-5 relative to the output's scale.
"""
import os
import sys

import numpy as np
import onnx


def file_name(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".npy"


def prepare(trained, eval_path, data, heldout, samples, seed):
    model = onnx.load(trained)
    g = model.graph
    loss = g.output[0].name
    producer = next(n for n in g.node if loss in n.output)
    inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    logits = next(v for v in inferred if v.name == producer.input[0])
    g.output.append(logits)
    rng = np.random.default_rng(seed)
    os.makedirs(heldout, exist_ok=True)
    inits = {i.name for i in g.initializer}
    feeds = {}
    for inp in g.input:
        if inp.name in inits:
            continue
        train = np.load(os.path.join(data, file_name(inp.name)))
        shape = (samples,) + train.shape[1:]
        if samples == 0:
            x = train
        elif train.dtype == np.float32:
            x = rng.standard_normal(shape).astype(np.float32)
        else:
            x = rng.integers(train.min(), train.max() + 1, size=shape).astype(train.dtype)
        np.save(os.path.join(heldout, file_name(inp.name)), x)
        feeds[inp.name] = x
    if not logits.type.tensor_type.HasField("shape"):
        # ONNX's inference cannot follow a computed Reshape; the checker needs
        # an output's rank, which onnxruntime finds by running the graph.
        import onnxruntime as ort
        rank = ort.InferenceSession(model.SerializeToString()).run(
            [logits.name], feeds)[0].ndim
        for d in range(rank):
            logits.type.tensor_type.shape.dim.add().dim_param = f"d{d}"
        g.output[-1].CopyFrom(logits)
    onnx.save(model, eval_path)


def compare(eval_path, heldout, out, micro_batch):
    import onnxruntime as ort

    sess = ort.InferenceSession(eval_path, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(heldout, file_name(i.name))) for i in sess.get_inputs()}
    samples = next(iter(feeds.values())).shape[0]
    runs = [sess.run(None, {k: v[s:s + micro_batch] for k, v in feeds.items()})
            for s in range(0, samples, micro_batch)]
    failed = False
    for k, o in enumerate(sess.get_outputs()):
        parts = [r[k] for r in runs]
        per_sample = parts[0].ndim > 0 and parts[0].shape[0] == micro_batch
        want = np.concatenate(parts) if per_sample else np.stack(parts)
        got = np.load(os.path.join(out, file_name(o.name)))
        scale = max(1.0, float(np.abs(want).max()))
        err = float(np.abs(got.astype(np.float64) - want).max()) / scale if got.shape == want.shape else None
        ok = err is not None and err <= 1e-5
        failed |= not ok
        print(f"{o.name}: shape {got.shape}, onnxruntime {want.shape}, max error / scale "
              f"{err if err is not None else 'n/a'} {'ok' if ok else 'MISMATCH'}")
    print("onnxruntime", ort.__version__, "agrees" if not failed else "DISAGREES")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(*sys.argv[2:6], int(sys.argv[6]), int(sys.argv[7]))
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))

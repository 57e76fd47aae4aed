#!/opt/hfvenv/bin/python
"""Hugging Face families beyond the model suite, probed the suite's way
(make_models.py: tiny config, random init, torch.onnx.export's defaults,
3 SGD steps of PyTorch in float32 and float64 for the tolerance), then
compiled and trained by otc and compared. Not part of the test command
(its exports take minutes); run it when the importer changes:

  test/models/probe_families.py OTC WORKDIR [FAMILY ...]

prints one line per family: "weights match", the first mismatch, or where
it failed (export, compile, training). GPT-J and BLOOM graduated to the
suite (gptj.test, bloom.test). Not here: EfficientNet (torch 1.13's
exporter has no padding="same" convolution) and LeViT.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import transformers as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_models as mm  # noqa: E402

V, S = mm.VOCAB, mm.SEQ
E2E = Path(__file__).resolve().parent.parent / "e2e"


def lm(cls, cfg, pad=False):
    def f(rng, n):
        ids, mask, lab = mm.token_data(rng, n, pad=pad)
        d = {"input_ids": ids}
        if pad: d["attention_mask"] = mask
        d["labels"] = lab
        return cls(cfg), d
    return f

def img(cls, cfg, size=32, ch=3):
    def f(rng, n):
        x = rng.standard_normal((n, ch, size, size)).astype(np.float32)
        lab = rng.integers(0, 3, n).astype(np.int64)
        return cls(cfg), {"pixel_values": x, "labels": lab}
    return f

FAMILIES = {
 "gpt_neo": lm(tf.GPTNeoForCausalLM, tf.GPTNeoConfig(vocab_size=V, max_position_embeddings=S, hidden_size=16, num_layers=2, num_heads=2, attention_types=[[["global","local"],1]], window_size=4, embed_dropout=0, attention_dropout=0, resid_dropout=0)),
 "opt": lm(tf.OPTForCausalLM, tf.OPTConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, ffn_dim=32, num_attention_heads=2, max_position_embeddings=S, word_embed_proj_dim=16, dropout=0, attention_dropout=0), pad=True),
 "mistral": lm(tf.MistralForCausalLM, tf.MistralConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=S, sliding_window=4)),
 "phi": lm(tf.PhiForCausalLM, tf.PhiConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S, resid_pdrop=0, embd_pdrop=0, attention_dropout=0, partial_rotary_factor=0.5)),
 "gemma": lm(tf.GemmaForCausalLM, tf.GemmaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=S)),
 "gpt_neox": lm(tf.GPTNeoXForCausalLM, tf.GPTNeoXConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S, rotary_pct=0.5, hidden_dropout=0, attention_dropout=0)),
 "gpt_bigcode": lm(tf.GPTBigCodeForCausalLM, tf.GPTBigCodeConfig(vocab_size=V, n_positions=S, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0, multi_query=True)),
 "stablelm": lm(tf.StableLmForCausalLM, tf.StableLmConfig(vocab_size=V, hidden_size=32, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S, num_key_value_heads=2, partial_rotary_factor=0.25, hidden_dropout=0, attention_dropout=0)),
 "electra": lm(tf.ElectraForMaskedLM, tf.ElectraConfig(vocab_size=V, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "mpnet": lm(tf.MPNetForMaskedLM, tf.MPNetConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=64, hidden_dropout_prob=0, attention_probs_dropout_prob=0, relative_attention_num_buckets=32), pad=True),
 "deit": img(tf.DeiTForImageClassification, tf.DeiTConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3), size=8),
 "beit": img(tf.BeitForImageClassification, tf.BeitConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3, use_relative_position_bias=True, drop_path_rate=0), size=8),
 "segformer": img(tf.SegformerForImageClassification, tf.SegformerConfig(num_encoder_blocks=2, depths=[1,1], sr_ratios=[2,1], hidden_sizes=[8,16], patch_sizes=[3,3], strides=[2,2], num_attention_heads=[1,2], mlp_ratios=[2,2], hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0, num_labels=3), size=16),
 "mobilevit": img(tf.MobileViTForImageClassification, tf.MobileViTConfig(image_size=32, hidden_sizes=[16,16,16], neck_hidden_sizes=[8,8,8,8,8,8,16], num_attention_heads=2, hidden_dropout_prob=0, attention_probs_dropout_prob=0, classifier_dropout_prob=0, num_labels=3), size=32),
 "regnet": img(tf.RegNetForImageClassification, tf.RegNetConfig(embedding_size=8, hidden_sizes=[8,16], depths=[1,1], groups_width=4, num_labels=3), size=16),
 "dinov2": img(tf.Dinov2ForImageClassification, tf.Dinov2Config(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3), size=8),
}


def probe(otc, work, name):
    """One family's line."""
    fx = work / name
    try:
        mm.make(name)
    except Exception as e:  # an exporter or config limit, not otc's
        return f"{name}: export failed: {type(e).__name__}: {str(e)[:200]}"
    steps = [[otc, "compile", fx / "model.onnx", "-o", work / f"{name}.train", "--target", "cpu",
              *(fx / "compile_flags").read_text().split()],
             [work / f"{name}.train", "--data", fx / "data",
              *(fx / "train_flags").read_text().split(), "--save", work / f"{name}.onnx"],
             ["/usr/bin/python3", E2E / "check_weights.py", work / f"{name}.onnx",
              fx / "expected.npz"]]
    for what, cmd in zip(("compile", "training", "weights"), steps):
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        if r.returncode != 0:
            lines = [l for l in (r.stdout + r.stderr).splitlines() if not l.startswith("ok ")]
            return f"{name}: {what} failed: {' | '.join(lines[-3:])[:300]}"
    return f"{name}: weights match"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    otc, work = sys.argv[1], Path(sys.argv[2]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    mm.OUT = work
    mm.CASES.update(FAMILIES)
    for name in sys.argv[3:] or list(FAMILIES):
        print(probe(otc, work, name), flush=True)


if __name__ == "__main__":
    main()

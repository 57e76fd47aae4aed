#!/opt/hfvenv/bin/python
"""The model suite: Hugging Face models as users export them.

Each case builds a model from a tiny config with random init (seed 0),
wraps it so the forward returns the loss Hugging Face computes from its
labels, and exports it with torch.onnx.export's defaults at opset 17:
constant folding on, a dynamic batch, and eval mode (so no Dropout nodes;
the configs set dropout to 0, so the PyTorch reference trains the same
function). Models with BatchNorm are exported in training mode instead,
as a user fine-tuning them trains their statistics.

fixtures/<case>/ holds model.onnx, data/<input>.npy, compile_flags,
train_flags and expected.npz: the weights PyTorch reaches after 3 SGD steps
of micro-batch MICRO. Tolerance per tensor (tol/<name>, check_weights.py
reads it) comes from PyTorch's own float32-versus-float64 difference after
the same steps: 4 * max |w32 - w64| + 1e-5 * max |w64|, plus one float32
rounding of the model's largest update (see make()).

Needs transformers 4.38.2 over Debian's torch 1.13: scripts/install-hf.sh
makes /opt/hfvenv. The fixtures are committed, so the tests need neither.

usage: make_models.py [CASE ...]   (default: all; deterministic)
       make_models.py --dynamic [CASE ...]   model_dynamic.onnx of DYNAMIC's cases
       make_models.py --torch2 [CASE ...]    <case>_torch2/ of TORCH2's cases, run
                                             with PyTorch >= 2.9 (scripts/install-torch2.sh)
"""
import collections
import copy
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import transformers as tf

# Debian's torch 1.13 with oneDNN computes Whisper's Conv1d weight gradients
# from uninitialized memory (values near 1e36 that change from run to run,
# NaN in half the runs); its native kernels are exact and deterministic.
torch.backends.mkldnn.enabled = False

OUT = Path(__file__).resolve().parent / "fixtures"
STEPS = 3
MICRO = 2
LR = 0.05
# Not in the suite: MobileNetV2. Exported in training mode, the tiny
# model's batch statistics over few elements make 3 steps chaotic (PyTorch's
# own float32 and float64 runs differ by over 100%); exported in eval mode
# (the default), folding merges BatchNorm into the convolutions, a different
# parametrisation from PyTorch's frozen-statistics fine-tuning.
SEQ = 8
VOCAB = 32


class Loss(nn.Module):
    """The model's forward with named inputs, returning the named fields of
    its output: its loss, or (as optimum exports a task's head) its logits,
    or a question-answering head's start and end logits."""

    def __init__(self, model, names, fields=("loss",)):
        super().__init__()
        self.model, self.names, self.fields = model, names, tuple(fields)

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        values = tuple(getattr(out, f) for f in self.fields)
        return values if len(values) > 1 else values[0]


def token_data(rng, n, pad=True, labels="lm"):
    ids = rng.integers(0, VOCAB, (n, SEQ)).astype(np.int64)
    mask = np.ones((n, SEQ), np.int64)
    if pad:  # every other sample is padded at its end, as a tokenizer pads
        mask[1::2, SEQ - 3:] = 0
    if labels == "lm":
        lab = np.where(mask == 1, ids, -100)
    else:
        lab = rng.integers(0, 3, n).astype(np.int64)
    return ids, mask, lab


def gpt2(rng, n):
    cfg = tf.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=16, n_layer=2, n_head=2,
                        resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
    ids, _, lab = token_data(rng, n)
    return tf.GPT2LMHeadModel(cfg), {"input_ids": ids, "labels": lab}


def llama(rng, n):
    cfg = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=SEQ)
    ids, _, lab = token_data(rng, n, pad=False)
    return tf.LlamaForCausalLM(cfg), {"input_ids": ids, "labels": lab}


def llama_finetune(rng, n):
    """The README's fine-tuning example: LLaMA with all but the attention
    projections frozen (the export folds those into onnx::MatMul_N, so
    --freeze must reach them by the names their readers imply)."""
    model, data = llama(rng, n)
    for name, p in model.named_parameters():
        p.requires_grad = "self_attn" in name
    return model, data


def bert(rng, n):
    cfg = tf.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=SEQ,
                        hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)
    ids, mask, lab = token_data(rng, n, labels="class")
    return (tf.BertForSequenceClassification(cfg),
            {"input_ids": ids, "attention_mask": mask, "labels": lab})


def bert_qa(rng, n):
    """Extractive question answering (SQuAD fine-tuning), exported as
    optimum exports it: start and end logits out, no positions in; otc
    appends Hugging Face's loss with --loss span. Positions past the
    sequence (a truncated answer) and before it are clamped, as there."""
    cfg = tf.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=SEQ,
                        hidden_dropout_prob=0, attention_probs_dropout_prob=0)
    ids, mask, _ = token_data(rng, n, labels="class")
    start = np.array([1, SEQ + 1, 3, 0, SEQ + 4, 5] * n)[:n]
    end = np.array([2, SEQ, SEQ, 4, 7, -3] * n)[:n]
    return (tf.BertForQuestionAnswering(cfg),
            {"input_ids": ids, "attention_mask": mask, "start_positions": start,
             "end_positions": end})


def bert_multilabel(rng, n):
    """Multi-label classification (problem_type multi_label_classification):
    Hugging Face's BCE-with-logits over every label, exported as logits
    and trained with --loss bce."""
    cfg = tf.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=SEQ,
                        hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=4,
                        problem_type="multi_label_classification")
    ids, mask, _ = token_data(rng, n, labels="class")
    labels = (rng.random((n, 4)) < 0.4).astype(np.float32)
    return (tf.BertForSequenceClassification(cfg),
            {"input_ids": ids, "attention_mask": mask, "labels": labels})


def distilbert(rng, n):
    cfg = tf.DistilBertConfig(vocab_size=VOCAB, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                              max_position_embeddings=SEQ, dropout=0, attention_dropout=0)
    ids, mask, lab = token_data(rng, n)
    return tf.DistilBertForMaskedLM(cfg), {"input_ids": ids, "attention_mask": mask, "labels": lab}


def t5(rng, n):
    cfg = tf.T5Config(vocab_size=VOCAB, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
                      relative_attention_num_buckets=8, dropout_rate=0, decoder_start_token_id=0,
                      pad_token_id=0)
    ids, mask, lab = token_data(rng, n)
    return (tf.T5ForConditionalGeneration(cfg),
            {"input_ids": ids, "attention_mask": mask, "labels": lab})


def vit(rng, n):
    cfg = tf.ViTConfig(image_size=8, patch_size=4, num_channels=3, hidden_size=16,
                       num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                       hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)
    x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
    lab = rng.integers(0, 3, n).astype(np.int64)
    return tf.ViTForImageClassification(cfg), {"pixel_values": x, "labels": lab}


def resnet(rng, n):
    cfg = tf.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                          layer_type="basic", num_labels=3)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
    lab = rng.integers(0, 3, n).astype(np.int64)
    return tf.ResNetForImageClassification(cfg), {"pixel_values": x, "labels": lab}


def qwen2(rng, n):
    cfg = tf.Qwen2Config(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=SEQ, attention_dropout=0)
    ids, _, lab = token_data(rng, n, pad=False)
    return tf.Qwen2ForCausalLM(cfg), {"input_ids": ids, "labels": lab}


def falcon(rng, n):
    """Multi-query attention: one key/value head, whose product with the
    queries broadcasts its batch dims (numpy matmul)."""
    cfg = tf.FalconConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=4, hidden_dropout=0, attention_dropout=0)
    ids, _, lab = token_data(rng, n, pad=False)
    return tf.FalconForCausalLM(cfg), {"input_ids": ids, "labels": lab}


def albert(rng, n):
    """One layer shared by both depths: the export folds its weights into
    onnx::MatMul_N copies per call and merges the second call's into the
    first through Identity nodes, which must stay merged."""
    cfg = tf.AlbertConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=SEQ,
                          hidden_dropout_prob=0, attention_probs_dropout_prob=0)
    ids, mask, lab = token_data(rng, n)
    return tf.AlbertForMaskedLM(cfg), {"input_ids": ids, "attention_mask": mask, "labels": lab}


def roberta(rng, n):
    cfg = tf.RobertaConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=32,
                           max_position_embeddings=SEQ + 2, hidden_dropout_prob=0,
                           attention_probs_dropout_prob=0, num_labels=3, pad_token_id=1)
    ids, mask, lab = token_data(rng, n, labels="class")
    ids = np.where(mask == 1, np.maximum(ids, 2), 1)  # pad id 1 where padded
    return (tf.RobertaForSequenceClassification(cfg),
            {"input_ids": ids, "attention_mask": mask, "labels": lab})


def bart(rng, n):
    cfg = tf.BartConfig(vocab_size=VOCAB, d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=SEQ,
                        dropout=0, attention_dropout=0, activation_dropout=0)
    ids, mask, lab = token_data(rng, n)
    return (tf.BartForConditionalGeneration(cfg),
            {"input_ids": ids, "attention_mask": mask, "labels": lab})


def convnext(rng, n):
    cfg = tf.ConvNextConfig(num_channels=3, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1],
                            patch_size=2, num_labels=3, drop_path_rate=0)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
    return tf.ConvNextForImageClassification(cfg), {"pixel_values": x,
                                                    "labels": rng.integers(0, 3, n)}


def swin(rng, n):
    cfg = tf.SwinConfig(image_size=16, patch_size=2, num_channels=3, embed_dim=8, depths=[1, 1],
                        num_heads=[2, 2], window_size=4, mlp_ratio=2.0, hidden_dropout_prob=0,
                        attention_probs_dropout_prob=0, drop_path_rate=0, num_labels=3)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
    return tf.SwinForImageClassification(cfg), {"pixel_values": x,
                                                "labels": rng.integers(0, 3, n)}


def poolformer(rng, n):
    """Two layer scales per block (layer_scale_1 and _2), fresh ones of one
    value: the export merges them (Identity), and both are read in one call
    of one module. They train apart, as in PyTorch."""
    cfg = tf.PoolFormerConfig(num_channels=3, hidden_sizes=[8, 16], depths=[1, 1],
                              num_encoder_blocks=2, patch_sizes=[3, 3], strides=[2, 2],
                              padding=[1, 1], pool_size=3, mlp_ratio=2.0, drop_path_rate=0,
                              num_labels=3)
    x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
    return tf.PoolFormerForImageClassification(cfg), {"pixel_values": x,
                                                      "labels": rng.integers(0, 3, n)}


def codegen(rng, n):
    """Rotary over the whole head (rotary_dim = head_dim): the pass-through
    part key[..., rotary_dim:] is an empty slice, concatenated."""
    cfg = tf.CodeGenConfig(vocab_size=VOCAB, n_positions=SEQ, n_ctx=SEQ, n_embd=16, n_layer=2,
                           n_head=4, rotary_dim=4, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
    ids, _, lab = token_data(rng, n)
    return tf.CodeGenForCausalLM(cfg), {"input_ids": ids, "labels": lab}


class CLIPWithLoss(tf.CLIPModel):
    def forward(self, input_ids, pixel_values, attention_mask):
        return super().forward(input_ids=input_ids, pixel_values=pixel_values,
                               attention_mask=attention_mask, return_loss=True)


def clip(rng, n):
    """The contrastive loss over the micro-batch; the text pooled at
    input_ids.argmax(-1), an ArgMax of run-time integers."""
    cfg = tf.CLIPConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=SEQ,
                         dropout=0, attention_dropout=0),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                           num_attention_heads=2, image_size=8, patch_size=4, dropout=0,
                           attention_dropout=0),
        projection_dim=8)
    ids, mask, _ = token_data(rng, n)
    x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
    return CLIPWithLoss(cfg), {"input_ids": ids, "pixel_values": x, "attention_mask": mask}


def deberta(rng, n):
    """Disentangled attention with log-bucketed relative positions, folded
    at import from float32 math (Ceil(Log(d / 2) / log 3.5)), and the
    relative embeddings' LayerNorm read by both layers."""
    cfg = tf.DebertaV2Config(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=32,
                             max_position_embeddings=SEQ, relative_attention=True,
                             position_buckets=4, pos_att_type=["p2c", "c2p"],
                             norm_rel_ebd="layer_norm", share_att_key=True,
                             position_biased_input=False, type_vocab_size=0,
                             hidden_dropout_prob=0, attention_probs_dropout_prob=0)
    ids, mask, lab = token_data(rng, n)
    return tf.DebertaV2ForMaskedLM(cfg), {"input_ids": ids, "attention_mask": mask,
                                          "labels": lab}


def whisper(rng, n):
    cfg = tf.WhisperConfig(vocab_size=VOCAB, num_mel_bins=8, d_model=16, encoder_layers=1,
                           decoder_layers=1, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                           max_source_positions=8, max_target_positions=SEQ, dropout=0,
                           attention_dropout=0, activation_dropout=0, pad_token_id=0,
                           decoder_start_token_id=1, eos_token_id=2, bos_token_id=1,
                           suppress_tokens=None, begin_suppress_tokens=None)
    feats = rng.standard_normal((n, 8, 16)).astype(np.float32)
    ids, _, lab = token_data(rng, n)
    return tf.WhisperForConditionalGeneration(cfg), {"input_features": feats, "labels": lab}


def gptj(rng, n):
    """GPT-J: its rotary embedding's repeat_interleave exports as a Loop
    over a SequenceEmpty, which otc unrolls."""
    cfg = tf.GPTJConfig(vocab_size=VOCAB, n_positions=SEQ, n_embd=16, n_layer=2, n_head=2,
                        rotary_dim=4, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
    ids, _, lab = token_data(rng, n, pad=False)
    return tf.GPTJForCausalLM(cfg), {"input_ids": ids, "labels": lab}


def bloom(rng, n):
    """BLOOM: ALiBi position biases from the attention mask's cumsum."""
    cfg = tf.BloomConfig(vocab_size=VOCAB, hidden_size=16, n_layer=2, n_head=2,
                         hidden_dropout=0, attention_dropout=0)
    ids, mask, lab = token_data(rng, n)
    return tf.BloomForCausalLM(cfg), {"input_ids": ids, "attention_mask": mask, "labels": lab}


CASES = {"gpt2": gpt2, "llama": llama, "llama_finetune": llama_finetune, "qwen2": qwen2,
         "falcon": falcon, "bert": bert, "roberta": roberta, "albert": albert,
         "distilbert": distilbert, "bert_qa": bert_qa,
         "bert_multilabel": bert_multilabel, "t5": t5, "bart": bart, "vit": vit, "resnet": resnet,
         "convnext": convnext, "swin": swin, "whisper": whisper, "poolformer": poolformer,
         "codegen": codegen, "clip": clip, "deberta": deberta, "gptj": gptj, "bloom": bloom}


def batchnorms(model):
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def as_float64(state):
    """The state in float64, with the state dict's version metadata, which
    some modules' loaders require (torchvision's MNASNet)."""
    out = collections.OrderedDict(
        (k, v.double() if v.is_floating_point() else v) for k, v in state.items())
    out._metadata = getattr(state, "_metadata", None)
    return out


def train(model, state, data, dtype, lr):
    # Tensors the models make on the fly (masks filled with finfo(dtype).min,
    # positions) take the default dtype: float64 for the float64 reference.
    torch.set_default_dtype(dtype)
    try:
        return train_as(model, state, data, dtype, lr)
    finally:
        torch.set_default_dtype(torch.float32)


def train_as(model, state, data, dtype, lr):
    model = copy.deepcopy(model).to(dtype)
    model.load_state_dict(state)
    model.train()
    wrapped = Loss(model, list(data))
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
    m = len(next(iter(data.values()))) // MICRO
    for s in range(STEPS):
        opt.zero_grad()
        first = (s % m) * MICRO
        batch = [torch.from_numpy(v[first:first + MICRO]) for v in data.values()]
        wrapped(*[b.to(dtype) if b.is_floating_point() else b for b in batch]).backward()
        opt.step()
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()
            if v.is_floating_point()}


def export(model, state, data, path, head=None):
    """The model returning its loss, or for a case of HEADS what its head
    returns, without the inputs otc's --loss adds."""
    dropped, outputs, _ = head or ((), ["loss"], None)
    names = [n for n in data if n not in dropped]
    sample = tuple(torch.from_numpy(data[n][:MICRO]) for n in names)
    mode = torch.onnx.TrainingMode.TRAINING if batchnorms(model) else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(Loss(model, names, outputs), sample, str(path), opset_version=17, training=mode,
                      input_names=names, output_names=outputs,
                      dynamic_axes={name: {0: "batch"}
                                    for name in names + (outputs if head else [])})
    # Tracing in training mode moves BatchNorm's statistics: reset them.
    m = onnx.load(str(path))
    for init in m.graph.initializer:
        key = init.name[len("model."):] if init.name.startswith("model.") else init.name
        if key in state:
            init.CopyFrom(onnx.numpy_helper.from_array(state[key].numpy(), init.name))
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return m


def parameter_of(m, state):
    """(initializer, parameter, transposed) for each initializer that holds a
    parameter: by name, else (export-time folding stores a Linear's weight
    transposed, as onnx::MatMul_N) by equal value, when that is unambiguous."""
    params = {k: v.numpy() for k, v in state.items() if v.is_floating_point()}
    inits = {i.name for i in m.graph.initializer}
    # In eval mode the exporter merges equal parameters, naming the others
    # through Identity nodes; otc trains them apart, under those names.
    merged = [n.output[0] for n in m.graph.node if n.op_type == "Identity" and n.input[0] in inits]
    out, unnamed = [], []
    for init in [i.name for i in m.graph.initializer] + merged:
        key = init[len("model."):] if init.startswith("model.") else init
        if key in params:
            out.append((init, key, False))
        elif init in inits:
            unnamed.append(init)
    named = {k for _, k, _ in out}
    by_name = {i.name: i for i in m.graph.initializer}
    for init in unnamed:
        a = onnx.numpy_helper.to_array(by_name[init])
        hits = [(k, t) for k, v in params.items() if a.size > 1
                for t, b in ((False, v), (True, v.T)) if a.shape == b.shape and np.array_equal(a, b)]
        # A copy of a named parameter (a tied head) is tied back by otc.
        if len(hits) == 1 and hits[0][0] not in named and not any(
                state[hits[0][0]].data_ptr() == state[k].data_ptr() for k in named):
            out.append((init, *hits[0]))
    return out


def flags(model, m, state):
    """What a user passes for what ONNX cannot say: --freeze for parameters
    PyTorch does not train (Whisper's sinusoidal positions) and for float
    buffers the loss reaches (BART's final_logits_bias; BatchNorm's
    statistics are otc's buffers already), --fixed-rows for an Embedding's
    padding_idx. A tied tensor goes by the name the export kept."""
    held = {i.name for i in m.graph.initializer}
    held |= {n.output[0] for n in m.graph.node if n.op_type == "Identity" and n.input[0] in held}

    def onnx_name(p):
        names = [f"model.{k}" for k, q in model.state_dict(keep_vars=True).items() if q is p]
        return next((n for n in names if n in held), None)

    out = []
    for p in model.parameters():
        if not p.requires_grad and onnx_name(p):
            out.append(f" --freeze {onnx_name(p)}")
    params = dict(model.named_parameters())
    # A tied parameter goes by either name (PyTorch 2's exporter keeps the head's).
    held_by = model.state_dict(keep_vars=True)
    for k, v in held_by.items():
        if k not in params and any(v is p for p in params.values()):
            params[k] = v
    for init, key, _ in parameter_of(m, state):
        # (a frozen weight the export folded transposed has no name of its own)
        if (key in params and not params[key].requires_grad) or (
                key not in params and not key.split(".")[-1].startswith(("running_", "num_batches"))):
            out.append(f" --freeze {init}")
    # nn.Embedding, or a look-up of its own with F.embedding's padding_idx (I-BERT's QuantEmbedding)
    for e in model.modules():
        if getattr(e, "padding_idx", None) is not None and isinstance(getattr(e, "weight", None), nn.Parameter) \
                and e.weight.dim() == 2 and onnx_name(e.weight):
            out.append(f" --fixed-rows {onnx_name(e.weight)}={e.padding_idx}")
    return "".join(dict.fromkeys(out))


def build(name, perturb=False):
    """The case's model and data, its weights perturbed if asked."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model, data = CASES[name](rng, MICRO * STEPS)
    if perturb:  # pretrained-like: no zero bias or equal norm weights to fold away
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.02 * torch.randn(p.shape, generator=g))
    return model, data


def make(name, out_name=None, exporter=None, perturb=False, extra_flags=""):
    model, data = build(name, perturb)
    state = copy.deepcopy(model.state_dict())
    out = OUT / (out_name or name)
    (out / "data").mkdir(parents=True, exist_ok=True)
    for k, v in data.items():
        np.save(out / "data" / f"{k}.npy", v)
    lr = LR
    w32 = train(model, state, data, torch.float32, lr)
    w64 = train(model, as_float64(state), data, torch.float64, lr)
    m = exporter(model, state, data, out / "model.onnx") if exporter else \
        export(model, state, data, out / "model.onnx", HEADS.get(name))
    if name in HEADS and not exporter:  # (another exporter writes the model's own loss)
        extra_flags += f" --loss {HEADS[name][2]}"
    (out / "compile_flags").write_text(
        f"--optimizer sgd --micro-batch {MICRO}{flags(model, m, state)}{extra_flags}\n")
    (out / "train_flags").write_text(f"--steps {STEPS} --accum-steps 1 --lr {lr}\n")
    # A tensor whose own update is tiny (a query bias: softmax nearly
    # ignores it) sums terms as large as the model's largest update, so its
    # float32 noise is relative to that, not to itself: the floor is one
    # float32 rounding of the largest update.
    largest = max(np.abs(w64[k] - state[k].double().numpy()).max() for k in w64)
    expected = {}
    for init, key, transposed in parameter_of(m, state):
        w, w64k = w32[key], w64[key]
        if transposed:
            w, w64k = w.T, w64k.T
        expected[init] = w.astype(np.float32)
        expected[f"tol/{init}"] = np.float64(4 * np.abs(w - w64k).max() + 1e-5 * np.abs(w64k).max() +
                                             1.2e-7 * largest)
    np.savez(out / "expected.npz", **expected)
    n = sum(p.numel() for p in model.parameters())
    print(f"{name}: {n} parameters, {len(m.graph.node)} nodes, {len(expected) // 2} checked tensors")


# Cases exported without their loss, as optimum exports a task's head; otc
# appends the loss Hugging Face computes with --loss.
# (inputs left out, outputs: the model output's fields, --loss)
HEADS = {
    "bert_qa": (("start_positions", "end_positions"), ["start_logits", "end_logits"],
                "span:start_logits,end_logits"),
    "bert_multilabel": (("labels",), ["logits"], "bce:logits"),
}


# model_dynamic.onnx: the same model and weights exported as optimum does,
# every axis but the model's own dynamic (dynamic_axes), trained with --dim.
# (the inputs it reads, each input's dynamic axes, output: the field
# returned, its logits as optimum exports a text-generation model without
# its past, or its loss)
DYNAMIC = {
    "gpt2": (["input_ids"], {"input_ids": {0: "batch", 1: "sequence"}}, "logits"),
    "bert": (["input_ids", "attention_mask", "labels"],
             {"input_ids": {0: "batch", 1: "sequence"},
              "attention_mask": {0: "batch", 1: "sequence"}, "labels": {0: "batch"}}, "loss"),
    "resnet": (["pixel_values", "labels"],
               {"pixel_values": {0: "batch", 2: "height", 3: "width"}, "labels": {0: "batch"}},
               "loss"),
}


def make_dynamic(name):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model, data = CASES[name](rng, MICRO * STEPS)
    state = copy.deepcopy(model.state_dict())
    names, axes, output = DYNAMIC[name]
    sample = tuple(torch.from_numpy(data[k][:MICRO]) for k in names)
    mode = torch.onnx.TrainingMode.TRAINING if batchnorms(model) else torch.onnx.TrainingMode.EVAL
    path = OUT / name / "model_dynamic.onnx"
    torch.onnx.export(Loss(model, names, [output]), sample, str(path), opset_version=17,
                      training=mode, input_names=names, output_names=[output], dynamic_axes=axes)
    m = onnx.load(str(path))
    for init in m.graph.initializer:  # the statistics, as export() resets them
        key = init.name[len("model."):] if init.name.startswith("model.") else init.name
        if key in state:
            init.CopyFrom(onnx.numpy_helper.from_array(state[key].numpy(), init.name))
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    print(f"{name}: model_dynamic.onnx, dynamic axes {axes}")


# <case>_torch2: PyTorch 2's default exporter (torch.export, dynamo=True),
# as users of current PyTorch export; optimize as given. Its optimizer folds
# parameters it sees as constants (zero biases, equal norm weights), so the
# weights are perturbed first, as a pretrained checkpoint's would be.
# Its BatchNorm is inference mode even for a module in training mode, so
# ResNet trains with --batch-norm train, as PyTorch's reference does.
TORCH2 = {"llama": True, "vit": True, "gpt2": False, "roberta": False, "resnet": False}


def export_torch2(optimize):
    def export_with(model, state, data, path):
        names = list(data)
        model.train(bool(batchnorms(model)))
        namespace = {}  # torch.export wants the inputs' names in the signature
        exec(f"def forward(self, {', '.join(names)}):\n"
             f"    return self.model({', '.join(f'{n}={n}' for n in names)}).loss", namespace)
        wrapper = type("Named", (nn.Module,), {"forward": namespace["forward"]})()
        wrapper.model = model
        sample = tuple(torch.from_numpy(v[:MICRO]) for v in data.values())
        program = torch.onnx.export(
            wrapper, sample, input_names=names, output_names=["loss"], dynamo=True,
            optimize=optimize, dynamic_shapes={n: {0: torch.export.Dim("batch", min=2)}
                                               for n in names})
        program.save(str(path), external_data=False)
        return onnx.load(str(path))
    return export_with


def main():
    args = sys.argv[1:]
    if args[:1] == ["--torch2"]:  # needs PyTorch >= 2.9 and onnxscript
        for name in args[1:] or list(TORCH2):
            model, _ = CASES[name](np.random.default_rng(0), MICRO)
            make(name, f"{name}_torch2", export_torch2(TORCH2[name]), perturb=True,
                 extra_flags=" --batch-norm train" if batchnorms(model) else "")
        return
    if args[:1] == ["--dynamic"]:
        for name in args[1:] or list(DYNAMIC):
            make_dynamic(name)
        return
    for name in args or list(CASES):
        make(name)


if __name__ == "__main__":
    main()

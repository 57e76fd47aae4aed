#!/opt/hfvenv/bin/python
"""Hugging Face families beyond the model suite, probed the suite's way
(make_models.py: tiny config, random init, torch.onnx.export's defaults,
3 SGD steps of PyTorch in float32 and float64 for the tolerance), then
compiled and trained by otc and compared. Not part of the test command
(its exports take minutes); run it when the importer changes:

  test/models/probe_families.py OTC WORKDIR [FAMILY ...]

prints one line per family: "weights match", the first mismatch, or where
it failed (export, compile, training). GPT-J and BLOOM graduated to the
suite (gptj.test, bloom.test). Not here, because torch 1.13's exporter
fails on them: EfficientNet (padding="same" convolution), Reformer (an
internal error), MEGA (fft_rfft), FSMT (a float overflow), MobileViT v2
(col2im) and ViViT (tile); in the fifth round FNet (fft_fftn),
Transformer-XL (an internal type_as error), TAPAS (scatter_reduce),
SigLIP (padding="valid" convolution) and PatchTST and PatchTSMixer
(mse_loss); in the sixth round CPM-Ant (logical_not) and MRA (a dtype
error while tracing). Two exports are invalid ONNX, which onnxruntime refuses too:
Switch Transformers' `x[mask] = v` becomes masked_scatter with the [B, T]
mask expanded right-aligned to [B, T, D] (an Expand that fails unless T
is D), and NLLB-MoE's routing Einsum has a bool input.
"""
import copy
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import torch
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


def audio(cls, cfg, length=400):
    def f(rng, n):
        x = rng.standard_normal((n, length)).astype(np.float32)
        lab = rng.integers(0, 3, n).astype(np.int64)
        model = cls(cfg)
        # weight_norm leaves its computed weight (not a graph leaf) on the
        # module, which deepcopy refuses; each forward computes it again.
        for m in model.modules():
            if hasattr(m, "weight_g"):
                m.weight = m.weight.detach()
        return model, {"input_values": x, "labels": lab}
    return f

def classify(cls, cfg):
    def f(rng, n):
        ids, _, _ = mm.token_data(rng, n, pad=False)
        return cls(cfg), {"input_ids": ids, "labels": rng.integers(0, 3, n).astype(np.int64)}
    return f

def video(cls, cfg, frames=4, size=8):
    def f(rng, n):
        x = rng.standard_normal((n, frames, 3, size, size)).astype(np.float32)
        return cls(cfg), {"pixel_values": x, "labels": rng.integers(0, 3, n).astype(np.int64)}
    return f

def segment(cls, cfg, size=32):
    def f(rng, n):
        x = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        lab = rng.integers(0, 3, (n, size, size)).astype(np.int64)
        return cls(cfg), {"pixel_values": x, "labels": lab}
    return f

def spectrogram(cls, cfg, frames=16, bins=16):
    """Audio classifiers over precomputed features [N, frames, bins]."""
    def f(rng, n):
        x = rng.standard_normal((n, frames, bins)).astype(np.float32)
        return cls(cfg), {"input_values": x, "labels": rng.integers(0, 3, n).astype(np.int64)}
    return f

def speech_to_text(cls, cfg, frames=16, bins=8):
    """Sequence-to-sequence from features [N, frames, bins] to tokens."""
    def f(rng, n):
        x = rng.standard_normal((n, frames, bins)).astype(np.float32)
        _, _, lab = mm.token_data(rng, n, pad=False)
        return cls(cfg), {"input_features": x, "labels": lab}
    return f

def series(cls, cfg, context=16, horizon=4, channels=2):
    """Forecasters: past values [N, context, channels] to the next horizon."""
    def f(rng, n):
        x = rng.standard_normal((n, context, channels)).astype(np.float32)
        y = rng.standard_normal((n, horizon, channels)).astype(np.float32)
        return cls(cfg), {"past_values": x, "future_values": y}
    return f

def features(cls, cfg, shape):
    """Audio classifiers over input_features of the given per-sample shape."""
    def f(rng, n):
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        return cls(cfg), {"input_features": x, "labels": rng.integers(0, 3, n).astype(np.int64)}
    return f

def depth(cls, cfg, size=32, scale=1):
    """Depth estimators: per-pixel targets, a third of them 0 (no
    measurement, which the losses select away: x[mask])."""
    def f(rng, n):
        x = rng.standard_normal((n, 3, size, size)).astype(np.float32)
        d = rng.uniform(0.5, 2.0, (n, size * scale, size * scale)).astype(np.float32)
        d[rng.random(d.shape) < 1 / 3] = 0
        return cls(cfg), {"pixel_values": x, "labels": d}
    return f

def true_gradient_yoso(make):
    """YOSO's expectation attention is an autograd.Function whose backward
    is an approximation, not its forward's derivative; an export carries
    the forward alone, so PyTorch is run here with the forward's own
    gradient (the same expression, left to autograd)."""
    from transformers.models.yoso import modeling_yoso as my

    class Exact:
        @staticmethod
        def apply(query_mask, key_mask, query, key, value, config):
            e = (1 - torch.acos(query @ key.transpose(-1, -2)) / math.pi) ** config["hash_code_len"]
            return (e * query_mask[:, :, None] * key_mask[:, None, :]) @ value

    def f(rng, n):
        my.YosoCumulation = Exact
        return make(rng, n)
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
 # Added 2026-11-28 (second round).
 "biogpt": lm(tf.BioGptForCausalLM, tf.BioGptConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0, activation_dropout=0, layerdrop=0)),
 "xglm": lm(tf.XGLMForCausalLM, tf.XGLMConfig(vocab_size=V, max_position_embeddings=S + 2, d_model=16, ffn_dim=32, num_layers=2, attention_heads=2, dropout=0, attention_dropout=0, activation_dropout=0, layerdrop=0), pad=True),
 "mpt": lm(tf.MptForCausalLM, tf.MptConfig(vocab_size=V, d_model=16, n_heads=2, n_layers=2, expansion_ratio=2, max_seq_len=S, resid_pdrop=0, emb_pdrop=0, attn_config={"attn_pdrop": 0, "alibi": True})),
 "persimmon": lm(tf.PersimmonForCausalLM, tf.PersimmonConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S, hidden_dropout=0, attention_dropout=0)),
 "ctrl": lm(tf.CTRLLMHeadModel, tf.CTRLConfig(vocab_size=V, n_positions=S, n_embd=16, dff=32, n_layer=2, n_head=2, resid_pdrop=0, embd_pdrop=0)),
 "mobilebert": lm(tf.MobileBertForMaskedLM, tf.MobileBertConfig(vocab_size=V, hidden_size=16, embedding_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, intra_bottleneck_size=8, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_feedforward_networks=2), pad=True),
 "squeezebert": lm(tf.SqueezeBertForMaskedLM, tf.SqueezeBertConfig(vocab_size=V, hidden_size=16, embedding_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2, intermediate_groups=2, output_groups=2), pad=True),
 "funnel": lm(tf.FunnelForMaskedLM, tf.FunnelConfig(vocab_size=V, block_sizes=[1, 1], block_repeats=[1, 1], d_model=16, n_head=2, d_head=8, d_inner=32, hidden_dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "convbert": lm(tf.ConvBertForMaskedLM, tf.ConvBertConfig(vocab_size=V, hidden_size=16, embedding_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, head_ratio=2, conv_kernel_size=3), pad=True),
 "rembert": lm(tf.RemBertForMaskedLM, tf.RemBertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, input_embedding_size=8, output_embedding_size=8, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, classifier_dropout_prob=0), pad=True),
 "esm": lm(tf.EsmForMaskedLM, tf.EsmConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, position_embedding_type="rotary", hidden_dropout_prob=0, attention_probs_dropout_prob=0, pad_token_id=1, mask_token_id=2), pad=True),
 "nystromformer": lm(tf.NystromformerForMaskedLM, tf.NystromformerConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, num_landmarks=4, segment_means_seq_len=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "pegasus": lm(tf.PegasusForConditionalGeneration, tf.PegasusConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "marian": lm(tf.MarianMTModel, tf.MarianConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0, pad_token_id=V - 1, decoder_start_token_id=V - 1), pad=True),
 "mbart": lm(tf.MBartForConditionalGeneration, tf.MBartConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "m2m100": lm(tf.M2M100ForConditionalGeneration, tf.M2M100Config(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0, encoder_layerdrop=0, decoder_layerdrop=0), pad=True),
 "umt5": lm(tf.UMT5ForConditionalGeneration, tf.UMT5Config(vocab_size=V, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2, relative_attention_num_buckets=8, dropout_rate=0, decoder_start_token_id=0, pad_token_id=0), pad=True),
 "longt5": lm(tf.LongT5ForConditionalGeneration, tf.LongT5Config(vocab_size=V, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2, relative_attention_num_buckets=8, local_radius=2, dropout_rate=0, decoder_start_token_id=0, pad_token_id=0), pad=True),
 "mobilenet_v1": img(tf.MobileNetV1ForImageClassification, tf.MobileNetV1Config(depth_multiplier=0.25, min_depth=4, image_size=32, classifier_dropout_prob=0, num_labels=3), size=32),
 "convnextv2": img(tf.ConvNextV2ForImageClassification, tf.ConvNextV2Config(num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3, drop_path_rate=0), size=16),
 "focalnet": img(tf.FocalNetForImageClassification, tf.FocalNetConfig(image_size=16, patch_size=4, embed_dim=8, depths=[1, 1], focal_levels=[2, 2], focal_windows=[3, 3], hidden_dropout_prob=0, drop_path_rate=0, num_labels=3), size=16),
 "cvt": img(tf.CvtForImageClassification, tf.CvtConfig(embed_dim=[8, 16, 16], num_heads=[1, 2, 2], depth=[1, 2, 3], patch_sizes=[7, 3, 3], patch_stride=[4, 2, 2], patch_padding=[2, 1, 1], mlp_ratio=[2.0, 2.0, 2.0], qkv_bias=[True, True, True], drop_rate=[0.0, 0.0, 0.0], attention_drop_rate=[0.0, 0.0, 0.0], drop_path_rate=[0.0, 0.0, 0.0], cls_token=[False, False, True], num_labels=3), size=16),
 "pvt": img(tf.PvtForImageClassification, tf.PvtConfig(image_size=16, num_encoder_blocks=2, depths=[1, 1], sequence_reduction_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[4, 2], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2], hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0, num_labels=3), size=16),
 "swinv2": img(tf.Swinv2ForImageClassification, tf.Swinv2Config(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[1, 2], window_size=4, hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0, num_labels=3), size=16),
 "data2vec_vision": img(tf.Data2VecVisionForImageClassification, tf.Data2VecVisionConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, use_relative_position_bias=True, drop_path_rate=0, num_labels=3), size=8),
 "efficientformer": img(tf.EfficientFormerForImageClassification, tf.EfficientFormerConfig(depths=[1, 1, 1, 2], hidden_sizes=[8, 8, 16, 16], downsamples=[True, True, True, True], dim=16, key_dim=8, attention_ratio=2, num_attention_heads=2, num_meta3d_blocks=1, resolution=1, hidden_dropout_prob=0, drop_path_rate=0, num_labels=3), size=32),
 "bit": img(tf.BitForImageClassification, tf.BitConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_groups=2, num_labels=3), size=16),
 "mixtral": lm(tf.MixtralForCausalLM, tf.MixtralConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=S, num_local_experts=4, num_experts_per_tok=2)),
 # Added 2026-11-28 (third round): audio, classification heads, segmentation.
 "wav2vec2": audio(tf.Wav2Vec2ForSequenceClassification, tf.Wav2Vec2Config(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3)),
 "hubert": audio(tf.HubertForSequenceClassification, tf.HubertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3)),
 "data2vec_audio": audio(tf.Data2VecAudioForSequenceClassification, tf.Data2VecAudioConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3, conv_pos_kernel_size=5)),
 "wavlm": audio(tf.WavLMForSequenceClassification, tf.WavLMConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3, num_buckets=16, max_bucket_distance=32)),
 "sew": audio(tf.SEWForSequenceClassification, tf.SEWConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3, squeeze_factor=2)),
 "xlnet": lm(tf.XLNetLMHeadModel, tf.XLNetConfig(vocab_size=V, d_model=16, n_layer=2, n_head=2, d_inner=32, dropout=0)),
 "layoutlm": lm(tf.LayoutLMForMaskedLM, tf.LayoutLMConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "canine": classify(tf.CanineForSequenceClassification, tf.CanineConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, downsampling_rate=2, num_hash_functions=2, num_hash_buckets=64, local_transformer_stride=4, max_position_embeddings=64, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 "rwkv": lm(tf.RwkvForCausalLM, tf.RwkvConfig(vocab_size=V, context_length=S, hidden_size=16, num_hidden_layers=2, attention_hidden_size=16, intermediate_size=32)),
 "imagegpt": lm(tf.ImageGPTForCausalImageModeling, tf.ImageGPTConfig(vocab_size=V + 1, n_positions=S, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)),
 "longformer": lm(tf.LongformerForMaskedLM, tf.LongformerConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, attention_window=[4, 4], max_position_embeddings=S + 8, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "led": lm(tf.LEDForConditionalGeneration, tf.LEDConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, attention_window=[4], max_encoder_position_embeddings=S, max_decoder_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "blenderbot": lm(tf.BlenderbotForConditionalGeneration, tf.BlenderbotConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "upernet": segment(tf.UperNetForSemanticSegmentation, tf.UperNetConfig(backbone_config=tf.ConvNextConfig(num_stages=4, hidden_sizes=[8, 8, 16, 16], depths=[1, 1, 1, 1], out_features=["stage1", "stage2", "stage3", "stage4"]), hidden_size=16, auxiliary_in_channels=16, auxiliary_channels=8, use_auxiliary_head=False, num_labels=3), size=192),
 "segformer_seg": segment(tf.SegformerForSemanticSegmentation, tf.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[3, 3], strides=[2, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=16, hidden_dropout_prob=0, attention_probs_dropout_prob=0, classifier_dropout_prob=0, drop_path_rate=0, num_labels=3), size=16),
 "videomae": video(tf.VideoMAEForVideoClassification, tf.VideoMAEConfig(image_size=8, patch_size=4, num_channels=3, num_frames=4, tubelet_size=2, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 # Added 2026-11-28 (fourth round).
 "deberta": lm(tf.DebertaForMaskedLM, tf.DebertaConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, relative_attention=True, pos_att_type=["c2p", "p2c"], max_relative_positions=S), pad=True),
 "roformer": lm(tf.RoFormerForMaskedLM, tf.RoFormerConfig(vocab_size=V, embedding_size=16, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "openai_gpt": lm(tf.OpenAIGPTLMHeadModel, tf.OpenAIGPTConfig(vocab_size=V, n_positions=S, n_embd=16, n_layer=2, n_head=2, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)),
 "ernie": lm(tf.ErnieForMaskedLM, tf.ErnieConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "nezha": lm(tf.NezhaForMaskedLM, tf.NezhaConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, max_relative_position=4, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "megatron_bert": lm(tf.MegatronBertForMaskedLM, tf.MegatronBertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "big_bird": lm(tf.BigBirdForMaskedLM, tf.BigBirdConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, attention_type="original_full", hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "perceiver": lm(tf.PerceiverForMaskedLM, tf.PerceiverConfig(num_latents=4, d_latents=16, d_model=16, num_blocks=1, num_self_attends_per_block=1, num_self_attention_heads=2, num_cross_attention_heads=1, vocab_size=V, max_position_embeddings=S, attention_probs_dropout_prob=0), pad=True),
 "mt5": lm(tf.MT5ForConditionalGeneration, tf.MT5Config(vocab_size=V, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2, relative_attention_num_buckets=8, dropout_rate=0, decoder_start_token_id=0, pad_token_id=0), pad=True),
 "switch_transformers": lm(tf.SwitchTransformersForConditionalGeneration, tf.SwitchTransformersConfig(vocab_size=V, d_model=16, d_kv=8, d_ff=32, expert_capacity=16, num_layers=2, num_sparse_encoder_layers=1, num_decoder_layers=2, num_sparse_decoder_layers=1, num_heads=2, num_experts=2, router_jitter_noise=0, dropout_rate=0, decoder_start_token_id=0, pad_token_id=0), pad=True),
 "plbart": lm(tf.PLBartForConditionalGeneration, tf.PLBartConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "prophetnet": lm(tf.ProphetNetForConditionalGeneration, tf.ProphetNetConfig(vocab_size=V, hidden_size=16, encoder_ffn_dim=32, decoder_ffn_dim=32, num_encoder_layers=1, num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2, max_position_embeddings=S + 2, ngram=2, num_buckets=8, relative_max_distance=16, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "levit": img(tf.LevitForImageClassification, tf.LevitConfig(image_size=64, patch_size=16, hidden_sizes=[16, 16, 16], num_attention_heads=[1, 2, 2], depths=[1, 1, 1], key_dim=[8, 8, 8], drop_path_rate=0, mlp_ratio=[2, 2, 2], attention_ratio=[2, 2, 2], num_labels=3), size=64),
 "vit_msn": img(tf.ViTMSNForImageClassification, tf.ViTMSNConfig(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3), size=8),
 "swiftformer": img(tf.SwiftFormerForImageClassification, tf.SwiftFormerConfig(depths=[1, 1, 1, 1], embed_dims=[8, 8, 16, 16], mlp_ratio=2, downsamples=[True, True, True, True], drop_path_rate=0, num_labels=3), size=32),
 "mobilenet_v2": img(tf.MobileNetV2ForImageClassification, tf.MobileNetV2Config(depth_multiplier=0.25, min_depth=4, image_size=32, classifier_dropout_prob=0, num_labels=3), size=32),
 "timesformer": video(tf.TimesformerForVideoClassification, tf.TimesformerConfig(image_size=8, patch_size=4, num_frames=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0, num_labels=3)),
 "ast": spectrogram(tf.ASTForAudioClassification, tf.ASTConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, patch_size=4, frequency_stride=4, time_stride=4, max_length=16, num_mel_bins=16, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 "unispeech": audio(tf.UniSpeechForSequenceClassification, tf.UniSpeechConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3)),
 "sew_d": audio(tf.SEWDForSequenceClassification, tf.SEWDConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, squeeze_factor=2, max_position_embeddings=64, position_buckets=16, num_labels=3)),
 "speech_to_text": speech_to_text(tf.Speech2TextForConditionalGeneration, tf.Speech2TextConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_source_positions=32, max_target_positions=S + 2, conv_kernel_sizes=(5, 5), conv_channels=16, input_feat_per_channel=8, input_channels=1, dropout=0, attention_dropout=0, activation_dropout=0)),
 # Added 2026-11-28 (fifth round).
 "deberta_v2_conv": lm(tf.DebertaV2ForMaskedLM, tf.DebertaV2Config(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, relative_attention=True, pos_att_type=["c2p", "p2c"], position_buckets=4, max_relative_positions=S, share_att_key=True, norm_rel_ebd="layer_norm", conv_kernel_size=3, conv_act="gelu"), pad=True),
 "xlm": lm(tf.XLMWithLMHeadModel, tf.XLMConfig(vocab_size=V, emb_dim=16, n_layers=2, n_heads=2, max_position_embeddings=S, dropout=0, attention_dropout=0), pad=True),
 "flaubert": lm(tf.FlaubertWithLMHeadModel, tf.FlaubertConfig(vocab_size=V, emb_dim=16, n_layers=2, n_heads=2, max_position_embeddings=S, dropout=0, attention_dropout=0, pre_norm=True, layerdrop=0), pad=True),
 "fnet": lm(tf.FNetForMaskedLM, tf.FNetConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0)),
 "luke": lm(tf.LukeForMaskedLM, tf.LukeConfig(vocab_size=V, entity_vocab_size=8, entity_emb_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "yoso": true_gradient_yoso(lm(tf.YosoForMaskedLM, tf.YosoConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, use_expectation=True, hash_code_len=4, num_hash=2, conv_window=None, use_fast_hash=False, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True)),
 "bigbird_pegasus": lm(tf.BigBirdPegasusForConditionalGeneration, tf.BigBirdPegasusConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, attention_type="original_full", dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "blenderbot_small": lm(tf.BlenderbotSmallForConditionalGeneration, tf.BlenderbotSmallConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "pegasus_x": lm(tf.PegasusXForConditionalGeneration, tf.PegasusXConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, num_global_tokens=2, block_size=4, stagger_local_blocks=True, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "mvp": lm(tf.MvpForConditionalGeneration, tf.MvpConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, use_prompt=True, prompt_length=2, prompt_mid_dim=8, dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "xmod": lm(tf.XmodForMaskedLM, tf.XmodConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, languages=("en_XX", "de_DE"), default_language="en_XX", adapter_reduction_factor=2, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "roberta_prelayernorm": lm(tf.RobertaPreLayerNormForMaskedLM, tf.RobertaPreLayerNormConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "roc_bert": lm(tf.RoCBertForMaskedLM, tf.RoCBertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, pronunciation_vocab_size=V, shape_vocab_size=V, pronunciation_embed_dim=8, shape_embed_dim=8, enable_pronunciation=False, enable_shape=False, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "data2vec_text": lm(tf.Data2VecTextForMaskedLM, tf.Data2VecTextConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "ernie_m": classify(tf.ErnieMForSequenceClassification, tf.ErnieMConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 "bert_generation": lm(tf.BertGenerationDecoder, tf.BertGenerationConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0, is_decoder=True)),
 "trocr": lm(tf.TrOCRForCausalLM, tf.TrOCRConfig(vocab_size=V, d_model=16, decoder_layers=2, decoder_attention_heads=2, decoder_ffn_dim=32, max_position_embeddings=S + 2, dropout=0, attention_dropout=0, activation_dropout=0, layernorm_embedding=True, use_learned_position_embeddings=True)),
 "transfo_xl": lm(tf.TransfoXLLMHeadModel, tf.TransfoXLConfig(vocab_size=V, cutoffs=[16], d_model=16, d_embed=16, n_head=2, d_head=8, d_inner=32, n_layer=2, mem_len=0, clamp_len=-1, dropout=0, dropatt=0, div_val=2, adaptive=True)),
 "gpt_neox_japanese": lm(tf.GPTNeoXJapaneseForCausalLM, tf.GPTNeoXJapaneseConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_multiple_size=2, max_position_embeddings=S, rotary_pct=0.5, attention_dropout=0, hidden_dropout=0)),
 "tapas": lm(tf.TapasForMaskedLM, tf.TapasConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "layoutlmv3": classify(tf.LayoutLMv3ForSequenceClassification, tf.LayoutLMv3Config(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0, coordinate_size=3, shape_size=2, rel_pos_bins=8, max_rel_pos=16, rel_2d_pos_bins=8, max_rel_2d_pos=16, visual_embed=False, num_labels=3)),
 "lilt": classify(tf.LiltForSequenceClassification, tf.LiltConfig(vocab_size=V, hidden_size=24, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, channel_shrink_ratio=2, max_2d_position_embeddings=64, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 "markuplm": classify(tf.MarkupLMForSequenceClassification, tf.MarkupLMConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, max_depth=4, max_xpath_tag_unit_embeddings=8, max_xpath_subs_unit_embeddings=8, tag_pad_id=7, subs_pad_id=7, xpath_unit_hidden_size=8, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3)),
 "nllb_moe": lm(tf.NllbMoeForConditionalGeneration, tf.NllbMoeConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S, num_experts=2, expert_capacity=16, encoder_sparse_step=1, decoder_sparse_step=1, router_dtype="float32", dropout=0, attention_dropout=0, activation_dropout=0), pad=True),
 "van": img(tf.VanForImageClassification, tf.VanConfig(image_size=32, hidden_sizes=[8, 16], depths=[1, 1], mlp_ratios=[2, 2], patch_sizes=[7, 3], strides=[4, 2], drop_path_rate=0, dropout_rate=0, num_labels=3), size=32),
 "siglip": img(tf.SiglipForImageClassification, tf.SiglipConfig(vision_config=dict(image_size=8, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, attention_dropout=0), num_labels=3), size=8),
 "dpt": segment(tf.DPTForSemanticSegmentation, tf.DPTConfig(image_size=16, patch_size=4, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=32, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 8, 16, 16], fusion_hidden_size=16, reassemble_factors=[4, 2, 1, 0.5], hidden_dropout_prob=0, attention_probs_dropout_prob=0, semantic_classifier_dropout=0, use_auxiliary_head=True, auxiliary_loss_weight=0.4, num_labels=3), size=16),
 "glpn": depth(tf.GLPNForDepthEstimation, tf.GLPNConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16], patch_sizes=[3, 3], strides=[2, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=8, hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0, head_in_index=-1), size=16, scale=2),
 "unispeech_sat": audio(tf.UniSpeechSatForSequenceClassification, tf.UniSpeechSatConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3)),
 "wav2vec2_conformer": audio(tf.Wav2Vec2ConformerForSequenceClassification, tf.Wav2Vec2ConformerConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3, position_embeddings_type="rotary", conv_depthwise_kernel_size=3)),
 "wav2vec2_conformer_rel": audio(tf.Wav2Vec2ConformerForSequenceClassification, tf.Wav2Vec2ConformerConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, num_labels=3, position_embeddings_type="relative", conv_depthwise_kernel_size=3)),
 "wav2vec2_bert": features(tf.Wav2Vec2BertForSequenceClassification, tf.Wav2Vec2BertConfig(feature_size=8, feature_projection_input_dim=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, position_embeddings_type="relative_key", left_max_position_embeddings=8, right_max_position_embeddings=8, conv_depthwise_kernel_size=3, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, final_dropout=0, layerdrop=0, mask_time_prob=0, mask_feature_prob=0, classifier_proj_size=8, num_labels=3), (16, 8)),
 "whisper_classify": features(tf.WhisperForAudioClassification, tf.WhisperConfig(num_mel_bins=8, d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, max_source_positions=8, dropout=0, attention_dropout=0, activation_dropout=0, classifier_proj_size=8, num_labels=3), (8, 16)),
 "patchtst": series(tf.PatchTSTForPrediction, tf.PatchTSTConfig(num_input_channels=2, context_length=16, patch_length=4, patch_stride=4, prediction_length=4, d_model=16, num_attention_heads=2, num_hidden_layers=2, ffn_dim=32, dropout=0, attention_dropout=0, ff_dropout=0, path_dropout=0, head_dropout=0, loss="mse", scaling="std")),
 "patchtsmixer": series(tf.PatchTSMixerForPrediction, tf.PatchTSMixerConfig(context_length=16, patch_length=4, patch_stride=4, num_input_channels=2, prediction_length=4, d_model=8, num_layers=2, dropout=0, head_dropout=0, loss="mse", scaling="std")),
 # Added 2026-11-29 (sixth round; probe_multimodal.py has the two-input models).
 "xlm_roberta_xl": lm(tf.XLMRobertaXLForMaskedLM, tf.XLMRobertaXLConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "ibert": lm(tf.IBertForMaskedLM, tf.IBertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, quant_mode=False, hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "cpmant": lm(tf.CpmAntForCausalLM, tf.CpmAntConfig(vocab_size=V, hidden_size=16, num_attention_heads=2, dim_head=8, dim_ff=32, num_hidden_layers=2, dropout_p=0, prompt_types=3, prompt_length=2, segment_types=3)),
 "mra": lm(tf.MraForMaskedLM, tf.MraConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=S + 2, block_per_row=2, approx_mode="full", hidden_dropout_prob=0, attention_probs_dropout_prob=0), pad=True),
 "speech_to_text_2": lm(tf.Speech2Text2ForCausalLM, tf.Speech2Text2Config(vocab_size=V, d_model=16, decoder_layers=2, decoder_attention_heads=2, decoder_ffn_dim=32, max_target_positions=S + 2, dropout=0, attention_dropout=0, activation_dropout=0, decoder_layerdrop=0)),
}


def noise(work, name, perturb=False):
    """otc's distance to PyTorch's float64 weights over PyTorch float32's,
    per trained tensor (2-norms): the median and the largest. A failed
    comparison may be float32 noise beyond the per-tensor bound (a chaotic
    run, or a tensor whose reference happened to land close): that gives a
    median near 1, a wrong gradient a large one."""
    model, data = mm.build(name, perturb)
    state = copy.deepcopy(model.state_dict())
    w32 = mm.train(model, state, data, torch.float32, mm.LR)
    w64 = mm.train(model, mm.as_float64(state), data, torch.float64, mm.LR)
    got = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64)
           for t in onnx.load(str(work / f"{name}.onnx")).graph.initializer}
    ratios = []
    for init, key, transposed in mm.parameter_of(onnx.load(str(work / name / "model.onnx")), state):
        w = got[init].T if transposed else got[init]
        if not np.array_equal(w64[key], state[key].double().numpy()):  # trained or updated
            ratios.append(np.linalg.norm(w - w64[key]) /
                          max(np.linalg.norm(w32[key] - w64[key]), 1e-300))
    return f"otc/float32 distance to float64: median {np.median(ratios):.2f}, max {max(ratios):.3g}"


def unchecked(work, name):
    """Why the bounds could not judge: PyTorch's own float64 run is not
    finite (a mask of float32's lowest value, or -inf, met in float64)."""
    e = np.load(work / name / "expected.npz")
    if all(np.isfinite(e[k]) for k in e.files if k.startswith("tol/")):
        return ""
    def load(path):
        return {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    got, start = load(work / f"{name}.onnx"), load(work / name / "model.onnx")
    names = [k for k in e.files if not k.startswith("tol/") and k in start]
    largest = max(float(np.abs(e[k] - start[k]).max()) for k in names)
    off = max(float(np.abs(got[k] - e[k]).max()) for k in names)
    return ("PyTorch's float64 run is not finite, so no bound: otc's weights lie within "
            f"{off / largest:.2g} of the largest update from PyTorch float32's")


def probe(otc, work, name, make=mm.make, perturb=False):
    """One family's line; make(name) writes its fixture (from weights
    perturbed as mm.make's `perturb`)."""
    fx = work / name
    try:
        make(name)
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
            line = f"{name}: {what} failed: {' | '.join(lines[-3:])[:300]}"
            if what == "weights" and (why := unchecked(work, name)):
                return f"{name}: {why}"
            return f"{line}; {noise(work, name, perturb)}" if what == "weights" else line
    return f"{name}: weights match"


def main(cases=FAMILIES, usage=__doc__, make=mm.make, perturb=False):
    """OTC WORKDIR [NAME ...] from the command line: one line per case."""
    if len(sys.argv) < 3:
        sys.exit(usage)
    otc, work = sys.argv[1], Path(sys.argv[2]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    mm.OUT = work
    mm.CASES.update(cases)
    for name in sys.argv[3:] or list(cases):
        print(probe(otc, work, name, make, perturb), flush=True)


if __name__ == "__main__":
    main()

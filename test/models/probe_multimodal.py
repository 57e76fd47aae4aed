#!/opt/hfvenv/bin/python
"""Hugging Face models of two inputs or two halves, probed the model
suite's way (make_models.py: tiny configs, random init, torch.onnx.export's
defaults, 3 SGD steps of PyTorch in float32 and float64 for the tolerance),
then compiled and trained by otc and compared: contrastive image-text
pairs, captioners, visual question answering, encoder-decoder compositions
(VisionEncoderDecoder, SpeechEncoderDecoder, VisionTextDualEncoder),
masked image modelling, time-series forecasters. Not part of the test
command; run it when the importer changes:

  test/models/probe_multimodal.py OTC WORKDIR [MODEL ...]

prints probe_families' line per model. Informer's distilling convolution
pads circularly, which torch 1.13 exports one element off
(pytorch/pytorch#86690; otc warns); the probe exports it as PyTorch 2
does (fixed_circular_pad). Not here, because torch 1.13's exporter fails:
GIT (aten::full), ViLT (multinomial), Splinter and every Hugging Face
question-answering head with labels (CrossEntropyLoss's ignore_index is
the traced sequence length), LLaVA (__iand__). Invalid exports, which
onnxruntime refuses too: Kosmos-2 (masked_scatter's mask expanded
right-aligned, as Switch Transformers'), TVLT (repeat_interleave).
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.onnx.symbolic_opset9
import transformers as tf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_models as mm  # noqa: E402
import probe_families as pf  # noqa: E402

V, S = mm.VOCAB, mm.SEQ


def fixed_circular_pad(g, input, pad):
    """torch 1.13's circular padding export with the wrap-around before the
    data read as PyTorch 2's export reads it: x[-p:], not x[-(p+1):-1]."""
    from torch.onnx import symbolic_helper as sh
    from torch.onnx import symbolic_opset9 as s9
    padding = s9._convert_padding_node(pad)
    cur = input
    for i in range(len(padding) // 2):
        before, after = padding[-(2 * i + 1)], padding[-(2 * i + 2)]
        assert before == after >= 0, "symmetric circular padding only (which side is which goes unchecked)"
        parts = [sh._slice_helper(g, cur, axes=[2 + i], starts=[-before], ends=[2**62])] if before else []
        parts.append(cur)
        if after:
            parts.append(sh._slice_helper(g, cur, axes=[2 + i], starts=[0], ends=[after]))
        cur = g.op("Concat", *parts, axis_i=2 + i)
    return cur


torch.onnx.symbolic_opset9._pad_circular = fixed_circular_pad


def ids(rng, n):
    return rng.integers(0, V, (n, S)).astype(np.int64)

def padmask(rng, n):
    """Every other sample padded at its end, as a tokenizer pads."""
    m = np.ones((n, S), np.int64)
    m[1::2, S - 3:] = 0
    return m

def lm_labels(rng, n):
    lab = ids(rng, n)
    lab[1::2, S - 3:] = -100
    return lab

def classes(k):
    return lambda rng, n: rng.integers(0, k, n).astype(np.int64)

def normal(*shape):
    return lambda rng, n: rng.standard_normal((n, *shape)).astype(np.float32)

def uniform(*shape):
    return lambda rng, n: rng.random((n, *shape)).astype(np.float32)


def with_loss(cls):
    """cls whose forward asks for its contrastive loss (return_loss=True);
    a subclass, so parameter names stay the model's."""
    return type(cls.__name__ + "WithLoss", (cls,),
                {"forward": lambda self, **kw: cls.forward(self, **kw, return_loss=True)})

def given(build, **inputs):
    """A model from build() and its named inputs, each made by inputs[name](rng, n)."""
    def f(rng, n):
        model = build()
        for m in model.modules():  # weight_norm's computed weight: see probe_families.audio
            if hasattr(m, "weight_g"):
                m.weight = m.weight.detach()
        return model, {k: make(rng, n) for k, make in inputs.items()}
    return f

def patches(count, size, rows):
    """Pix2Struct's flattened patches: row and column (1-based) then pixels."""
    def f(rng, n):
        x = rng.standard_normal((n, count, 2 + size * size * 3)).astype(np.float32)
        x[:, :, 0] = 1 + np.arange(count) // rows
        x[:, :, 1] = 1 + np.arange(count) % rows
        return x
    return f

def boxes(rng, n):
    """Normalised boxes x0 <= x1, y0 <= y1, one per token."""
    a, b = rng.random((2, n, S, 2)).astype(np.float32)
    return np.concatenate([np.minimum(a, b), np.maximum(a, b)], -1)

def image_token_first(rng, n):
    """LLaVA's prompt: the image token (id V) first, then text."""
    x = ids(rng, n)
    x[:, 0] = V
    return x

def first_tokens(k):
    """Kosmos-2's image positions: the k tokens after the first."""
    def f(rng, n):
        m = np.zeros((n, S), bool)
        m[:, 1:1 + k] = True
        return m
    return f


def text(**kw):
    return {**dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=2, max_position_embeddings=S + 2), **kw}

def vision(**kw):
    return dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                image_size=8, patch_size=4, **kw)

NODROP = dict(hidden_dropout_prob=0, attention_probs_dropout_prob=0)
CLIPDROP = dict(dropout=0, attention_dropout=0)


def vit_gpt2():
    enc = tf.ViTModel(tf.ViTConfig(**vision(**NODROP)), add_pooling_layer=False)
    dec = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=V, n_positions=S, n_embd=16, n_layer=2, n_head=2,
                                           resid_pdrop=0, embd_pdrop=0, attn_pdrop=0,
                                           add_cross_attention=True, is_decoder=True))
    m = tf.VisionEncoderDecoderModel(encoder=enc, decoder=dec)
    m.config.decoder_start_token_id, m.config.pad_token_id = 0, 0
    return m

def donut():
    enc = tf.DonutSwinModel(tf.DonutSwinConfig(image_size=16, patch_size=2, embed_dim=8, depths=[1, 1],
                                               num_heads=[1, 2], window_size=4, hidden_dropout_prob=0,
                                               attention_probs_dropout_prob=0, drop_path_rate=0))
    dec = tf.MBartForCausalLM(tf.MBartConfig(vocab_size=V, d_model=16, decoder_layers=1, decoder_attention_heads=2,
                                             decoder_ffn_dim=32, max_position_embeddings=S, dropout=0,
                                             attention_dropout=0, activation_dropout=0,
                                             add_cross_attention=True, is_decoder=True))
    m = tf.VisionEncoderDecoderModel(encoder=enc, decoder=dec)
    m.config.decoder_start_token_id, m.config.pad_token_id = 0, 1
    return m

def wav2vec2_bert():
    enc = tf.Wav2Vec2Model(tf.Wav2Vec2Config(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
        conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
        hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, layerdrop=0,
        mask_time_prob=0, mask_feature_prob=0))
    dec = tf.BertLMHeadModel(tf.BertConfig(**text(**NODROP), is_decoder=True, add_cross_attention=True))
    m = tf.SpeechEncoderDecoderModel(encoder=enc, decoder=dec)
    m.config.decoder_start_token_id, m.config.pad_token_id = 0, 0
    return m

def vit_bert_dual():
    return with_loss(tf.VisionTextDualEncoderModel)(
        config=tf.VisionTextDualEncoderConfig.from_vision_text_configs(
            tf.ViTConfig(**vision(**NODROP)), tf.BertConfig(**text(**NODROP)), projection_dim=8))


MODELS = {
 "owlvit": given(lambda: with_loss(tf.OwlViTModel)(tf.OwlViTConfig(text_config=text(**CLIPDROP), vision_config=vision(**CLIPDROP), projection_dim=8)),
                 input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask),
 "owlv2": given(lambda: with_loss(tf.Owlv2Model)(tf.Owlv2Config(text_config=text(**CLIPDROP), vision_config=vision(**CLIPDROP), projection_dim=8)),
                input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask),
 "altclip": given(lambda: with_loss(tf.AltCLIPModel)(tf.AltCLIPConfig(text_config=text(project_dim=16, pad_token_id=1, **NODROP), vision_config=vision(**CLIPDROP), projection_dim=8)),
                  input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask),
 "chinese_clip": given(lambda: with_loss(tf.ChineseCLIPModel)(tf.ChineseCLIPConfig(text_config=text(**NODROP), vision_config=vision(**CLIPDROP), projection_dim=8)),
                       input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask),
 "x_clip": given(lambda: with_loss(tf.XCLIPModel)(tf.XCLIPConfig(text_config=text(**CLIPDROP), vision_config=vision(**CLIPDROP, num_frames=2, mit_hidden_size=8, mit_intermediate_size=32, mit_num_hidden_layers=1, mit_num_attention_heads=2, drop_path_rate=0), projection_dim=8, prompt_layers=1, prompt_attention_dropout=0, prompt_projection_dropout=0)),
                 input_ids=ids, pixel_values=normal(2, 3, 8, 8), attention_mask=padmask),
 "clap": given(lambda: with_loss(tf.ClapModel)(tf.ClapConfig(text_config=text(**NODROP, pad_token_id=1), audio_config=dict(window_size=4, num_mel_bins=16, spec_size=32, patch_size=4, patch_stride=(4, 4), depths=[1, 1], num_attention_heads=[1, 2], hidden_size=16, patch_embeds_hidden_size=8, enable_fusion=False, hidden_dropout_prob=0, attention_probs_dropout_prob=0, drop_path_rate=0), projection_dim=8)),
               input_ids=ids, input_features=normal(1, 64, 16), attention_mask=padmask),
 "vision_text_dual": given(vit_bert_dual, input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask),
 "blip_caption": given(lambda: tf.BlipForConditionalGeneration(tf.BlipConfig(text_config=dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S, **NODROP), vision_config=vision(**CLIPDROP), projection_dim=8)),
                       pixel_values=normal(3, 8, 8), input_ids=ids, labels=ids),
 "git": given(lambda: tf.GitForCausalLM(tf.GitConfig(vision_config=vision(**CLIPDROP), **text(**NODROP))),
              input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask, labels=lm_labels),
 "vilt_vqa": given(lambda: tf.ViltForQuestionAnswering(tf.ViltConfig(**text(**NODROP), image_size=8, patch_size=4, max_image_length=-1, num_labels=3, modality_type_vocab_size=2)),
                   input_ids=ids, pixel_values=normal(3, 8, 8), attention_mask=padmask, labels=uniform(3)),
 "visual_bert": given(lambda: tf.VisualBertForVisualReasoning(tf.VisualBertConfig(**text(**NODROP), visual_embedding_dim=8, num_labels=2)),
                      input_ids=ids, attention_mask=padmask, visual_embeds=normal(4, 8), labels=classes(2)),
 "lxmert": given(lambda: tf.LxmertForQuestionAnswering(tf.LxmertConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_attention_heads=2, l_layers=1, x_layers=1, r_layers=1, visual_feat_dim=8, visual_pos_dim=4, num_qa_labels=3, max_position_embeddings=S, **NODROP)),
                 input_ids=ids, visual_feats=normal(4, 8), visual_pos=uniform(4, 4), attention_mask=padmask, labels=classes(3)),
 "bridgetower": given(lambda: tf.BridgeTowerForImageAndTextRetrieval(tf.BridgeTowerConfig(text_config=text(**NODROP, pad_token_id=1), vision_config=dict(hidden_size=64, num_hidden_layers=2, image_size=8, patch_size=4), hidden_size=16, num_attention_heads=2, num_hidden_layers=2, hidden_dropout_prob=0, attention_probs_dropout_prob=0)),
                      input_ids=ids, attention_mask=padmask, pixel_values=normal(3, 8, 8), labels=classes(2)),
 "pix2struct": given(lambda: tf.Pix2StructForConditionalGeneration(tf.Pix2StructConfig(text_config=dict(vocab_size=V, hidden_size=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, relative_attention_num_buckets=8, dropout_rate=0), vision_config=dict(hidden_size=16, patch_embed_hidden_size=48, d_ff=32, d_kv=8, num_hidden_layers=1, num_attention_heads=2, seq_len=8, relative_attention_num_buckets=8, dropout_rate=0, attention_dropout=0))),
                     flattened_patches=patches(8, 4, 4), labels=ids),
 "kosmos2": given(lambda: tf.Kosmos2ForConditionalGeneration(tf.Kosmos2Config(text_config=dict(vocab_size=V, embed_dim=16, layers=2, ffn_dim=32, attention_heads=2, max_position_embeddings=S + 4, dropout=0, attention_dropout=0, activation_dropout=0, layerdrop=0), vision_config=vision(**CLIPDROP), latent_query_num=2)),
                  pixel_values=normal(3, 8, 8), input_ids=ids, image_embeds_position_mask=first_tokens(2), attention_mask=padmask, labels=lm_labels),
 "blip2": given(lambda: tf.Blip2ForConditionalGeneration(tf.Blip2Config(vision_config=vision(**CLIPDROP), qformer_config=dict(vocab_size=V, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, encoder_hidden_size=16, **NODROP), text_config=dict(model_type="opt", vocab_size=V, hidden_size=16, num_hidden_layers=2, ffn_dim=32, num_attention_heads=2, max_position_embeddings=S + 4, word_embed_proj_dim=16, dropout=0, attention_dropout=0), num_query_tokens=2)),
                pixel_values=normal(3, 8, 8), input_ids=ids, attention_mask=padmask, labels=lm_labels),
 "vit_gpt2": given(vit_gpt2, pixel_values=normal(3, 8, 8), labels=lm_labels),
 "donut": given(donut, pixel_values=normal(3, 16, 16), labels=lm_labels),
 "wav2vec2_bert_s2t": given(wav2vec2_bert, input_values=normal(400), labels=lm_labels),
 "speecht5_asr": given(lambda: tf.SpeechT5ForSpeechToText(tf.SpeechT5Config(vocab_size=V, hidden_size=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, conv_dim=(8, 8), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, max_speech_positions=64, max_text_positions=S + 2, hidden_dropout=0, attention_dropout=0, activation_dropout=0, feat_proj_dropout=0, speech_decoder_prenet_dropout=0, encoder_layerdrop=0, decoder_layerdrop=0, mask_time_prob=0, mask_feature_prob=0, positional_dropout=0)),
                       input_values=normal(400), labels=lm_labels),
 "vit_mae": given(lambda: tf.ViTMAEForPreTraining(tf.ViTMAEConfig(**vision(**NODROP), decoder_hidden_size=16, decoder_num_hidden_layers=1, decoder_num_attention_heads=2, decoder_intermediate_size=32, mask_ratio=0.5, norm_pix_loss=True)),
                  pixel_values=normal(3, 8, 8), noise=uniform(4)),
 "vit_hybrid": pf.img(tf.ViTHybridForImageClassification, tf.ViTHybridConfig(backbone_config=dict(model_type="bit", global_padding="same", layer_type="bottleneck", depths=[1], hidden_sizes=[16], out_features=["stage1"], embedding_dynamic_padding=True, embedding_size=8, num_groups=2), backbone_featmap_shape=[1, 16, 4, 4], image_size=16, patch_size=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, num_labels=3, **NODROP), size=16),
 "bros": given(lambda: tf.BrosForTokenClassification(tf.BrosConfig(**text(hidden_size=64, **NODROP), num_labels=3)),
               input_ids=ids, bbox=boxes, attention_mask=padmask, labels=lambda rng, n: rng.integers(0, 3, (n, S)).astype(np.int64)),
 "splinter": given(lambda: tf.SplinterForQuestionAnswering(tf.SplinterConfig(**text(**NODROP), question_token_id=5)),
                   input_ids=ids, attention_mask=padmask, start_positions=classes(S - 3), end_positions=classes(S - 3)),
 "time_series_transformer": given(lambda: tf.TimeSeriesTransformerForPrediction(tf.TimeSeriesTransformerConfig(prediction_length=4, context_length=8, lags_sequence=[1, 2, 3], num_time_features=1, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, dropout=0, attention_dropout=0, activation_dropout=0, encoder_layerdrop=0, decoder_layerdrop=0, distribution_output="normal", scaling="std")),
                                  past_values=normal(11), past_time_features=normal(11, 1), past_observed_mask=lambda rng, n: (rng.random((n, 11)) > 0.2).astype(np.float32),
                                  future_values=normal(4), future_time_features=normal(4, 1)),
 "informer": given(lambda: tf.InformerForPrediction(tf.InformerConfig(prediction_length=4, context_length=8, lags_sequence=[1, 2, 3], num_time_features=1, d_model=16, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, dropout=0, attention_dropout=0, activation_dropout=0, encoder_layerdrop=0, decoder_layerdrop=0, distribution_output="normal", scaling="mean", attention_type="full", distil=True)),
                   past_values=normal(11), past_time_features=normal(11, 1), past_observed_mask=lambda rng, n: np.ones((n, 11), np.float32),
                   future_values=normal(4), future_time_features=normal(4, 1)),
 "llava": given(lambda: tf.LlavaForConditionalGeneration(tf.LlavaConfig(vision_config=dict(model_type="clip_vision_model", **vision(**CLIPDROP)), text_config=dict(model_type="llama", vocab_size=V + 1, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=S + 8), image_token_index=V, vision_feature_layer=-1)),
                input_ids=image_token_first, pixel_values=normal(3, 8, 8), attention_mask=lambda rng, n: np.ones((n, S), np.int64), labels=lm_labels),
 "pop2piano": given(lambda: tf.Pop2PianoForConditionalGeneration(tf.Pop2PianoConfig(vocab_size=V, composer_vocab_size=2, decoder_start_token_id=0, pad_token_id=0, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1, num_heads=2, relative_attention_num_buckets=8, dropout_rate=0)),
                    input_features=normal(6, 16), labels=ids),
 "seamless_m4t_t2t": given(lambda: tf.SeamlessM4TForTextToText(tf.SeamlessM4TConfig(vocab_size=V, hidden_size=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=S + 4, pad_token_id=0, bos_token_id=2, eos_token_id=3, decoder_start_token_id=3, dropout=0, attention_dropout=0, activation_dropout=0, encoder_layerdrop=0, decoder_layerdrop=0)),
                           input_ids=ids, attention_mask=padmask, labels=lm_labels),
 "tvlt": given(lambda: tf.TvltForAudioVisualClassification(tf.TvltConfig(image_size=8, spectrogram_length=16, frequency_length=8, image_patch_size=[4, 4], audio_patch_size=[4, 4], num_frames=2, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0, attention_probs_dropout_prob=0, num_labels=3, use_mean_pooling=False, decoder_hidden_size=16, decoder_num_hidden_layers=1, decoder_num_attention_heads=2, decoder_intermediate_size=32)),
               pixel_values=normal(2, 3, 8, 8), audio_values=normal(1, 16, 8), labels=classes(3)),
}


if __name__ == "__main__":
    pf.main(MODELS, __doc__)

"""A tiny LLaVA built from the real `transformers` package (random init, no hub).

LlavaForConditionalGeneration = CLIP vision tower (class token, pre-LayerNorm,
quick_gelu MLP) -> feature layer -2 with the class token dropped ("default"
strategy) -> projector (Linear, GELU, Linear) -> masked_scatter into the Llama
token embeddings -> Llama decoder (RMSNorm, GQA, rotate-half RoPE, SwiGLU) ->
lm_head -> ForCausalLMLoss (labels un-shifted; HF pads + shifts inside).

LlavaLossForCausalLM (a LlavaForConditionalGeneration subclass) forward(input_ids, pixel_values, labels) -> scalar loss
    input_ids    [B, T] int64  image_token_id runs of image_seq_length per image
    pixel_values [N, 3, S, S] float32, all images in batch order
    labels       [B, T] int64  un-shifted (= input_ids, -100 on image tokens)

Tested with transformers==5.24.0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import torch
import torch.nn as nn

TRANSFORMERS_VERSION = "5.24.0"


@dataclass
class TinyLlavaConfig:
    vocab_size: int = 64
    image_token_id: int = 63  # vocab_size - 1
    text_dim: int = 32
    text_layers: int = 2
    text_heads: int = 4
    text_kv_heads: int = 2
    text_ffn: int = 64
    rope_theta: float = 10000.0
    image_size: int = 8
    patch_size: int = 4
    vision_dim: int = 32
    vision_layers: int = 2  # feature layer -2 = output of vision layer 0
    vision_heads: int = 4
    vision_ffn: int = 64

    @property
    def patches_per_image(self) -> int:
        # class token is dropped by vision_feature_select_strategy="default"
        return (self.image_size // self.patch_size) ** 2


def hf_config(cfg: TinyLlavaConfig):
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    vision = CLIPVisionConfig(
        hidden_size=cfg.vision_dim,
        intermediate_size=cfg.vision_ffn,
        projection_dim=cfg.vision_dim,
        num_hidden_layers=cfg.vision_layers,
        num_attention_heads=cfg.vision_heads,
        num_channels=3,
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        hidden_act="quick_gelu",  # CLIP default
        layer_norm_eps=1e-5,
    )
    text = LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.text_dim,
        intermediate_size=cfg.text_ffn,
        num_hidden_layers=cfg.text_layers,
        num_attention_heads=cfg.text_heads,
        num_key_value_heads=cfg.text_kv_heads,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        rope_theta=cfg.rope_theta,
        tie_word_embeddings=False,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=cfg.image_token_id,
        image_seq_length=cfg.patches_per_image,
        projector_hidden_act="gelu",
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        tie_word_embeddings=False,
    )
    config.use_cache = False
    config.text_config.use_cache = False
    return config


def _loss_class():
    from transformers import LlavaForConditionalGeneration

    class LlavaLossForCausalLM(LlavaForConditionalGeneration):
        """The HF model itself with forward(input_ids, pixel_values, labels) -> loss.

        Subclassing (rather than holding the model in an attribute) keeps the
        parameter names of the traced module identical to the HF state_dict
        keys (model.vision_tower..., lm_head.weight) -- no extra prefix.
        """

        def forward(self, input_ids, pixel_values, labels):
            out = super().forward(
                input_ids=input_ids,
                pixel_values=pixel_values,
                labels=labels,
                use_cache=False,
                return_dict=True,
            )
            return out.loss

    return LlavaLossForCausalLM


def build_model(cfg: TinyLlavaConfig | None = None, seed: int = 0) -> nn.Module:
    """Random-init tiny LLaVA (fixed seed); forward(input_ids, pixel_values, labels) -> loss."""
    cfg = cfg or TinyLlavaConfig()
    config = hf_config(cfg)
    torch.manual_seed(seed)
    model = _loss_class()._from_config(config, attn_implementation="sdpa")
    # HF derives loss_type from the class name ("...ForCausalLM..." matches);
    # pin it anyway: the same ForCausalLMLoss the parent class uses.
    model.loss_type = "ForCausalLM"
    return model.eval()


def make_batch(
    cfg: TinyLlavaConfig,
    batch: int = 2,
    seq_len: int = 16,
    images_per_sample: Union[int, Sequence[int]] = 1,
    seed: int = 0,
    placement="random",
):
    """{input_ids, pixel_values, labels}; same token layout as reference_vlm.make_batch.

    labels = input_ids with -100 on image tokens (HF shifts them itself, and the
    padding it adds makes the last position ignored).
    """
    from reference_vlm import VLMConfig, make_batch as ref_make_batch

    rcfg = VLMConfig(
        vocab_size=cfg.vocab_size,
        image_token_id=cfg.image_token_id,
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
    )
    b = ref_make_batch(rcfg, batch, seq_len, images_per_sample, seed, placement)
    input_ids = b["tokens"]
    labels = input_ids.clone()
    labels[input_ids == cfg.image_token_id] = -100
    return {"input_ids": input_ids, "pixel_values": b["images"], "labels": labels}


if __name__ == "__main__":
    import transformers

    print("transformers", transformers.__version__)
    cfg = TinyLlavaConfig()
    m = build_model(cfg)
    b = make_batch(cfg)
    with torch.no_grad():
        print(float(m(**b)))

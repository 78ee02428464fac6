"""Transformers from real PyTorch code: Hugging Face BERT and GPT-2 through ``Workload.from_torch``.

The models are built from a ``transformers`` configuration with random weights
(seeded; nothing is downloaded) and imported through ``torch.export`` and TVM's
Relax frontend. They need the ``torch`` extra (PyTorch and transformers), which
is imported only when a function here is called.

Each model is wrapped so that it takes one ``input_ids`` tensor of shape
(1, seq), int64, and returns the encoder's or decoder's last hidden state,
(1, seq, hidden), as one tensor. Attention uses the "eager" implementation:
explicit matmul and softmax, the graph the rewrite rules work on (the SDPA
kernel imports too, with extra masking ops).
"""

from __future__ import annotations

import functools
from typing import Any

from ..errors import WorkloadError
from ..graph import Graph
from ..workload import Workload


def _torch() -> tuple[Any, Any]:
    """``(torch, transformers)``, or a WorkloadError saying how to install them."""
    try:
        import torch
        import transformers
    except ImportError as err:
        raise WorkloadError(
            f"Hugging Face models need PyTorch and transformers ({err.name} is not installed): "
            "pip install 'gsl_eq[torch]'"
        ) from None
    return torch, transformers


@functools.cache
def _last_hidden_state_class() -> type:
    torch, _ = _torch()

    class LastHiddenState(torch.nn.Module):
        """``model(input_ids).last_hidden_state``, optionally with an all-ones attention mask."""

        def __init__(self, model: Any, full_mask: bool):
            super().__init__()
            self.model = model
            self.full_mask = full_mask

        def forward(self, input_ids: Any) -> Any:
            mask = torch.ones_like(input_ids) if self.full_mask else None
            return self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state

    return LastHiddenState


def _import(module: Any, example_inputs: tuple[Any, ...]) -> Workload:
    """``Workload.from_torch``, returning the one output tensor itself rather than TVM's 1-tuple."""
    wl = Workload.from_torch(module, example_inputs)
    graph = wl.graph
    return Workload.from_graph(Graph(graph.inputs, graph.outputs, returns_tuple=False), wl.params)


def _wrap(make_model: Any, seq: int, vocab: int, seed: int, full_mask: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Build ``make_model()`` from ``seed`` (leaving torch's global generator untouched) in eval mode,
    wrapped to return the last hidden state, and an example (1, seq) int64 ``input_ids``."""
    torch, _ = _torch()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = make_model()
        input_ids = torch.randint(0, vocab, (1, seq), dtype=torch.int64)
    return _last_hidden_state_class()(model, full_mask).eval(), (input_ids,)


def hf_bert_module(
    layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 64, seed: int = 0
) -> tuple[Any, tuple[Any, ...]]:
    """The PyTorch model behind :func:`hf_bert` and an example input: ``(module, (input_ids,))``.

    Parameters
    ----------
    layers, hidden, heads, seq, seed
        As in :func:`hf_bert`.
    """
    _, transformers = _torch()
    config = transformers.BertConfig(
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        attn_implementation="eager",
    )
    return _wrap(lambda: transformers.BertModel(config, add_pooling_layer=False), seq, config.vocab_size, seed)


def hf_bert(layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 64, seed: int = 0) -> Workload:
    """Hugging Face ``BertModel`` (Devlin et al. 2019), random weights: ``layers`` post-norm encoder layers of
    width ``hidden``, ``heads`` heads, feed-forward 4 * hidden with GELU, BERT's 30522-token vocabulary,
    no pooler. Input ``input_ids`` (1, seq) int64; output the (1, seq, hidden) last hidden state.

    The defaults (4 layers, hidden 256, 4 heads, sequence 64) import into 264 Relax bindings (op calls).

    Parameters
    ----------
    layers
        Layers.
    hidden
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    seq
        The example input's sequence length.
    seed
        The seed of the weights and the example input (PyTorch's global generator is left as it is).
    """
    return _import(*hf_bert_module(layers, hidden, heads, seq, seed))


def hf_gpt2_module(
    layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 64, seed: int = 0, ids_only: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """The PyTorch model behind :func:`hf_gpt2` and an example input: ``(module, (input_ids,))``.

    Parameters
    ----------
    layers, hidden, heads, seq, seed, ids_only
        As in :func:`hf_gpt2`.
    """
    _, transformers = _torch()
    config = transformers.GPT2Config(
        n_layer=layers, n_embd=hidden, n_head=heads, use_cache=False, attn_implementation="eager"
    )
    return _wrap(lambda: transformers.GPT2Model(config), seq, config.vocab_size, seed, full_mask=not ids_only)


def hf_gpt2(
    layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 64, seed: int = 0, ids_only: bool = False
) -> Workload:
    """Hugging Face ``GPT2Model`` (Radford et al. 2019), random weights: ``layers`` pre-norm causal decoder
    layers of width ``hidden``, ``heads`` heads, fused QKV projection (one matmul, then split), feed-forward
    4 * hidden with tanh-GELU, GPT-2's 50257-token vocabulary and 1024 positions.
    Input ``input_ids`` (1, seq) int64; output the (1, seq, hidden) last hidden state.

    By default the model is called with an all-ones attention mask. With ``ids_only`` it is
    called the usual way, ``model(input_ids=...)``: transformers then looks for packed
    sequences with a cumsum over booleans, which TVM's LLVM code generator cannot
    compile, so part of the parameter-only graph cannot be folded (see
    :attr:`Workload.unfolded`) and the module cannot be built as it is.

    Parameters
    ----------
    layers
        Layers.
    hidden
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    seq
        The example input's sequence length.
    seed
        The seed of the weights and the example input (PyTorch's global generator is left as it is).
    ids_only
        Call the model with ``input_ids`` alone, no attention mask.
    """
    return _import(*hf_gpt2_module(layers, hidden, heads, seq, seed, ids_only))


def hf_llama_module(
    layers: int = 2, hidden: int = 128, heads: int = 4, seq: int = 32, seed: int = 0
) -> tuple[Any, tuple[Any, ...]]:
    """The PyTorch model behind :func:`hf_llama` and an example input: ``(module, (input_ids,))``.

    Parameters
    ----------
    layers, hidden, heads, seq, seed
        As in :func:`hf_llama`.
    """
    _, transformers = _torch()
    config = transformers.LlamaConfig(
        num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=heads,
        intermediate_size=int(hidden * 8 / 3) // 8 * 8, vocab_size=1000, max_position_embeddings=max(seq, 128),
        use_cache=False, attn_implementation="eager",
    )
    return _wrap(lambda: transformers.LlamaModel(config), seq, config.vocab_size, seed)


def hf_llama(layers: int = 2, hidden: int = 128, heads: int = 4, seq: int = 32, seed: int = 0) -> Workload:
    """Hugging Face ``LlamaModel`` (Touvron et al. 2023), random weights, called with ids only
    (``model(input_ids=...)``): ``layers`` pre-norm decoder layers of width ``hidden`` with RMSNorm,
    rotary position embeddings, ``heads`` heads and a SwiGLU feed-forward; a 1000-token vocabulary.
    Input ``input_ids`` (1, seq) int64; output the (1, seq, hidden) last hidden state. Like
    :func:`hf_gpt2` with ``ids_only``, its parameter-only graph holds a boolean cumsum TVM cannot build.

    Parameters
    ----------
    layers
        Layers.
    hidden
        Model width; ``heads`` must divide it.
    heads
        Attention heads.
    seq
        The example input's sequence length.
    seed
        The seed of the weights and the example input (PyTorch's global generator is left as it is).
    """
    return _import(*hf_llama_module(layers, hidden, heads, seq, seed))


class _Output:
    """Wraps a Hugging Face model: keyword inputs in, its last hidden state out."""

    @staticmethod
    @functools.cache
    def module_class() -> type:
        torch, _ = _torch()

        class LastHiddenStateOf(torch.nn.Module):
            def __init__(self, model: Any, keyword: str):
                super().__init__()
                self.model, self.keyword = model, keyword

            def forward(self, inputs: Any) -> Any:
                return self.model(**{self.keyword: inputs}).last_hidden_state

        return LastHiddenStateOf


def _encoders() -> dict[str, tuple[Any, str, Any]]:
    """name -> (model maker, input keyword, example input maker), small configurations."""
    torch, t = _torch()
    ids = lambda vocab: (lambda: torch.randint(0, vocab, (1, 16), dtype=torch.int64))  # noqa: E731
    return {
        "distilbert": (lambda: t.DistilBertModel(t.DistilBertConfig(
            n_layers=2, dim=64, n_heads=4, hidden_dim=128, vocab_size=1000, attn_implementation="eager")),
            "input_ids", ids(1000)),
        "t5_encoder": (lambda: t.T5EncoderModel(t.T5Config(
            num_layers=2, d_model=64, d_kv=16, num_heads=4, d_ff=128, vocab_size=1000)),
            "input_ids", ids(1000)),
        "vit": (lambda: t.ViTModel(t.ViTConfig(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, image_size=32,
            patch_size=8, attn_implementation="eager"), add_pooling_layer=False),
            "pixel_values", lambda: torch.randn(1, 3, 32, 32)),
        "whisper_encoder": (lambda: t.WhisperModel(t.WhisperConfig(
            encoder_layers=2, decoder_layers=1, d_model=64, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32,
            attn_implementation="eager")).get_encoder(),
            "input_features", lambda: torch.randn(1, 16, 64)),
        "wav2vec2": (lambda: t.Wav2Vec2Model(t.Wav2Vec2Config(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128,
            conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4, attn_implementation="eager")),
            "input_values", lambda: torch.randn(1, 800)),
    }


HF_ENCODERS = ("distilbert", "t5_encoder", "vit", "whisper_encoder", "wav2vec2")
"""The names :func:`hf_encoder` builds."""


def hf_encoder_module(name: str, seed: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """The PyTorch model behind :func:`hf_encoder` and an example input: ``(module, (input,))``.

    Parameters
    ----------
    name, seed
        As in :func:`hf_encoder`.

    Raises
    ------
    WorkloadError
        An unknown ``name``.
    """
    torch, _ = _torch()
    encoders = _encoders()
    if name not in encoders:
        raise WorkloadError(f"unknown Hugging Face encoder {name!r}; choose one of {', '.join(HF_ENCODERS)}")
    make_model, keyword, make_input = encoders[name]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = make_model()
        example = make_input()
    return _Output.module_class()(model, keyword).eval(), (example,)


def hf_encoder(name: str, seed: int = 0) -> Workload:
    """A small Hugging Face encoder with random weights, called the usual way, its last hidden
    state out: ``"distilbert"``, ``"t5_encoder"`` (token ids), ``"vit"`` (a 32 x 32 image),
    ``"whisper_encoder"`` (16 mel bins x 64 frames), ``"wav2vec2"`` (800 audio samples).
    Two layers of width 64 each: for tests that every architecture imports and optimizes.

    Parameters
    ----------
    name
        One of :data:`HF_ENCODERS`.
    seed
        The seed of the weights and the example input.

    Raises
    ------
    WorkloadError
        An unknown ``name``.
    """
    return _import(*hf_encoder_module(name, seed))

"""Models for tests, demos and benchmarks, each a function returning a Workload."""

from .blocks import (
    ac_sum,
    bert_encoder,
    diamond_conv,
    inception_block,
    inception_network,
    polynomial,
    resnet_bottleneck,
    transformer_encoder_layer,
)
from .hf import (
    HF_ENCODERS, hf_bert, hf_bert_module, hf_encoder, hf_encoder_module, hf_gpt2, hf_gpt2_module, hf_llama,
    hf_llama_module,
)
from .tensat import (
    TENSAT_MODELS, load_taso_model, tensat_bert, tensat_inception_v3, tensat_model, tensat_nasnet_a, tensat_nasrnn,
    tensat_resnext50, tensat_squeezenet, tensat_vgg19,
)
from .zoo import ZOO, bert, inception_v3, mobilenet_v2, nasnet_a, nasrnn, resnet50, resnext50, squeezenet, vgg19, zoo_model

__all__ = [
    "HF_ENCODERS", "ZOO", "ac_sum", "bert", "bert_encoder", "diamond_conv", "hf_bert", "hf_bert_module", "hf_encoder", "hf_encoder_module", "hf_gpt2", "hf_gpt2_module", "hf_llama", "hf_llama_module",
    "inception_block", "inception_network", "inception_v3", "mobilenet_v2", "nasnet_a", "nasrnn", "polynomial", "resnet50", "resnet_bottleneck",
    "resnext50", "squeezenet", "transformer_encoder_layer", "vgg19", "zoo_model",
    "TENSAT_MODELS", "load_taso_model", "tensat_bert", "tensat_inception_v3", "tensat_model", "tensat_nasnet_a",
    "tensat_nasrnn", "tensat_resnext50", "tensat_squeezenet", "tensat_vgg19",
]

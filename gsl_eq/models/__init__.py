"""Models for tests, demos and benchmarks, each a function returning a Workload."""

from .blocks import (
    bert_encoder,
    diamond_conv,
    inception_block,
    inception_network,
    resnet_bottleneck,
    transformer_encoder_layer,
)

__all__ = [
    "bert_encoder", "diamond_conv", "inception_block", "inception_network", "resnet_bottleneck",
    "transformer_encoder_layer",
]

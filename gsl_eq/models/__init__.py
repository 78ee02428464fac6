"""Models for tests, demos and benchmarks, each a function returning a Workload."""

from .blocks import diamond_conv, inception_block, resnet_bottleneck, transformer_encoder_layer

__all__ = ["diamond_conv", "inception_block", "resnet_bottleneck", "transformer_encoder_layer"]

"""Three small PyTorch CNNs written here (no torchvision), for the benchmarks' PyTorch-exported route:
models as a user has them, exported with ``torch.export`` and imported by TVM's frontend.

- ``resnet18_like``: ResNet-18's layout (stem 7x7/2 conv, BN, ReLU, 3x3/2 max pool; four stages of two
  BasicBlocks, 64-512 channels, 1x1 strided downsample shortcuts; global average pool, Linear to 1000).
- ``mobilenet_v3_like``: MobileNet-V3-Small's (hard-swish stem; eleven inverted residual blocks of 1x1
  expand, depthwise 3x3 or 5x5, squeeze-excitation, 1x1 project, residual add where shapes allow;
  ReLU in the first blocks, hard-swish after, as in the paper; 1x1 conv, pool, two-layer classifier).
- ``shufflenet_v2_like``: ShuffleNet-V2 x0.5's (channel split, a 1x1 / depthwise 3x3 / 1x1 branch,
  concat, channel shuffle by reshape, transpose, reshape; stride-2 units with both branches; three
  stages, conv5, global pool, fc).

Weights are random (``torch.manual_seed``), batch norms carry random running statistics (so folding
them is not a no-op), and every module is in evaluation mode.

    model, x = exported("resnet18_like", size=96)   # x: 1x3x96x96
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

SEED = 0


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: nn.Module | None = None) -> nn.Sequential:
    """A conv without bias, its batch norm, and ``act`` after them if given."""
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act] if act is not None else []))


# --- ResNet-18 ------------------------------------------------------------------------------------
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride, act=nn.ReLU()), conv_bn(cout, cout, 3))
        self.shortcut = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet18Like(nn.Module):
    def __init__(self, widths=(64, 128, 256, 512), classes: int = 1000):
        super().__init__()
        layers = [conv_bn(3, widths[0], 7, 2, act=nn.ReLU()), nn.MaxPool2d(3, 2, 1)]
        cin = widths[0]
        for stage, width in enumerate(widths):
            layers += [BasicBlock(cin, width, 1 if stage == 0 else 2), BasicBlock(width, width, 1)]
            cin = width
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


# --- MobileNet-V3-Small ---------------------------------------------------------------------------
def _divisible(v: float, d: int = 8) -> int:
    return max(d, int(v + d / 2) // d * d)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        squeezed = _divisible(channels / 4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce, self.expand = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)
        self.relu, self.gate = nn.ReLU(), nn.Hardsigmoid()

    def forward(self, x):
        return x * self.gate(self.expand(self.relu(self.reduce(self.pool(x)))))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, kernel: int, expanded: int, cout: int, se: bool, act: Callable[[], nn.Module],
                 stride: int):
        super().__init__()
        layers = [conv_bn(cin, expanded, 1, act=act())] if expanded != cin else []
        layers.append(conv_bn(expanded, expanded, kernel, stride, groups=expanded, act=act()))
        if se:
            layers.append(SqueezeExcite(expanded))
        layers.append(conv_bn(expanded, cout, 1))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


#: MobileNet-V3-Small's blocks: input channels, kernel, expanded channels, output channels, SE, activation, stride.
SMALL = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
         (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
         (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
         (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1)]


class MobileNetV3Like(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        acts = {"RE": nn.ReLU, "HS": nn.Hardswish}
        layers = [conv_bn(3, 16, 3, 2, act=nn.Hardswish())]
        layers += [InvertedResidual(cin, k, e, cout, se, acts[a], s) for cin, k, e, cout, se, a, s in SMALL]
        layers.append(conv_bn(96, 576, 1, act=nn.Hardswish()))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Linear(1024, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


# --- ShuffleNet-V2 x0.5 ---------------------------------------------------------------------------
def channel_shuffle(x, groups: int = 2):
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class ShuffleUnit(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.stride = stride
        branch = cout // 2
        first = cin if stride == 2 else branch
        self.branch2 = nn.Sequential(conv_bn(first, branch, 1, act=nn.ReLU()),
                                     conv_bn(branch, branch, 3, stride, groups=branch),
                                     conv_bn(branch, branch, 1, act=nn.ReLU()))
        if stride == 2:
            self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, groups=cin),
                                         conv_bn(cin, branch, 1, act=nn.ReLU()))

    def forward(self, x):
        if self.stride == 1:
            left, right = x.chunk(2, dim=1)
            out = torch.cat((left, self.branch2(right)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out)


class ShuffleNetV2Like(nn.Module):
    def __init__(self, widths=(24, 48, 96, 192, 1024), repeats=(4, 8, 4), classes: int = 1000):
        super().__init__()
        layers = [conv_bn(3, widths[0], 3, 2, act=nn.ReLU()), nn.MaxPool2d(3, 2, 1)]
        cin = widths[0]
        for width, repeat in zip(widths[1:4], repeats):
            layers += [ShuffleUnit(cin, width, 2), *[ShuffleUnit(width, width, 1) for _ in range(repeat - 1)]]
            cin = width
        layers.append(conv_bn(cin, widths[4], 1, act=nn.ReLU()))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(widths[4], classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "resnet18_like": ResNet18Like, "mobilenet_v3_like": MobileNetV3Like, "shufflenet_v2_like": ShuffleNetV2Like,
}


def exported(name: str, size: int = 96) -> tuple[nn.Module, torch.Tensor]:
    """Model ``name`` with random weights in evaluation mode, and a random 1x3x``size``x``size`` input."""
    torch.manual_seed(SEED)
    model = random_batch_norms(MODELS[name]())
    return model.eval(), torch.rand(1, 3, size, size) * 2 - 1


def random_batch_norms(model: nn.Module) -> nn.Module:
    """``model`` with every batch norm's scale, shift and running statistics drawn at random (the defaults,
    mean 0 and variance 1, would make folding a batch norm into its conv test almost nothing)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model

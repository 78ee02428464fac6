"""Small PyTorch models as users export them (torch.export, torch.onnx.export), for the importer and pass tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def cnn():
    """A CNN with batch norms, a residual add and two parallel 1x1 convs of one input; and its input."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = torch.nn.BatchNorm2d(8)
            self.left = torch.nn.Conv2d(8, 8, 1, bias=False)
            self.right = torch.nn.Conv2d(8, 8, 1, bias=False)
            self.bn2 = torch.nn.BatchNorm2d(8)

        def forward(self, x):
            y = torch.relu(self.bn(self.stem(x)))
            return torch.relu(self.bn2(self.left(y) + self.right(y)) + y)

    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():  # batch norms with statistics of their own, not the identity they start as
        for bn in (net.bn, net.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return net, (torch.randn(1, 3, 16, 16),)


def attention():
    """One attention block (separate query, key and value projections, softmax, output projection, a
    residual add and a layer norm); and its input."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self, hidden=32, heads=2):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v = (torch.nn.Linear(hidden, hidden) for _ in range(3))
            self.out = torch.nn.Linear(hidden, hidden)
            self.norm = torch.nn.LayerNorm(hidden)

        def forward(self, x):
            b, s, h = x.shape
            split = lambda t: t.reshape(b, s, self.heads, h // self.heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            weights = torch.softmax(q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5, dim=-1)
            y = (weights @ v).transpose(1, 2).reshape(b, s, h)
            return self.norm(x + self.out(y))

    torch.manual_seed(1)
    return Block().eval(), (torch.randn(1, 8, 32),)


def onnx_file(model, inputs, path: Path, dynamic_batch: bool = False, fold: bool = False) -> Path:
    """``model`` exported to ONNX at ``path`` (inputs x0, x1...), by the TorchScript exporter, which
    runs offline; ``fold=False`` keeps batch norms as nodes of their own."""
    import torch

    names = [f"x{k}" for k in range(len(inputs))]
    axes = {name: {0: "batch"} for name in names} if dynamic_batch else None
    torch.onnx.export(model, tuple(inputs), str(path), dynamo=False, input_names=names, dynamic_axes=axes,
                      do_constant_folding=fold)
    return path


def onnxruntime_outputs(path: Path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """What onnxruntime computes for the file on ``inputs``: the independent reference."""
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, inputs)

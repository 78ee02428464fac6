"""The ``gpu`` cost model: seconds a graph runs as kernels on a GPU, described by a device preset.

What a graph costs on a GPU is decided less by its FLOPs than by how many kernels it launches and
how many bytes they move. This model prices a graph the way TASO's measured cost model and TVM's
FuseOps see it:

- every kernel costs its roofline time, ``max(flops / peak_flops, bytes / bandwidth)``, plus a
  fixed ``launch`` time: a small kernel costs its launch;
- an element-wise or broadcast op (relu, add of a bias, ...) reading the output of the kernel
  before it, when that output has no other reader, is an *epilogue*: it runs inside that kernel
  (TASO's fused activation, FuseOps' fusion), adding its FLOPs and the bytes of its other inputs,
  but neither a launch nor a round trip of the tensor through memory;
- views (reshape, squeeze, expand_dims, flatten) and splits are free: their readers read the
  parts in place, as in TASO;
- everything computed from the parameters alone was folded before pricing, and costs nothing.

Whole graphs, by :meth:`GPU.graph_cost`, apply these rules. Extraction needs a price per e-node
that does not depend on which e-nodes feed it, and in an e-graph an element-wise op's input class
holds its producer and every equal form (a part of a split among them), so a single call
(:meth:`GPU.__call__`) is priced as a kernel of its own, as in a graph without fusion: extraction
ranks first the forms with fewer kernels, element-wise ones included (``relu`` inside a merged
matmul before ``relu`` on each part of its split, where only the first fuses). ``optimize``
reports costs by :meth:`GPU.graph_cost` and keeps the input when the extracted graph is not
cheaper by it. (Pricing an element-wise call as an epilogue for extraction chose graphs whose
element-wise ops read split parts, each really a kernel: on three (64, 1024) x (1024, 1024)
matmuls with a relu each, a graph dearer than the input.)

Presets (:data:`DEVICES`) describe the devices as measured, not as tuned to make any rewrite pay:
FP32 throughput a large GEMM reaches (no tensor cores, as TASO's FP32 graphs), the bandwidth a
streaming copy reaches, and the time a launch of an empty kernel takes from a framework.

    optimize(wl, rules.tensat(), cost="gpu")          # V100
    optimize(wl, rules.tensat(), cost=GPU("a100"))
    GPU().kernel_seconds("relax.nn.relu", {}, [t], t)  # one kernel alone: at least its launch
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from ..frontend.spec import OpTrait, ops_with_trait
from ..graph import Graph, Kind, Node
from ..graph.types import TensorType, Type
from .work import _nbytes, op_bytes, op_flops

__all__ = ["DEVICES", "Device", "GPU"]


@dataclass(frozen=True)
class Device:
    """What the model knows of a GPU: FP32 FLOP/s, DRAM bytes/s, and seconds per kernel launch."""

    name: str
    peak_flops: float
    bandwidth: float
    launch: float

    def __post_init__(self) -> None:
        if self.peak_flops <= 0 or self.bandwidth <= 0 or self.launch < 0:
            raise ValueError(f"a device needs peak_flops > 0, bandwidth > 0 and launch >= 0, got {self}")


#: NVIDIA V100 (SXM2, 16 GB; TASO's and TENSAT's GPU): 15.7 TFLOP/s FP32 and 900 GB/s of HBM2 on
#: paper; about 14 TFLOP/s in a large SGEMM and 800 GB/s in a copy; 5 us from a launch to the end
#: of an empty kernel. A100 (SXM4, 40 GB): 19.5 TFLOP/s FP32 (TF32 off), 1,555 GB/s on paper;
#: about 18 TFLOP/s, 1,300 GB/s and 4 us as measured.
DEVICES: dict[str, Device] = {
    "v100": Device("V100", peak_flops=14e12, bandwidth=800e9, launch=5e-6),
    "a100": Device("A100", peak_flops=18e12, bandwidth=1300e9, launch=4e-6),
}

#: Ops that only reinterpret or partition a buffer: no kernel (TASO's split is an offset).
FREE_OPS = frozenset("relax." + n for n in ("reshape", "squeeze", "expand_dims", "flatten", "nn.batch_flatten",
                                             "split"))
#: Ops that can run as the epilogue of the kernel producing one of their inputs.
EPILOGUE_OPS = frozenset(ops_with_trait(OpTrait.ELEMENT_WISE) + ops_with_trait(OpTrait.BROADCASTING))
#: TASO's fusion, for comparison (``fusion="activations"``): its conv, matmul and pooling carry an
#: activation (relu, sigmoid, tanh); every other element-wise op is a kernel.
TASO_ACTIVATIONS = frozenset("relax." + n for n in ("nn.relu", "sigmoid", "tanh"))
TASO_ANCHORS = frozenset("relax." + n for n in ("nn.conv2d", "matmul", "nn.max_pool2d", "nn.avg_pool2d"))
FUSIONS = ("epilogues", "activations", "none")


class GPU:
    """Seconds on a GPU (:data:`DEVICES` by name, V100 by default, or a :class:`Device`), kernels
    priced by their roofline time plus a launch, element-wise epilogues fused, views and splits
    free; extraction prices each call as a kernel of its own (see the module's docstring).
    ``fusion="activations"`` fuses as TASO does instead: only a relu, sigmoid or tanh right after
    a conv, matmul or pooling (what TASO's model would charge, for comparison), ``fusion="none"``
    nothing (every call a kernel).

    >>> GPU().device.name, GPU("a100").device.name
    ('V100', 'A100')
    """

    name = "gpu"
    unit = "s"

    def __init__(self, device: str | Device = "v100", fusion: str = "epilogues"):
        if isinstance(device, str):
            if device.lower() not in DEVICES:
                raise ValueError(f"unknown device {device!r}; the presets are {', '.join(DEVICES)} "
                                 f"(or pass a gsl_eq.extract.Device)")
            device = DEVICES[device.lower()]
        if not isinstance(device, Device):
            raise ValueError(f"{device!r} is not a device; pass a preset name ({', '.join(DEVICES)}) or a Device")
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        self.device = device
        #: "epilogues": any element-wise op into the kernel before it (TVM's FuseOps); "activations":
        #: only an activation into a conv, matmul or pooling (TASO's fused activation); "none": every
        #: call a kernel (a TASO graph whose activations are ops of their own, before its rules fuse them).
        self.fusion = fusion

    # --- one call, for extraction -----------------------------------------------------------
    def __call__(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        return 0.0 if op in FREE_OPS else self.kernel_seconds(op, attrs, inputs, output)

    def kernel_seconds(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        """One call run as a kernel of its own: its roofline time plus a launch."""
        d = self.device
        compute = op_flops(op, attrs, inputs, output) / d.peak_flops
        memory = op_bytes(op, attrs, inputs, output) / d.bandwidth
        return max(compute, memory) + d.launch

    def epilogue_seconds(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type,
                         fused: int | Collection[int]) -> float:
        """One call run inside the kernel producing its input ``fused`` (an index, or every index
        that reads that tensor): its FLOPs and the bytes of its other inputs, no launch and no round
        trip of the fused tensor."""
        d = self.device
        fused = {fused} if isinstance(fused, int) else set(fused)
        others = [t for i, t in enumerate(inputs) if i not in fused]
        return op_flops(op, attrs, inputs, output) / d.peak_flops + _nbytes(others) / d.bandwidth

    # --- a whole graph ---------------------------------------------------------------------
    def graph_cost(self, graph: Graph) -> float:
        """Seconds of ``graph``'s kernels: an epilogue is fused only into a kernel whose output it
        alone reads (a graph output is read by the caller too)."""
        readers: dict[Node, int] = {}  # distinct readers: add(a, a) is a's one reader
        for node in graph.rpo():
            for i in set(node.inputs):
                readers[i] = readers.get(i, 0) + 1
        for out in graph.outputs:
            readers[out] = readers.get(out, 0) + 1
        kernels: set[Node] = set()  # calls whose output a kernel writes, open to an epilogue
        total = 0.0
        for node in graph.rpo():
            if node.kind is not Kind.CALL or node.op in FREE_OPS:
                continue
            inputs = [i.type for i in node.inputs]
            fused = _fusion_input(node.op, inputs, node.type,
                                  lambda k: node.inputs[k] in kernels and readers[node.inputs[k]] == 1)
            if self.fusion == "none" or self.fusion == "activations" and fused is not None and not (
                    node.op in TASO_ACTIVATIONS and node.inputs[fused].op in TASO_ANCHORS):
                fused = None
            if fused is not None:
                total += self.epilogue_seconds(node.op, node.attrs, inputs, node.type,
                                               [k for k, i in enumerate(node.inputs) if i is node.inputs[fused]])
            else:
                total += self.kernel_seconds(node.op, node.attrs, inputs, node.type)
            if isinstance(node.type, TensorType) and (self.fusion == "epilogues" or fused is None):
                kernels.add(node)
        return total

    def __repr__(self) -> str:
        d = self.device
        return (f"GPU({d.name}: {d.peak_flops:g} FLOP/s, {d.bandwidth:g} B/s, launch {d.launch:g} s"
                + ("" if self.fusion == "epilogues" else f", fusion={self.fusion!r}") + ")")


def _fusion_input(op: str, inputs: Sequence[Type], output: Type, open_kernel: Callable[[int], bool]) -> int | None:
    """The input of an element-wise or broadcast call whose kernel it can run in: the first shaped
    and typed like its output that ``open_kernel(index)`` accepts; None for other calls."""
    if op not in EPILOGUE_OPS or not isinstance(output, TensorType):
        return None
    for k, t in enumerate(inputs):
        if isinstance(t, TensorType) and t.shape == output.shape and t.dtype == output.dtype and open_kernel(k):
            return k
    return None

"""The ``gpu`` cost model: seconds a graph runs as kernels on a GPU, described by a device preset.

What a graph costs on a GPU is decided less by its FLOPs than by how many kernels it launches and
how many bytes they move. This model prices a graph the way TASO's measured cost model and TVM's
FuseOps see it:

- every kernel costs its roofline time, ``max(flops / (peak_flops * occupancy), bytes / bandwidth)``,
  plus a fixed ``launch`` time: a small kernel costs its launch;
- a kernel computes at the device's peak only when its threads fill it: with one thread per output
  element, a kernel of fewer outputs than the device holds resident threads (``resident_threads``:
  a V100's 80 SMs x 2,048) computes at ``occupancy = outputs / resident_threads`` of its peak. A
  batch-1 conv of 7 x 7 x 192 outputs fills 6 % of a V100, which is why TASO's measured costs make
  small convs dear and merged ones pay. A matmul's reduction is split over up to a warp (32
  threads) per output, as cuBLAS's GEMV and split-K kernels do, so a GEMV of 1,024 outputs is bound
  by reading its weight. Bandwidth is not scaled: far fewer threads keep the memory busy;
- an element-wise or broadcast op (relu, add of a bias, ...) reading the output of the kernel
  before it, when that output has no other reader, is an *epilogue*: it runs inside that kernel
  (TASO's fused activation, FuseOps' fusion), adding its FLOPs and the bytes of its other inputs,
  but neither a launch nor a round trip of the tensor through memory;
- an element-wise op that does not take an epilogue (it reads tensors from memory: parts of a
  split, a tensor read twice) is a *prologue* of its one element-wise reader: it runs inside that
  reader's kernel, so a tree of element-wise ops is one kernel, as FuseOps builds it; a kernel
  holds one conv or matmul at most (two matmuls feeding an add stay two kernels, as in FuseOps);
- views (reshape, squeeze, expand_dims, flatten) and splits are free: their readers read the
  parts in place, as in TASO;
- everything computed from the parameters alone was folded before pricing, and costs nothing.

Whole graphs, by :func:`~gsl_eq.cost.model.graph_cost`, apply these rules, and so does
extraction: a call alone (:meth:`GPU.__call__`) is priced as a kernel of its own, and each call's
e-node also says whether its kernel takes epilogues (:meth:`GPU.opens_kernel`), what it saves
inside the kernel of each input (:meth:`GPU.epilogue_saving`) and inside its reader's
(:meth:`GPU.prologue_saving`). The exact extractor chooses forms and fusions together
(:mod:`gsl_eq.extract.fusion`): an element-wise op costs its kernel or nothing much depending on
what is chosen below it and on who else reads that, and the extracted graph costs what
:func:`~gsl_eq.cost.model.graph_cost` charges it. (Pricing each call as a kernel, extraction
ranked first the forms with fewer element-wise calls even where those calls were free
epilogues: on TENSAT's NasRNN and NasNet-A it chose dearer graphs.)

Presets (:data:`DEVICES`) describe the devices as measured, not as tuned to make any rewrite pay:
FP32 throughput a large GEMM reaches (no tensor cores, as TASO's FP32 graphs), the bandwidth a
streaming copy reaches, and the time a launch of an empty kernel takes from a framework.

    optimize(wl, rules.tensat(), cost="gpu")          # V100
    optimize(wl, rules.tensat(), cost=GPU("a100"))
    GPU().kernel_seconds("relax.nn.relu", {}, [t], t)  # one kernel alone: at least its launch
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

from ..frontend.spec import OpTrait, ops_with_trait
from ..graph.types import TensorType, Type
from ..graph.work import _elements, _nbytes, op_bytes, op_flops

__all__ = ["DEVICES", "Device", "GPU"]


@dataclass(frozen=True)
class Device:
    """What the model knows of a GPU: FP32 FLOP/s, DRAM bytes/s, seconds per kernel launch, and
    the threads it holds resident (SMs x threads per SM; ``None``: any kernel fills it, a plain
    roofline).

    Parameters
    ----------
    name
        The device's name, for reports.
    peak_flops
        FP32 FLOP/s a large GEMM reaches; above 0.
    bandwidth
        DRAM bytes/s a streaming copy reaches; above 0.
    launch
        Seconds from a kernel's launch to its end, for an empty kernel; at least 0.
    resident_threads
        Threads resident at once (SMs x threads per SM), above 0; None: no occupancy limit.

    Raises
    ------
    ValueError
        A value out of those ranges.

    Examples
    --------
    ::

        mine = Device("mine", peak_flops=30e12, bandwidth=2e12, launch=4e-6, resident_threads=100 * 2048)
        optimize(wl, rules.tensat(), cost=GPU(mine))
    """

    name: str
    peak_flops: float
    bandwidth: float
    launch: float
    resident_threads: int | None = None

    def __post_init__(self) -> None:
        if self.peak_flops <= 0 or self.bandwidth <= 0 or self.launch < 0:
            raise ValueError(f"a device needs peak_flops > 0, bandwidth > 0 and launch >= 0, got {self}")
        if self.resident_threads is not None and self.resident_threads <= 0:
            raise ValueError(f"a device needs resident_threads > 0 (or None), got {self}")


#: NVIDIA V100 (SXM2, 16 GB; TASO's and TENSAT's GPU): 15.7 TFLOP/s FP32 and 900 GB/s of HBM2 on
#: paper; about 14 TFLOP/s in a large SGEMM and 800 GB/s in a copy; 5 us from a launch to the end
#: of an empty kernel; 80 SMs of 2,048 resident threads. A100 (SXM4, 40 GB): 19.5 TFLOP/s FP32
#: (TF32 off), 1,555 GB/s on paper; about 18 TFLOP/s, 1,300 GB/s and 4 us as measured; 108 SMs of
#: 2,048 threads. H200 (SXM, 141 GB) from its published figures alone, none measured: 67 TFLOP/s FP32,
#: 4.8 TB/s of HBM3e, 132 SMs of 2,048 threads; NVIDIA publishes no launch time, so the A100's is kept.
DEVICES: dict[str, Device] = {
    "v100": Device("V100", peak_flops=14e12, bandwidth=800e9, launch=5e-6, resident_threads=80 * 2048),
    "a100": Device("A100", peak_flops=18e12, bandwidth=1300e9, launch=4e-6, resident_threads=108 * 2048),
    "h200": Device("H200", peak_flops=67e12, bandwidth=4.8e12, launch=4e-6, resident_threads=132 * 2048),
}
#: Threads a library spreads one output's reduction over when a matmul's outputs alone cannot fill
#: the device (a warp: cuBLAS's GEMV and split-K kernels).
WARP = 32

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
    free, in whole graphs and in extraction alike (see the module's docstring).
    ``fusion="activations"`` fuses as TASO does instead: only a relu, sigmoid or tanh right after
    a conv, matmul or pooling (what TASO's model would charge, for comparison), ``fusion="none"``
    nothing (every call a kernel).

    Parameters
    ----------
    device
        A preset's name in :data:`DEVICES` (``"v100"``, ``"a100"``, ``"h200"``, any case) or a
        :class:`Device`.
    fusion
        ``"epilogues"``, ``"activations"`` or ``"none"``.

    Raises
    ------
    ValueError
        An unknown preset or fusion, or a ``device`` that is neither.

    Examples
    --------
    >>> GPU().device.name, GPU("a100").device.name
    ('V100', 'A100')
    """

    name = "gpu"
    unit = "s"

    def __init__(self, device: str | Device = "v100", fusion: str = "epilogues"):
        if isinstance(device, str):
            if device.lower() not in DEVICES:
                raise ValueError(f"unknown device {device!r}; the presets are {', '.join(DEVICES)} "
                                 f"(or pass a gsl_eq.cost.Device)")
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
        """One call run as a kernel of its own: its roofline time plus a launch.

        Parameters
        ----------
        op, attrs, inputs, output
            As in :meth:`~gsl_eq.cost.model.CostModel.__call__`.
        """
        d = self.device
        memory = op_bytes(op, attrs, inputs, output) / d.bandwidth
        return max(self.compute_seconds(op, attrs, inputs, output), memory) + d.launch

    def compute_seconds(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        """Seconds of arithmetic: the call's FLOPs at the peak its threads reach, one thread per
        output element (up to a warp per output of a matmul), at most the device's resident threads.

        >>> gemv = GPU().compute_seconds("relax.matmul", {}, [TensorType((1, 1024), "float32"),
        ...                              TensorType((1024, 1024), "float32")], TensorType((1, 1024), "float32"))
        >>> round(gemv * 1e6, 2)  # 2 MFLOP at a fifth of 14 TFLOP/s: below its 4 MB read (5.2 us)
        0.75
        """
        d = self.device
        flops = op_flops(op, attrs, inputs, output)
        if d.resident_threads is None or not flops or not isinstance(output, TensorType):
            return flops / d.peak_flops
        threads = _elements(output)
        if op == "relax.matmul" and isinstance(inputs[0], TensorType) and inputs[0].shape:
            threads *= min(WARP, inputs[0].shape[-1])
        return flops / (d.peak_flops * min(1.0, threads / d.resident_threads))

    def epilogue_seconds(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type,
                         fused: int | Collection[int]) -> float:
        """One call run inside the kernel producing its input ``fused`` (an index, or every index
        that reads that tensor): its FLOPs and the bytes of its other inputs, no launch and no round
        trip of the fused tensor."""
        d = self.device
        fused = {fused} if isinstance(fused, int) else set(fused)
        others = [t for i, t in enumerate(inputs) if i not in fused]
        return self.compute_seconds(op, attrs, inputs, output) + _nbytes(others) / d.bandwidth

    # --- fusion, for whole graphs and for extraction ------------------------------------------
    def opens_kernel(self, op: str, output: Type) -> bool:
        """Whether a call of ``op`` writes a kernel an epilogue can join: any kernel writing a
        tensor (an epilogue's too: epilogues chain), or under ``fusion="activations"`` a conv,
        matmul or pooling."""
        if self.fusion == "none" or op in FREE_OPS or not isinstance(output, TensorType):
            return False
        return self.fusion == "epilogues" or op in TASO_ANCHORS

    def epilogue_saving(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type,
                        fused: Collection[int]) -> float:
        """Seconds saved when this call runs inside the kernel producing its inputs ``fused`` (the
        positions reading that one tensor) instead of as a kernel of its own: 0 when it cannot (not
        an element-wise or broadcast op, that tensor not shaped and typed like its output, or not
        an activation under ``fusion="activations"``)."""
        if (self.fusion == "none" or op not in EPILOGUE_OPS or not isinstance(output, TensorType)
                or self.fusion == "activations" and op not in TASO_ACTIVATIONS):
            return 0.0
        if not fused or not all(isinstance(inputs[k], TensorType) and inputs[k].shape == output.shape
                                and inputs[k].dtype == output.dtype for k in fused):
            return 0.0
        return max(0.0, self.kernel_seconds(op, attrs, inputs, output)
                   - self.epilogue_seconds(op, attrs, inputs, output, fused))

    def prologue_saving(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        """Seconds saved when this call runs inside the kernel of its one reader (an element-wise
        op reading its output in place) instead of as a kernel of its own: its launch and the
        round trip of its output; 0 unless an element-wise or broadcast op under ``fusion="epilogues"``.
        (TVM's FuseOps fuses a tree of element-wise ops into one kernel; a tree with a conv or
        matmul in it takes this one anchor only: an op fused so takes no epilogue itself.)"""
        if self.fusion != "epilogues" or op not in EPILOGUE_OPS or not isinstance(output, TensorType):
            return 0.0
        return max(0.0, self.kernel_seconds(op, attrs, inputs, output)
                   - self.epilogue_seconds(op, attrs, inputs, output, ()))

    def __repr__(self) -> str:
        d = self.device
        return (f"GPU({d.name}: {d.peak_flops:g} FLOP/s, {d.bandwidth:g} B/s, launch {d.launch:g} s"
                + ("" if d.resident_threads is None else f", {d.resident_threads:,} threads")
                + ("" if self.fusion == "epilogues" else f", fusion={self.fusion!r}") + ")")


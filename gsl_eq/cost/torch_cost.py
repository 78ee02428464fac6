"""The ``gpu-measured`` cost model: the ``gpu`` model with every kernel timed on the device.

TASO prices a graph by running each of its ops alone on the GPU (cuDNN, cuBLAS) and adding the
times. :class:`MeasuredGPU` does the same with PyTorch: a call that runs as a kernel of its own
costs its time measured on ``torch_device`` (a CUDA GPU by default; launch included, the calls
queued back to back between two synchronizations, the fastest of a few rounds), remembered in
an on-disk cache for that device. Everything the ``gpu`` model decides besides stays its own:
element-wise epilogues fused into the kernel before them (what an epilogue adds there, which
no op alone can show, priced by the device preset's roofline), views and splits free.

It needs PyTorch (the ``torch`` extra) and, by default, a CUDA GPU; ``torch_device="cpu"`` times
the ops on this machine's processor instead (the same machinery, another device).

    optimize(wl, rules.tensat(), cost="gpu-measured")               # on a machine with a CUDA GPU
    optimize(wl, rules.tensat(), cost=MeasuredGPU(torch_device="cpu"))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..measure.disk_cache import default_cache_dir
from ..graph.types import TensorType, TupleType, Type
from .gpu_cost import GPU, Device
from .timings import MeasuredTimes, TimedCalls, call_key, call_name, random_input

__all__ = ["MeasuredGPU"]


class MeasuredGPU(GPU, TimedCalls):
    """The :class:`~gsl_eq.cost.gpu_cost.GPU` model (``device``, ``fusion``) with each kernel's
    time measured with PyTorch on ``torch_device``: ``rounds`` rounds of about ``round_seconds``
    each, the fastest kept, cached in ``<cache_dir>/gpu_measured.json`` by device, PyTorch
    version, op, attributes and input types. A call PyTorch cannot run (an op with no form in
    :mod:`gsl_eq.workload.torch_ops`) is charged the analytic model's price, with a warning (``failures``).

    Parameters
    ----------
    device, fusion
        As in :class:`~gsl_eq.cost.gpu_cost.GPU`: the preset that prices epilogues, and the fusion.
    torch_device
        The PyTorch device the kernels are timed on (``"cuda"``, ``"cuda:1"``, ``"cpu"``).
    cache_dir
        The folder of the cache file; None: the default cache folder.
    rounds
        Rounds of timing; the fastest is kept.
    round_seconds
        About how long one round runs.
    seed
        The seed of the random inputs.

    Raises
    ------
    ValueError
        PyTorch is not installed, or ``torch_device`` is a CUDA device and PyTorch sees none.

    Examples
    --------
    On a CUDA GPU (``torch_device="cpu"`` anywhere)::

        model = MeasuredGPU()
        t = TensorType((1, 64, 56, 56), "float32")
        model.kernel_seconds("relax.nn.relu", {}, [t], t)   # seconds, measured once, then from the cache
    """

    name = "gpu-measured"
    CACHE_FILE = "gpu_measured.json"
    _FORMAT = 1

    def __init__(self, device: str | Device = "v100", fusion: str = "epilogues", torch_device: str = "cuda",
                 cache_dir: str | os.PathLike[str] | None = None, rounds: int = 3, round_seconds: float = 0.01,
                 seed: int = 0):
        super().__init__(device, fusion)
        try:
            import torch
        except ImportError:
            raise ValueError("the gpu-measured cost model times ops with PyTorch, which is not installed "
                             "(pip install 'gsl_eq[torch]'); cost='gpu' is the analytic model") from None
        self.torch_device = torch.device(torch_device)
        if self.torch_device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"the gpu-measured cost model times ops on {torch_device}, but PyTorch sees no CUDA GPU "
                             f"here (torch {torch.__version__}, torch.cuda.is_available() is False); use cost='gpu' "
                             f"(the analytic model) or MeasuredGPU(torch_device='cpu')")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.rounds, self.round_seconds, self.seed = int(rounds), float(round_seconds), seed
        self._times = MeasuredTimes(self.cache_dir, self.CACHE_FILE, self._FORMAT,
                                    estimate=f"the analytic {self.device.name} price")
        where = (torch.cuda.get_device_name(self.torch_device) if self.torch_device.type == "cuda"
                 else f"{self.torch_device.type}, {torch.get_num_threads()} threads")
        #: What the measured times depend on besides the call, part of every cache key: the device
        #: (a processor with the threads PyTorch had when the model was made) and PyTorch's version.
        self.scope = f"{where}; torch {torch.__version__}"

    def kernel_seconds(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type], output: Type) -> float:
        """One call run as a kernel of its own, as measured on the device (launch included)."""
        return self._times.seconds(call_key(self.scope, op, attrs, inputs), lambda: self.measure(op, attrs, inputs),
                                   lambda: super(MeasuredGPU, self).kernel_seconds(op, attrs, inputs, output),
                                   call_name(op, attrs, inputs))

    def measure(self, op: str, attrs: Mapping[str, Any], inputs: Sequence[Type]) -> float:
        """Time one call now (no cache): seconds per call, the fastest round."""
        import torch

        from ..workload.torch_ops import round_seconds, torch_op

        fn = torch_op(op)
        rng = np.random.default_rng(self.seed)
        args = [self._value(t, rng) for t in inputs]
        cuda = self.torch_device.type == "cuda"
        sync = (lambda: torch.cuda.synchronize(self.torch_device)) if cuda else (lambda: None)
        with torch.no_grad():
            return min(round_seconds(lambda: fn(*args, **attrs), self.rounds, self.round_seconds, sync))

    def _value(self, ty: Type, rng: np.random.Generator) -> Any:
        import torch

        if isinstance(ty, TupleType):
            return tuple(self._value(f, rng) for f in ty.fields)
        if not isinstance(ty, TensorType):
            raise NotImplementedError(f"an input of type {ty}")
        return torch.from_numpy(random_input(ty, rng)).to(self.torch_device)

    def __repr__(self) -> str:
        return f"MeasuredGPU({self.torch_device}, {super().__repr__()})"

"""Graphs gsl_eq exported (:func:`gsl_eq.export`), run op by op with PyTorch: a runner that needs only
PyTorch and NumPy.

This file imports nothing of gsl_eq or TVM, so it runs where neither is installed: the GPU kit
(benchmarks/gpu_truth.py) copies it into its folder as ``runner.py``. It holds the PyTorch form of
each Relax op (:func:`torch_ops`, which :mod:`gsl_eq.workload.torch_ops` uses too), runs a graph file with
them (:class:`Program`), checks that two graphs of one model agree, and times them side by side
and each of their kernels alone::

    python runner.py --device cuda --out timings.json      # in a folder gpu_truth.py --prepare wrote
    python runner.py --device cpu --out timings.json --only tensat_bert

A graph file is JSON (``FORMAT``): the runtime inputs and parameters (each a value stored in the
``.npz`` beside it, or a seed and a distribution to draw it from), and the nodes in an order where
each comes after its inputs: ``{"kind": "var" | "const" | "call" | "tuple" | "getitem", "inputs":
[node indices], "op", "attrs", "type"}``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

FORMAT = "gsl_eq.graph/1"


# --------------------------------------------------------------------------- the ops


def _pad(x, padding, value: float = 0.0):
    """``x`` padded by Relax's (top, left, bottom, right), as torch's F.pad (left, right, top, bottom) takes it."""
    import torch.nn.functional as F

    top, left, bottom, right = padding
    return x if not any(padding) else F.pad(x, (left, right, top, bottom), value=value)


def _conv2d(x, w, strides, padding, dilation, groups, data_layout, kernel_layout, out_layout, **_):
    import torch.nn.functional as F

    if (data_layout, kernel_layout, out_layout) != ("NCHW", "OIHW", "NCHW"):
        raise NotImplementedError(f"conv2d in layout {data_layout}/{kernel_layout}")
    return F.conv2d(_pad(x, padding), w, stride=tuple(strides), dilation=tuple(dilation), groups=groups)


def _pool(kind: str):
    def pool(x, pool_size, strides, dilation, padding, ceil_mode, layout, count_include_pad=False, **_):
        import torch.nn.functional as F

        if layout != "NCHW":
            raise NotImplementedError(f"{kind} pooling in layout {layout}")
        pool_size, strides, dilation = tuple(pool_size), tuple(strides), tuple(dilation)
        if kind == "max":
            return F.max_pool2d(_pad(x, padding, -math.inf), pool_size, strides, dilation=dilation, ceil_mode=ceil_mode)
        top, left, bottom, right = padding
        if (top, left) != (bottom, right) or dilation != (1, 1):
            raise NotImplementedError(f"average pooling with padding {tuple(padding)}, dilation {dilation}")
        return F.avg_pool2d(x, pool_size, strides, padding=(top, left), ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad)

    return pool


def _split(x, indices_or_sections, axis):
    import torch

    if isinstance(indices_or_sections, int):  # TVM: parts of ceil(n / sections), the last one shorter
        return tuple(torch.split(x, math.ceil(x.shape[axis] / indices_or_sections), dim=axis))
    return tuple(torch.tensor_split(x, list(indices_or_sections), dim=axis))


def _nn_pad(x, pad_width, pad_mode="constant", pad_value=0.0, **_):
    import torch.nn.functional as F

    if pad_mode != "constant":
        raise NotImplementedError(f"nn.pad in mode {pad_mode}")
    before, after = pad_width[0::2], pad_width[1::2]  # Relax: (before, after) per axis, first axis first
    return F.pad(x, [w for axis in reversed(range(len(before))) for w in (before[axis], after[axis])], value=pad_value)


def _batch_norm(x, gamma, beta, mean, var, axis, epsilon, center, scale, momentum, training=False, **_):
    """Relax's batch_norm: in training, by the batch's statistics (its biased variance), the moving
    ones updated by ``momentum``; otherwise by the moving statistics. Returns (output, mean, var)."""
    import torch

    axis %= x.dim()
    shape = [-1 if d == axis else 1 for d in range(x.dim())]
    if training:
        dims = [d for d in range(x.dim()) if d != axis]
        used_mean, used_var = x.mean(dims), x.var(dims, unbiased=False)
        mean, var = (1 - momentum) * mean + momentum * used_mean, (1 - momentum) * var + momentum * used_var
    else:
        used_mean, used_var = mean, var
    out = (x - used_mean.reshape(shape)) / torch.sqrt(used_var.reshape(shape) + epsilon)
    out = out * gamma.reshape(shape) if scale else out
    return (out + beta.reshape(shape) if center else out), mean, var


def _dims(axis, x) -> tuple[int, ...]:
    return tuple(range(x.dim())) if axis is None else tuple(axis)


def _strided_slice(x, axes, begin, end, strides=None, assume_inbound=False):
    index = [slice(None)] * x.dim()
    for k, axis in enumerate(axes):
        index[axis] = slice(begin[k], end[k], strides[k] if strides else 1)
    return x[tuple(index)]


def _cumsum(x, axis, dtype, exclusive):
    import torch

    flat = x.reshape(-1) if axis is None else x
    out = torch.cumsum(flat, dim=0 if axis is None else axis, dtype=getattr(torch, dtype) if dtype else None)
    return out - flat.to(out.dtype) if exclusive else out


@functools.cache
def torch_ops() -> dict[str, Callable[..., Any]]:
    """Every Relax op with a PyTorch form, by name (``"relax.nn.conv2d"``)."""
    import torch
    import torch.nn.functional as F

    return {
        "relax.add": torch.add, "relax.subtract": torch.sub, "relax.multiply": torch.mul, "relax.divide": torch.div,
        "relax.nn.relu": lambda x: F.relu(x), "relax.sigmoid": torch.sigmoid, "relax.tanh": torch.tanh,
        "relax.exp": torch.exp, "relax.sqrt": torch.sqrt, "relax.negative": torch.neg,
        "relax.nn.gelu": lambda x: F.gelu(x), "relax.clip": lambda x, min, max: torch.clamp(x, min, max),
        "relax.matmul": lambda a, b, out_dtype=None: torch.matmul(a, b),
        "relax.reshape": lambda x, shape: x.reshape(tuple(shape)),
        "relax.permute_dims": lambda x, axes: x.permute(*(axes if axes is not None else reversed(range(x.dim())))),
        "relax.concat": lambda parts, axis: torch.cat(parts, dim=axis),
        "relax.split": _split,
        "relax.nn.pad": _nn_pad,
        "relax.nn.softmax": lambda x, axis: F.softmax(x, dim=axis),
        "relax.nn.conv2d": _conv2d,
        "relax.nn.max_pool2d": _pool("max"), "relax.nn.avg_pool2d": _pool("avg"),
        "relax.nn.adaptive_avg_pool2d": lambda x, output_size, layout, out_layout: F.adaptive_avg_pool2d(
            x, tuple(output_size)),
        "relax.nn.batch_norm": _batch_norm,
        "relax.eye": lambda n, m, k, dtype: torch.ones(n, m, dtype=getattr(torch, dtype)).tril(k).triu(k),
        "relax.zeros": lambda shape, dtype: torch.zeros(tuple(shape), dtype=getattr(torch, dtype)),
        "relax.astype": lambda x, dtype: x.to(getattr(torch, dtype)),
        "relax.mean": lambda x, axis, keepdims: x.mean(dim=_dims(axis, x), keepdim=keepdims),
        "relax.variance": lambda x, axis, keepdims: x.var(dim=_dims(axis, x), keepdim=keepdims, unbiased=False),
        "relax.strided_slice": _strided_slice,
        "relax.cumsum": lambda x, axis, dtype, exclusive: _cumsum(x, axis, dtype, exclusive),
        "relax.equal": torch.eq,
        "relax.nn.layer_norm": lambda x, gamma, beta, axes, epsilon, **_: F.layer_norm(
            x, tuple(x.shape[-len(axes):]), gamma, beta, eps=epsilon),
    }


def torch_op(op: str) -> Callable[..., Any]:
    """The PyTorch form of Relax op ``op``: called with the op's inputs (a tuple input as a tuple of
    tensors) and its attributes as keywords; ``NotImplementedError`` when there is none."""
    try:
        return torch_ops()[op]
    except KeyError:
        raise NotImplementedError(f"no PyTorch form of {op}") from None


#: Ops that only reinterpret or partition a tensor: no kernel of their own (the gpu model's FREE_OPS).
VIEWS = frozenset("relax." + n for n in ("reshape", "squeeze", "expand_dims", "flatten", "split"))


# --------------------------------------------------------------------------- graphs


def read_graph(path: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """A graph file and its values: every parameter and input stored in the ``.npz`` beside it or drawn
    from its seed, every constant, by name."""
    path = Path(path)
    graph = json.loads(path.read_text())
    if graph.get("format") != FORMAT:
        raise ValueError(f"{path} is not a graph file of format {FORMAT} (it says {graph.get('format')!r})")
    stored = path.with_suffix(".npz")
    arrays: dict[str, np.ndarray] = {}
    if stored.is_file():
        with np.load(stored, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    values = {}
    for entry in graph["params"] + graph["inputs"]:
        values[entry["name"]] = arrays[entry["name"]] if "seed" not in entry else drawn(entry)
    values.update({name: arrays[name] for name in graph.get("constants", ())})
    return graph, values


def drawn(entry: Mapping[str, Any]) -> np.ndarray:
    """The value a graph file describes by a seed: ``{"seed", "shape", "dtype", "uniform": [low, high]}``
    (floats), ``"integers": [low, high]`` or ``"bool": true``."""
    rng = np.random.default_rng(entry["seed"])
    shape = tuple(entry["shape"])
    if "integers" in entry:
        return rng.integers(*entry["integers"], size=shape).astype(entry["dtype"])
    if entry.get("bool"):
        return rng.random(shape) < 0.5
    return rng.uniform(*entry["uniform"], size=shape).astype(entry["dtype"])


class Program:
    """A graph ready to run with PyTorch on ``device``: parameters and constants made tensors there
    once, and (``fold``) every computation on them alone computed once, as a compiler folds it, so a
    call runs only what depends on the runtime inputs. Called with the runtime inputs by name (NumPy
    arrays or tensors), it returns the outputs as tensors, a tuple of them for several."""

    def __init__(self, graph: Mapping[str, Any], values: Mapping[str, Any], device: str = "cpu", fold: bool = True):
        import torch

        self.graph, self.device = graph, device
        nodes = graph["nodes"]
        inputs = {e["name"] for e in graph["inputs"]}
        self.ops = {n["op"]: torch_op(n["op"]) for n in nodes if n["kind"] == "call"}
        self.fixed: dict[int, Any] = {}
        varying: set[int] = set()
        with torch.no_grad():
            for k, node in enumerate(nodes):
                if node["kind"] == "var" and node["name"] in inputs or any(i in varying for i in node["inputs"]):
                    varying.add(k)
                elif node["kind"] in ("var", "const"):
                    self.fixed[k] = _tensor(values[node["name"]], device)
                elif fold:
                    self.fixed[k] = self._evaluate(node, self.fixed)
                else:
                    varying.add(k)
        self.steps = [k for k in range(len(nodes)) if k in varying]
        self.calls = [nodes[k] for k in self.steps if nodes[k]["kind"] == "call"]

    def __call__(self, inputs: Mapping[str, Any]) -> Any:
        nodes = self.graph["nodes"]
        values = dict(self.fixed)
        for k in self.steps:
            node = nodes[k]
            values[k] = _tensor(inputs[node["name"]], self.device) if node["kind"] == "var" else \
                self._evaluate(node, values)
        outs = [values[k] for k in self.graph["outputs"]]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _evaluate(self, node: Mapping[str, Any], values: Mapping[int, Any]) -> Any:
        args = [values[i] for i in node["inputs"]]
        if node["kind"] == "tuple":
            return tuple(args)
        if node["kind"] == "getitem":
            return args[0][node["index"]]
        return self.ops[node["op"]](*args, **node["attrs"])


def _tensor(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    return torch.from_numpy(np.array(value, copy=True)).to(device)  # a copy: writable, contiguous


# --------------------------------------------------------------------------- timing


def round_seconds(fn: Callable[[], Any], rounds: int = 5, seconds: float = 0.05,
                  synchronize: Callable[[], Any] = lambda: None) -> list[float]:
    """Seconds per call of ``fn`` in each of ``rounds`` rounds, after two warm-up calls: a round
    runs as many calls as last about ``seconds`` back to back, then ``synchronize()`` (on a GPU,
    ``torch.cuda.synchronize``: the calls queue asynchronously, as TASO times an op by the events
    around a loop of its launches)."""

    def elapsed(number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        synchronize()
        return (time.perf_counter() - start) / number

    for _ in range(2):
        fn()
    synchronize()
    number = max(1, min(10_000, round(seconds / max(1e-7, elapsed(1)))))
    return [elapsed(number) for _ in range(rounds)]


def replayable(fn: Callable[[], Any], device: str) -> tuple[Callable[[], Any], str]:
    """``fn`` as a CUDA graph's replay on a GPU (each kernel's launch is what the GPU pays, not
    Python's), and how it runs: ``"cuda graph"``, or ``"eager"`` on a CPU or where capture fails."""
    if not device.startswith("cuda"):
        return fn, "eager"
    import torch

    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return graph.replay, "cuda graph"
    except Exception:  # capture refuses host syncs and some ops: time the launches from Python then
        torch.cuda.synchronize()
        return fn, "eager"


def side_by_side(fns: Sequence[Callable[[], Any]], device: str, rounds: int = 9,
                 seconds: float = 0.05) -> list[list[float]]:
    """Seconds per call of each of ``fns`` in ``rounds`` alternating rounds (the order reversed every
    other round, so that drift in the machine's speed falls on all alike)."""
    sync = _synchronize(device)
    numbers = []
    for fn in fns:
        for _ in range(2):
            fn()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        numbers.append(max(1, min(10_000, round(seconds / max(1e-7, time.perf_counter() - start)))))
    times: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for k in order:
            start = time.perf_counter()
            for _ in range(numbers[k]):
                fns[k]()
            sync()
            times[k].append((time.perf_counter() - start) / numbers[k])
    return times


def _synchronize(device: str) -> Callable[[], Any]:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def noise(times: Sequence[float]) -> float:
    """The spread of a program's rounds: half their range over their median."""
    return (max(times) - min(times)) / 2 / statistics.median(times)


def kernel_key(node: Mapping[str, Any], types: Sequence[Any]) -> str:
    """What identifies a kernel: its op, attributes and input types."""
    return json.dumps([node["op"], node["attrs"], types], sort_keys=True)


def time_kernel(node: Mapping[str, Any], types: Sequence[Any], device: str, rounds: int = 5) -> float:
    """Median seconds of one call alone on random inputs of its types (on a GPU, 20 calls replayed
    as one CUDA graph, so each costs its kernel's time and launch on the device)."""
    import torch

    fn = torch_op(node["op"])
    rng = np.random.default_rng(0)
    args = [_argument(t, rng, device) for t in types]
    calls = 20 if device.startswith("cuda") else 1
    with torch.no_grad():
        call = functools.partial(fn, *args, **node["attrs"])
        batch, _ = replayable(lambda: [call() for _ in range(calls)], device)
        times = round_seconds(batch, rounds=rounds, seconds=0.02, synchronize=_synchronize(device))
    return statistics.median(times) / calls


def _argument(ty: Any, rng: np.random.Generator, device: str) -> Any:
    if "fields" in ty:
        return tuple(_argument(f, rng, device) for f in ty["fields"])
    dtype = np.dtype(ty["dtype"])
    if np.issubdtype(dtype, np.integer):
        value = np.zeros(ty["shape"], dtype)  # an index in range of any axis
    elif dtype == np.bool_:
        value = rng.random(ty["shape"]) < 0.5
    else:
        value = rng.uniform(0.5, 1.5, ty["shape"]).astype(dtype)
    return _tensor(value, device)


# --------------------------------------------------------------------------- a folder of cases


def run_case(folder: Path, case: Mapping[str, Any], device: str, rounds: int) -> tuple[dict, dict[str, dict]]:
    """One case of a prepared folder: its input and result graphs run on the same values, their
    outputs compared, both timed side by side; and the kernels of both, each with its types."""
    import torch

    programs, kernels = [], {}
    for label in ("input", "result"):
        graph, values = read_graph(folder / case[label])
        programs.append(Program(graph, values, device))
        types = [n["type"] for n in graph["nodes"]]
        for node in programs[-1].calls:
            if node["op"] not in VIEWS:
                args = [types[i] for i in node["inputs"]]
                kernels.setdefault(kernel_key(node, args), {"node": node, "types": args, "calls": 0})["calls"] += 1
    feed = {e["name"]: _tensor(values[e["name"]], device) for e in graph["inputs"]}  # the result's: drawn alike
    with torch.no_grad():
        outputs = [_flat(p(feed)) for p in programs]
        diff = max((float((a.double() - b.double()).abs().max()) if a.numel() else 0.0)
                   for a, b in zip(*outputs))
        scale = max(float(a.double().abs().max()) if a.numel() else 0.0 for a in outputs[0])
        fns, modes = zip(*(replayable(functools.partial(p, feed), device) for p in programs))
        times = side_by_side(fns, device, rounds)
    medians = [statistics.median(t) for t in times]
    record = {**{k: v for k, v in case.items() if k not in ("input", "result")}, "timing": sorted(set(modes)),
              "input_s": medians[0], "result_s": medians[1], "speedup": medians[0] / medians[1],
              "noise": max(noise(t) for t in times), "rounds": rounds, "max_diff": diff,
              "agree": diff <= 1e-3 * max(1.0, scale) and len(outputs[0]) == len(outputs[1]),
              "input_kernels": len([n for n in programs[0].calls if n["op"] not in VIEWS]),
              "result_kernels": len([n for n in programs[1].calls if n["op"] not in VIEWS])}
    return record, kernels


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _flat(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple) else [out]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run and time the cases of a folder gsl_eq's GPU kit prepared "
                                                 "(manifest.json): each input and result on the same values, "
                                                 "their outputs compared, and every distinct kernel alone.")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:1 or cpu (default: cuda)")
    parser.add_argument("--out", default="timings.json", help="the JSON file of timings to write")
    parser.add_argument("--dir", default=str(Path(__file__).resolve().parent), help="the prepared folder")
    parser.add_argument("--only", nargs="*", help="run only the cases of these names")
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds per case (default: 9)")
    parser.add_argument("--no-kernels", action="store_true", help="skip timing each kernel alone")
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device is visible to PyTorch; run with --device cpu", file=sys.stderr)
        return 2
    folder = Path(args.dir)
    manifest = json.loads((folder / "manifest.json").read_text())
    cases, kernels = [], {}
    start = time.perf_counter()
    for case in manifest["cases"]:
        if args.only and case["name"] not in args.only:
            continue
        record, found = run_case(folder, case, args.device, args.rounds)
        cases.append(record)
        for key, kernel in found.items():
            kernels.setdefault(key, {**kernel, "calls": 0})["calls"] += kernel["calls"]
        print(f"{record['name']}: {record['input_s'] * 1e3:.3f} -> {record['result_s'] * 1e3:.3f} ms "
              f"({record['speedup']:.3f}x, noise {record['noise']:.1%}, diff {record['max_diff']:.2g})", flush=True)
    timed = [] if args.no_kernels else [
        {"key": key, "op": k["node"]["op"], "attrs": k["node"]["attrs"], "types": k["types"],
         "output": k["node"]["type"], "calls": k["calls"],
         "seconds": time_kernel(k["node"], k["types"], args.device)} for key, k in kernels.items()]
    device = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else _cpu_name()
    Path(args.out).write_text(json.dumps({
        "format": "gsl_eq.timings/1", "device": args.device, "device_name": device, "torch": torch.__version__,
        "python": platform.python_version(), "threads": torch.get_num_threads(), "seconds": time.perf_counter() - start,
        "cases": cases, "kernels": timed}, indent=1))
    print(f"wrote {args.out}: {len(cases)} cases, {len(timed)} kernels in {time.perf_counter() - start:.0f} s")
    return 0 if all(c["agree"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())

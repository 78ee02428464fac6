"""Workload: a Relax module together with its model parameters (*workload* in the documentation's glossary).

The module's ``main`` takes runtime inputs and model parameters; ``params`` binds
the parameters by name, every other function parameter is a runtime input.
Workloads are values: every operation returns a new one, and the arrays a user
hands in are copied, so nothing the user holds is changed.

    x = relax.Var("x", relax.TensorType((2, 2, 4, 4), "float32"))
    w1 = relax.Var("w1", relax.TensorType((4, 2, 1, 1), "float32"))
    w2 = relax.Var("w2", relax.TensorType((4, 2, 1, 1), "float32"))
    y = relax.op.nn.conv2d(x, w1) + relax.op.nn.conv2d(x, w2)
    wl = Workload.from_expr(y, {"x"})
    out = wl(x=np.random.rand(2, 2, 4, 4))
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import math
import time
import warnings
import weakref
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import tvm
from tvm import relax

from . import cpu_build, script_safety
from .build_time import BuildRates, optimized
from .buildable import first_line, signature, why_unbuildable
from ..errors import WorkloadError
from ..graph import Graph, Kind, Node, TensorType, from_relax, to_relax
from ..graph.work import roofline_seconds

if TYPE_CHECKING:
    from ..measure.schedule_db import ScheduleDatabase


class FoldWarning(UserWarning):
    """Some parameter-only computations could not be folded: TVM cannot build them."""


@dataclass(frozen=True)
class Unfolded:
    """A parameter-only computation left in the graph because TVM cannot build it."""

    op: str
    output: str  # its output type
    reason: str  # the first line of TVM's error

    def __str__(self) -> str:
        return f"{self.op} -> {self.output} not folded: {self.reason}"


#: What a fold costs (:meth:`Workload.predicted_fold_seconds`): TVM builds the parameter computations into
#: one module and runs it once, so a fold costs a fixed start, some building per call (more when optimized)
#: and running time proportional to the calls' roofline time (far more when unoptimized); the rates are
#: upper ends of what folds of TENSAT's and BERT's weights were measured to take.
FOLD_RATES = BuildRates(once=0.1, per_call={False: 2e-3, True: 0.01}, per_roofline_second={False: 50.0, True: 10.0})


@dataclass(frozen=True)
class Derived:
    """Parameters folds made: each (by name) as the computation giving it from parameters no fold
    made, and those parameters' values (shared, not copied)."""

    nodes: Mapping[str, Node] = field(default_factory=lambda: MappingProxyType({}))
    sources: Mapping[str, np.ndarray] = field(default_factory=lambda: MappingProxyType({}))

    def extended(self, made: Mapping[str, Node], params: Mapping[str, np.ndarray]) -> "Derived":
        """These and the parameters of ``made`` (a fold's new parameters, each by the node of the
        graph it was folded from, on ``params`` and on parameters these derive)."""
        expanded = {name: self._expanded(node) for name, node in made.items()}
        leaves = {v.name for node in expanded.values() for v in Graph((), [node]).rpo() if v.kind is Kind.VAR}
        sources = {**self.sources, **{name: params[name] for name in leaves if name in params}}
        return Derived(MappingProxyType({**self.nodes, **expanded}), MappingProxyType(sources))

    def _expanded(self, node: Node) -> Node:
        graph = Graph((), [node])
        mapping = {v: self.nodes[v.name] for v in graph.rpo() if v.kind is Kind.VAR and v.name in self.nodes}
        return graph.replace(mapping).outputs[0] if mapping else node


class Workload:
    """A Relax module and its parameters: what gsl_eq loads, rewrites, runs and compares.

    Parameters
    ----------
    mod
        The module; its ``main`` takes runtime inputs and model parameters, each by its own name.
    params
        The parameters' values by name (NumPy arrays, or anything ``numpy.asarray`` reads), each
        of the shape and dtype ``main`` declares; every other parameter of ``main`` is a runtime
        input.

    Raises
    ------
    WorkloadError
        Two parameters of ``main`` share a name, or a value names no parameter or does not fit it.

    Examples
    --------
    Usually made by an importer (:meth:`from_torch`, :meth:`from_onnx`, :meth:`from_expr`) and
    called like a function::

        wl = Workload.from_torch(net, (x,))
        y = wl(**wl.random_inputs(0))
    """

    #: The parameter-only computations :meth:`fold_params` had to leave in the graph.
    unfolded: tuple[Unfolded, ...] = ()
    #: The parameters folds made, each as the computation giving it from parameters no fold made
    #: (:meth:`before_folds`): kept by :meth:`fold_params` and by rewrites of this workload's graph.
    derived: Derived = Derived()

    def __init__(self, mod: tvm.IRModule, params: Mapping[str, Any] | None = None):
        self._mod = mod
        self._graph = from_relax(mod)
        names = [v.name for v in self._graph.inputs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            where = "; ".join(f"{name!r} at positions {[k for k, n in enumerate(names) if n == name]}" for name in twice)
            raise WorkloadError(f"main has several parameters with one name ({where}): inputs and parameters "
                                "are passed by name, so each must have its own")
        if params is not None and not isinstance(params, Mapping):
            raise WorkloadError(f"params must map parameter names to arrays ({{'w': array}}); got a "
                                f"{type(params).__name__}")
        declared = {v.name: v.type for v in self._graph.inputs}
        frozen: dict[str, np.ndarray] = {}
        for name, value in (params or {}).items():
            if name not in declared:
                raise WorkloadError(f"parameter {name!r} is not a parameter of main (main takes {sorted(declared)})")
            array = _to_numpy(value)
            expected = declared[name]
            if array.shape != expected.shape or str(array.dtype) != expected.dtype:
                raise WorkloadError(
                    f"parameter {name!r}: array of shape {array.shape} and dtype {array.dtype}, "
                    f"main declares {expected.shape} {expected.dtype}"
                )
            frozen[name] = _FROZEN.frozen(array)
        self._params = MappingProxyType(frozen)
        self._vm: relax.VirtualMachine | None = None
        self._content_key: tuple | None = None
        self._work: tuple[int, float] | None = None

    @staticmethod
    def from_graph(graph: Graph, params: Mapping[str, Any]) -> "Workload":
        """The workload of ``graph`` with those of ``params`` the graph still takes.

        Parameters
        ----------
        graph
            A computation graph (:class:`~gsl_eq.graph.Graph`), turned into ``main``.
        params
            Parameter values by name; those the graph no longer reads are dropped.
        """
        names = {v.name for v in graph.inputs}
        return Workload(to_relax(graph), {k: v for k, v in params.items() if k in names})

    @staticmethod
    def from_expr(expr: relax.Expr, input_names: Iterable[str], dtype: str = "float32", seed: int = 0) -> "Workload":
        """Build a workload from a Relax expression over ``relax.Var``s.

        Every free variable not named in ``input_names`` becomes a parameter with a random value:
        vectors and scalars (biases, scales, statistics) from U[0.5, 1.5), so variances stay
        positive; tensors of rank >= 2 (weights) from U[-b, b) with b = 1/sqrt(fan_in), fan_in
        being the product of all dimensions but the first, so deep models keep activations in range.

        Parameters
        ----------
        expr
            The expression ``main`` returns.
        input_names
            The names of the variables that stay runtime inputs (a collection, not one string).
        dtype
            The dtype of floating-point parameters' values when a variable has none of its own.
        seed
            The seed the parameters' values are drawn from.

        Examples
        --------
        ::

            x, w = relax.Var("x", relax.TensorType((1, 8), "float32")), relax.Var("w", relax.TensorType((8, 8), "float32"))
            wl = Workload.from_expr(relax.op.nn.relu(relax.op.matmul(x, w)), {"x"})   # w: a parameter
        """
        if isinstance(input_names, (str, bytes)):
            raise WorkloadError(f"input_names must be a collection of variable names, not the string "
                                f"{input_names!r} (for one input: [{input_names!r}])")
        inputs = set(input_names)
        order = _post_order(expr)
        free = [e for e in order if isinstance(e, relax.Var)]
        missing = inputs - {v.name for v in free}
        if missing:
            raise WorkloadError(f"input_names {sorted(missing)} are not variables of the expression")
        bb = relax.BlockBuilder()
        with bb.function("main", free):
            with bb.dataflow():
                out = bb.emit_output(_emit_dag(bb, order))
            bb.emit_func_output(out)
        rng = np.random.default_rng(seed)
        params = {v.name: random_array(v.ty, rng, dtype) for v in free if v.name not in inputs}
        return Workload(bb.get(), params)

    @staticmethod
    def from_torch(module: Any, example_inputs: Sequence[Any], bind: Mapping[str, int] | None = None) -> "Workload":
        """Import a ``torch.nn.Module`` through ``torch.export`` and TVM's Relax frontend.

        The module is exported in evaluation mode (on a copy: the caller's module
        is untouched); its parameters and buffers become the workload's parameters.

        Parameters
        ----------
        module, example_inputs, bind
            As in :func:`gsl_eq.workload.importers.torch_module`.
        """
        from .importers import torch_module

        return Workload(*torch_module(module, example_inputs, bind))

    @staticmethod
    def from_exported_program(program: Any, bind: Mapping[str, int] | None = None) -> "Workload":
        """Import a ``torch.export.ExportedProgram`` through TVM's Relax frontend; its parameters and
        buffers become the workload's parameters::

            program = torch.export.export(model.eval(), (x,))
            wl = Workload.from_exported_program(program)

        Parameters
        ----------
        program, bind
            As in :func:`gsl_eq.workload.importers.exported_program`.
        """
        from .importers import exported_program

        return Workload(*exported_program(program, bind))

    @staticmethod
    def from_onnx(model_or_path: Any, shapes: Mapping[str, Sequence[int]] | None = None,
                  bind: Mapping[str, int] | None = None) -> "Workload":
        """Import an ONNX model (an ``onnx.ModelProto`` or a ``.onnx`` file) through TVM's ONNX
        frontend; its initializers become the workload's parameters::

            wl = Workload.from_onnx("resnet18.onnx", bind={"batch": 1})

        Parameters
        ----------
        model_or_path
            The model, or the path of its file.
        shapes
            Input shapes by input name, in place of those the file declares.
        bind
            Sizes for the model's symbolic dimensions (a dynamic batch axis, say): gsl_eq
            works on static shapes.
        """
        from .importers import onnx_model

        return Workload(*onnx_model(model_or_path, shapes, bind))

    @staticmethod
    def from_module(mod: tvm.IRModule, params: Mapping[str, Any] | None = None,
                    bind: Mapping[str, int] | None = None) -> "Workload":
        """The workload of a Relax module whose ``main`` may hold its weights as constants (as
        ``relax.transform.BindParams`` leaves them): every constant that is not a scalar becomes a
        parameter holding its value, so rules and folding see weights as weights.

        Parameters
        ----------
        mod
            The module.
        params
            Values of parameters of ``main``, by name.
        bind
            Sizes for symbolic dimensions (``{"s0": 1}``).
        """
        from .importers import bind_symbolic

        return Workload(bind_symbolic(mod, bind), params).with_constants_as_params()

    def with_constants_as_params(self, lift: Callable[[np.ndarray], bool] = lambda value: value.ndim > 0) -> "Workload":
        """This workload with each constant whose value ``lift`` accepts made a new parameter
        (``v_param_<k>``) holding that value; itself if there is none.

        Parameters
        ----------
        lift
            Which constants' values to lift; by default every one that is not a scalar.
        """
        lifted = [n for n in self._graph.rpo() if n.kind is Kind.CONST and lift(n.value)]
        if not lifted:
            return self
        new_vars = self._param_vars(lifted)
        values = {**self._params, **{new_vars[n].name: n.value for n in lifted}}
        return Workload.from_graph(self._with_params(new_vars), values)

    def bound_module(self) -> tvm.IRModule:
        """The module with every parameter bound to its value as a constant (as
        ``relax.transform.BindParams`` binds them): ``main`` takes the runtime inputs only."""
        if not self._params:
            return self._mod
        values = {name: tvm.runtime.tensor(np.ascontiguousarray(value)) for name, value in self._params.items()}
        return relax.transform.BindParams("main", values)(self._mod)

    @property
    def mod(self) -> tvm.IRModule:
        """The Relax module (an immutable TVM object)."""
        return self._mod

    @property
    def params(self) -> Mapping[str, np.ndarray]:
        """Parameters by name, read-only."""
        return self._params

    @property
    def graph(self) -> Graph:
        """The computation graph of ``main``."""
        return self._graph

    @property
    def input_names(self) -> list[str]:
        """Names of the runtime inputs, in signature order."""
        return [v.name for v in self._graph.inputs if v.name not in self._params]

    def content_key(self) -> tuple:
        """A key equal for two workloads of one content: the module's structure, the input names
        and every parameter's name, type and bytes (computed once: a workload does not change)."""
        if self._content_key is None:
            import tvm_ffi

            params = tuple((name, str(a.dtype), a.shape, _FROZEN.digest(a)) for name, a in sorted(self._params.items()))
            self._content_key = (tvm_ffi.structural_hash(self._mod, map_free_vars=True), tuple(self.input_names),
                                 params)
        return self._content_key

    @property
    def built(self) -> bool:
        """Whether the workload holds a build (by :meth:`build`, or by its first call)."""
        return self._vm is not None

    def once_target(self, target: str | dict = "llvm") -> dict:
        """``target`` for a build that runs once and is then dropped (a fold, a check): without LLVM's
        optimizations, most of a build's time, unless running unoptimized code would cost more
        (:func:`~gsl_eq.workload.build_time.optimized`: a product of two weight matrices folded, a large network checked)."""
        exported = tvm.target.Target(target).export()
        return exported if self.optimized_once() else {**exported, "opt-level": 0}

    def optimized_once(self) -> bool:
        """Whether a build that runs once gets LLVM's optimizations (:meth:`once_target`)."""
        return optimized(*self.work())

    def work(self) -> tuple[int, float]:
        """The module's op calls and their roofline seconds (:func:`~gsl_eq.graph.work.roofline_seconds`):
        what building and running it takes grows with (computed once: a workload does not change)."""
        if self._work is None:
            calls = [n for n in self._graph.rpo() if n.kind is Kind.CALL]
            self._work = len(calls), _roofline(calls)
        return self._work

    def build(self, target: str | dict = "llvm", schedules: "ScheduleDatabase | None" = None,
              once: bool = False) -> "Workload":
        """Compile the module with TVM for ``target`` (CPU; a name or a JSON dict as TVM takes them,
        ``{"kind": "llvm", "opt-level": 0}``); returns self for chaining. Without a schedule database,
        TVM's default pipeline builds it with reductions' loops reordered for the cache
        (:mod:`gsl_eq.workload.cpu_build`). With a :class:`~gsl_eq.measure.schedule_db.ScheduleDatabase`, every kernel
        is scheduled as it says (its own target then applies).

        Parameters
        ----------
        target
            The TVM target.
        schedules
            A schedule database to schedule every kernel by; None: TVM's default pipeline.
        once
            The module is to run once (a fold, a reference to compare with), so it is built
            soonest, not fastest: for :meth:`once_target` and by TVM's pipeline without constant
            folding (which compiles each computation on constants apart to run it at build time).

        Raises
        ------
        WorkloadError
            Naming TVM's reason, when TVM cannot compile the module (see :attr:`unfolded` and
            :func:`gsl_eq.rules.legalize`).
        """
        try:
            if once:
                target = self.once_target(target)
            compile_ = (lambda mod: cpu_build.build(mod, tvm.target.Target(target), fold_constants=not once)) \
                if schedules is None else schedules.build
            executable = cpu_build.on_fresh_copies(compile_, self._mod)
        except Exception as error:  # noqa: BLE001 - TVM raises several kinds; the cause is chained
            reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
            hint = f" ({'; '.join(map(str, self.unfolded))})" if self.unfolded else ""
            raise WorkloadError(f"TVM cannot build this module{hint}: {reason[:300]}. Rewriting what it cannot "
                                "compile into an equal computation may help: rules.legalize()") from error
        self._vm = relax.VirtualMachine(executable, tvm.cpu())
        return self

    def __call__(self, *args: Any, **inputs: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        """Run on the given inputs (positional in signature order, or by name).

        Inputs are cast to the declared dtype. Returns an array, or a tuple of
        arrays when ``main`` returns a tuple.
        """
        names = self.input_names
        if len(args) > len(names):
            raise WorkloadError(f"{len(args)} positional inputs given, the workload takes {len(names)}: {names}")
        given = dict(zip(names, args))
        for name, value in inputs.items():
            if name not in names:
                raise WorkloadError(f"unknown input {name!r}; the workload's inputs are {names}")
            if name in given:
                raise WorkloadError(f"input {name!r} given twice")
            given[name] = value
        if self._vm is None:
            self.build()
        arguments = []
        for var in self._graph.inputs:
            if var.name in self._params:
                arguments.append(self._params[var.name])
                continue
            if var.name not in given:
                raise WorkloadError(f"missing input {var.name!r}")
            array = _to_numpy(given[var.name]).astype(var.type.dtype, copy=False)
            if array.shape != var.type.shape:
                raise WorkloadError(f"input {var.name!r}: shape {array.shape}, the workload expects {var.type.shape}")
            arguments.append(array)
        result = self._vm["main"](*[tvm.runtime.tensor(np.require(a, requirements="C")) for a in arguments])
        return _from_tvm(result)

    def seconds(self, inputs: Mapping[str, Any], number: int = 10) -> float:
        """Mean seconds of ``number`` runs on ``inputs``, with the build made last (:meth:`build`),
        or the default build.

        Parameters
        ----------
        inputs
            A value for every runtime input, by name (:meth:`random_inputs` makes them).
        number
            How many runs the mean is over.
        """
        if self._vm is None:
            self.build()
        arguments = [tvm.runtime.tensor(np.require(self._params[v.name] if v.name in self._params
                                                   else _to_numpy(inputs[v.name]).astype(v.type.dtype, copy=False),
                                                   requirements="C"))
                     for v in self._graph.inputs]
        return float(self._vm.time_evaluator("main", tvm.cpu(), number=number, repeat=1)(*arguments).mean)

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Deterministic random values for every runtime input, by name: floats from U[-1, 1)
        (data-sized, unlike parameters), booleans either way, integers from 1 to 7 (never a zero divisor) — or, for
        an input that indexes a tensor (``take``, ``gather_elements``, ``gather_nd``,
        directly or through reshapes and casts), from 0 to the indexed axis's size, so
        that every index is in range.

        Parameters
        ----------
        seed
            The seed of the values: the same seed gives the same inputs.
        """
        rng = np.random.default_rng(seed)
        types = {v.name: v.type for v in self._graph.inputs}
        bounds = _index_bounds(self._graph)
        values = {}
        for name in self.input_names:
            ty = types[name]
            if np.issubdtype(np.dtype(ty.dtype), np.floating):
                values[name] = rng.uniform(-1, 1, ty.shape).astype(ty.dtype)
            elif name in bounds and np.issubdtype(np.dtype(ty.dtype), np.integer):
                values[name] = rng.integers(0, bounds[name], size=ty.shape).astype(ty.dtype)
            else:
                values[name] = _random_of(ty, rng)
        return values

    def fold_params(self) -> "Workload":
        """Precompute every subgraph computed only from parameters and constants.

        Each maximal such subgraph feeding the rest of the graph becomes a new
        parameter ``v_param_<k>`` whose value TVM computes; parameters no longer
        read are dropped (GSL's parameter folding).

        Folding never fails on what TVM cannot build: a computation it cannot
        compile stays in the graph (its buildable inputs are folded instead), and
        the result's :attr:`unfolded` says which and why; a :class:`FoldWarning` is
        issued too.
        """
        frontier = self._fold_frontier()
        if not frontier:
            return self
        values, unfolded = _Folder(self, self._param_inputs()).fold(frontier)
        new_vars = self._param_vars(values)
        new_params = {**self._params, **{new_vars[node].name: value for node, value in values.items()}}
        result = Workload.from_graph(self._with_params(new_vars), new_params)
        result.unfolded = tuple(dict.fromkeys([*self.unfolded, *unfolded]))
        result.derived = self.derived.extended({new_vars[node].name: node for node in values}, self._params)
        if unfolded:
            warnings.warn(FoldWarning("; ".join(map(str, unfolded))), stacklevel=2)
        return result

    def before_folds(self) -> "Workload":
        """This workload with each parameter a fold made (:attr:`derived`) computed again from the
        parameters it was folded from: the same function on the parameters no fold made."""
        nodes = self.derived.nodes
        mapping = {v: nodes[v.name] for v in self._graph.inputs if v.name in nodes}
        if not mapping:
            return self
        replaced = self._graph.replace(mapping)
        first: dict[str, Node] = {}
        for v in (n for n in replaced.rpo() if n.kind is Kind.VAR):
            first.setdefault(v.name, v)
        same = {v: first[v.name] for v in replaced.rpo() if v.kind is Kind.VAR and first[v.name] is not v}
        replaced = replaced.replace(same) if same else replaced
        kept = [first.get(v.name, v) for v in self._graph.inputs if v not in mapping]
        inputs = kept + [v for name, v in first.items() if name not in {k.name for k in kept}]
        # a fold may name a parameter it makes as one it consumed was named: the derived one is gone
        kept_params = {name: value for name, value in self._params.items() if name not in nodes}
        return Workload.from_graph(Graph(inputs, replaced.outputs, replaced.returns_tuple),
                                   {**self.derived.sources, **kept_params})

    def folded_graph(self) -> Graph:
        """The graph :meth:`fold_params` would give, without computing a value: each subgraph computed
        only from parameters and constants is a parameter of its type. For pricing a graph before
        deciding to build it (the graph itself when nothing folds)."""
        frontier = self._fold_frontier()
        return self._with_params(self._param_vars(frontier)) if frontier else self._graph

    def fold_calls(self) -> list[Node]:
        """The calls :meth:`fold_params` would compute (children first; none when nothing folds)."""
        frontier = self._fold_frontier()
        return _calls(self._param_inputs(), frontier) if frontier else []

    def predicted_fold_seconds(self) -> float:
        """The seconds :meth:`fold_params` is predicted to take (:data:`FOLD_RATES`; 0 when nothing folds):
        a fold may compute products of large weight matrices, so it is kept within a time limit."""
        calls = self.fold_calls()
        return FOLD_RATES.predicted(len(calls), _roofline(calls)) if calls else 0.0

    def _param_inputs(self) -> list[Node]:
        """The graph's inputs that are parameters."""
        return [v for v in self._graph.inputs if v.name in self._params]

    def _fold_frontier(self) -> list[Node]:
        """The parameter-only nodes that folding turns into parameters."""
        folded = _foldable(self._graph, set(self._params))
        return [n for n in _needed(self._graph, folded) if _becomes_param(n)]

    def _param_vars(self, nodes: Iterable[Node]) -> dict[Node, Node]:
        """A new parameter for each of ``nodes``, named ``v_param_<k>`` after the names taken."""
        taken = {v.name for v in self._graph.inputs}
        names = (f"v_param_{k}" for k in itertools.count(1) if f"v_param_{k}" not in taken)
        return {node: Node.var(name, node.type) for node, name in zip(nodes, names)}

    def _with_params(self, new_vars: dict[Node, Node]) -> Graph:
        """The graph with nodes replaced by new parameters, and the parameters no longer read dropped."""
        rewritten = self._graph.replace(new_vars)
        reachable = set(rewritten.rpo())
        inputs = [v for v in self._graph.inputs if v.name not in self._params or v in reachable]
        inputs += [v for v in new_vars.values() if v in reachable]
        return Graph(inputs, rewritten.outputs, rewritten.returns_tuple)

    def visualize(self, path: str | Path, max_nodes: int | None = 300) -> Path:
        """Draw the graph into ``path``, as its suffix says: ``.svg``, ``.png``, or ``.dot``/``.gv``
        (the DOT source); returns the path.

        Graphviz lays it out, installed with gsl_eq (as WebAssembly: no system program is
        needed; see :mod:`gsl_eq.graph.drawing`). Past ``max_nodes`` nodes, repeated blocks are folded
        into one box each; the drawing's frame says how often the block repeats.

        Parameters
        ----------
        path
            The file to write.
        max_nodes
            Past this many nodes, repeated blocks are folded; ``None`` draws every node.

        Raises
        ------
        DrawingError
            For another suffix (:class:`~gsl_eq.graph.drawing.DrawingError`).
        """
        from ..graph.drawing import draw

        return draw(self._graph, self._params, max_nodes=max_nodes).save(path)

    def save(self, path: str | Path) -> tuple[Path, Path]:
        """Write the module as TVMScript into ``path`` and the parameters beside it, into
        ``<path without .py>.params.npz``; :meth:`load` (and ``gsl-eq optimize <path>``) reads
        both back. Returns the two paths::

            result.workload.save("bert.opt.py")       # bert.opt.py, bert.opt.params.npz
            same = Workload.load("bert.opt.py")

        TVMScript can only spell a constant that is a finite scalar: any other constant (a
        PyTorch import's position ids, a -inf mask value) is written as a new parameter
        (``v_param_<k>``) holding its value, so the file computes the same.

        Parameters
        ----------
        path
            The TVMScript file to write (``.py``).

        Raises
        ------
        WorkloadError
            Writing nothing, if TVM could not read the text back.
        """
        path, params = Path(path), params_path(path)
        written = self.with_constants_as_params(lambda value: not _spelled_in_script(value))
        values, text = written.params, written.mod.script()
        _parsed(text, f"cannot save {path}: TVM does not read back the module's TVMScript")
        path.write_text(text)
        write_arrays(params, values)
        return path, params

    @staticmethod
    def load(path: str | Path) -> "Workload":
        """The workload :meth:`save` wrote into ``path``: its TVMScript, and the parameters in
        ``<path without .py>.params.npz`` if that file exists (else every parameter of ``main`` is
        a runtime input).

        Parameters
        ----------
        path
            The TVMScript file.

        Raises
        ------
        WorkloadError
            The file cannot be read, or is not TVMScript of a module that TVM reads.
        """
        path, params = Path(path), params_path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise WorkloadError(f"cannot read {path}: {e.strerror}") from None
        mod = _parsed(text, f"{path} is not TVMScript that TVM reads", source=str(path))
        if not isinstance(mod, tvm.IRModule):
            raise WorkloadError(f"{path} holds a {type(mod).__name__}, not a module (an @I.ir_module class)")
        if not params.is_file():
            return Workload(mod, {})
        with np.load(params) as arrays:
            return Workload(mod, {name: arrays[name] for name in arrays.files})

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A workload pickles as its graph (flat, see :class:`~gsl_eq.graph.Graph`) and its parameters, so
        it can be sent to another process (a Ray task); the module is rebuilt there from the graph."""
        return _unpickled, (self._graph, dict(self._params), self.unfolded)

    def __repr__(self) -> str:
        return f"Workload({len(self._graph)} nodes, inputs {self.input_names}, {len(self._params)} params)"


def write_arrays(path: str | Path, values: Mapping[str, np.ndarray]) -> None:
    """``values`` into an ``.npz`` file by name, as ``np.savez`` writes them (whose keywords could clash
    with the names), no pickles."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in values.items():
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)


def params_path(path: str | Path) -> Path:
    """Where :meth:`Workload.save` writes the parameters of a module saved into ``path``."""
    return Path(path).with_suffix(".params.npz")


def _parsed(text: str, problem: str, source: str | None = None) -> Any:
    """What TVM's TVMScript parser reads from ``text``; its error as a WorkloadError saying ``problem``.

    TVM's parser evaluates the text's expressions as Python, so the text is read only if it carries
    no code that parsing would run (:mod:`~gsl_eq.workload.script_safety`), and with no Python builtins. A file
    read (``source``, its path) that carries some is refused as such; a module's own text (save's check
    that load reads it back) as one load would refuse."""
    finding = script_safety.code_in(text)
    if finding is not None and source is not None:
        raise WorkloadError(script_safety.refusal(source, finding))
    if finding is not None:
        raise WorkloadError(f"{problem}: Workload.load would refuse it as carrying code that loading runs "
                            f"({finding}), a construct TVM's printer wrote that gsl_eq.workload.script_safety does not know")
    try:
        return script_safety.parsed(text)
    except Exception as e:  # TVM's parser raises its own diagnostic errors
        raise WorkloadError(f"{problem}: {first_line(e)}") from None


def _spelled_in_script(value: np.ndarray) -> bool:
    """Whether TVMScript writes this constant's value in the text (a finite scalar) rather than
    into metadata it does not save."""
    return value.ndim == 0 and (value.dtype.kind not in "fc" or bool(np.isfinite(value)))


def _unpickled(graph: Graph, params: dict[str, np.ndarray], unfolded: tuple[Unfolded, ...]) -> Workload:
    """The workload :meth:`Workload.__reduce__` pickled."""
    wl = Workload(to_relax(graph), params)
    if unfolded:
        wl.unfolded = unfolded
    return wl


class _Folder:
    """Computes the values of parameter-only nodes, and finds what TVM cannot build.

    The calls TVM cannot build by their kind (:mod:`gsl_eq.workload.buildable`: one small probe per kind and
    process) are left unfolded at once, with what reads them; their parameter-only inputs fold in
    their place. The rest is built at once; should that fail all the same, the batch is halved until
    the nodes that fail alone are found, and each of those is left unfolded in the same way.
    """

    def __init__(self, wl: "Workload", params: list[Node]):
        self.wl, self.params = wl, params
        self.values: dict[Node, np.ndarray] = {}
        self.unfolded: list[Unfolded] = []

    def fold(self, frontier: list[Node]) -> tuple[dict[Node, np.ndarray], list[Unfolded]]:
        calls = _calls(self.params, frontier)
        why = why_unbuildable(signature(n) for n in calls)
        failing = {n for n in calls if signature(n) in why}
        self.unfolded += [Unfolded(n.op, str(n.type), why[signature(n)]) for n in calls if n in failing]
        self._batch(self._buildable(frontier, failing))
        return self.values, self.unfolded

    def _buildable(self, frontier: list[Node], failing: set[Node]) -> list[Node]:
        """``frontier`` with each node that is, or reads, one of ``failing`` replaced by its
        parameter-only inputs, until none is or reads one."""
        if not failing:
            return frontier
        spoiled: set[Node] = set()
        for n in Graph(self.params, frontier).rpo():
            if n in failing or any(i in spoiled for i in n.inputs):
                spoiled.add(n)
        kept: dict[Node, None] = {}
        pending = collections.deque(frontier)
        while pending:
            n = pending.popleft()
            if n in spoiled or n.kind is Kind.TUPLE:  # a tuple of index arrays, say: its fields fold
                pending += n.inputs
            elif _becomes_param(n):
                kept[n] = None
        return list(kept)

    def _build(self, nodes: list[Node]) -> list[np.ndarray]:
        reads = {v for v in Graph(self.params, nodes).rpo() if v.kind is Kind.VAR}
        params = [v for v in self.params if v in reads]
        module = to_relax(Graph(params, nodes, returns_tuple=True))
        fold = Workload(module, {v.name: self.wl.params[v.name] for v in params})
        start = time.perf_counter()
        fold.build(once=True)
        built = time.perf_counter()
        values = list(fold())
        FOLD_RATES.record(*fold.work(), built=built - start, ran=time.perf_counter() - built)
        return values

    def _batch(self, nodes: list[Node]) -> None:
        nodes = [n for n in nodes if n not in self.values]
        if not nodes:
            return
        try:
            self.values.update(zip(nodes, self._build(nodes)))
        except Exception as error:  # noqa: BLE001 - TVM raises many kinds; each node is retried below
            if len(nodes) > 1:
                half = len(nodes) // 2
                self._batch(nodes[:half])
                self._batch(nodes[half:])
            else:
                self._unbuildable(nodes[0], error)

    def _unbuildable(self, node: Node, error: Exception) -> None:
        inputs = [n for n in node.inputs if _becomes_param(n)]
        before = len(self.unfolded)
        self._batch(inputs)
        if len(self.unfolded) == before:  # its inputs fold: the node's own op is at fault
            self.unfolded.append(Unfolded(node.op or node.kind.value, str(node.type), first_line(error)))


#: Ops whose output holds the same integers as their first input (index arrays pass through them).
_INDEX_PRESERVING = {"relax.reshape", "relax.astype", "relax.expand_dims", "relax.squeeze", "relax.permute_dims",
                     "relax.broadcast_to", "relax.flatten", "relax.strided_slice"}
#: Ops that index their first input with their second.
_INDEXING = {"relax.take", "relax.gather_elements", "relax.gather_nd"}


def _index_bounds(graph: Graph) -> dict[str, int]:
    """Input name -> exclusive upper bound of the values it may hold, for inputs that are
    (or pass unchanged into) the indices of a take or gather: the smallest indexed axis."""
    bounds: dict[str, int] = {}
    sources: dict[Node, str] = {v: v.name for v in graph.inputs}  # node -> the input whose integers it holds
    for node in graph.rpo():
        if node.kind is not Kind.CALL or not node.inputs:
            continue
        if node.op in _INDEX_PRESERVING | _INDEXING and node.inputs[0] in sources:
            sources[node] = sources[node.inputs[0]]  # selects some of the integers it reads
        if len(node.inputs) < 2 or node.inputs[1] not in sources or not isinstance(node.inputs[0].type, TensorType):
            continue
        shape = node.inputs[0].type.shape
        axis = node.attrs.get("axis")
        if node.op == "relax.take":
            size = math.prod(shape) if axis is None else shape[int(axis)]  # no axis: a vector
        elif node.op == "relax.gather_elements":
            size = shape[int(axis or 0)]
        elif node.op == "relax.gather_nd":
            depth = node.inputs[1].type.shape[-1] if isinstance(node.inputs[1].type, TensorType) else 1
            batch = int(node.attrs.get("batch_dims") or 0)
            size = min(shape[batch:batch + depth], default=1)
        else:
            continue
        name = sources[node.inputs[1]]
        bounds[name] = min(bounds.get(name, size), max(int(size), 1))
    return bounds


def random_array(ty: Any, rng: np.random.Generator, dtype: str = "float32") -> np.ndarray:
    """A random value for a parameter of Relax type ``ty`` (see :meth:`Workload.from_expr`)."""
    return _random_of(TensorType(tuple(int(d) for d in ty.shape.values), str(ty.dtype) or dtype), rng)


def _random_of(ty: TensorType, rng: np.random.Generator) -> np.ndarray:
    if np.issubdtype(np.dtype(ty.dtype), np.integer):
        # never 0: an integer division by zero in compiled code is a hardware fault that ends
        # the process (SIGFPE), not an exception a check could report
        return rng.integers(1, 8, size=ty.shape).astype(ty.dtype)
    if ty.dtype == "bool":
        return rng.random(ty.shape) < 0.5
    if len(ty.shape) < 2:
        return rng.uniform(0.5, 1.5, size=ty.shape).astype(ty.dtype)
    bound = 1.0 / math.sqrt(max(1, math.prod(ty.shape[1:])))
    return rng.uniform(-bound, bound, size=ty.shape).astype(ty.dtype)


def _children(e: Any) -> list[Any]:
    if isinstance(e, relax.Call):
        return list(e.args)
    if isinstance(e, relax.Tuple):
        return list(e.fields)
    if isinstance(e, relax.TupleGetItem):
        return [e.tuple_value]
    return []


def _post_order(expr: Any) -> list[Any]:
    """Every sub-expression once, children first: an expression written in Python shares
    sub-expressions, and walking it as a tree would take exponential time."""
    order, seen, stack = [], set(), [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
        elif e not in seen:
            seen.add(e)
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(_children(e)))
    return order


def _emit_dag(bb: relax.BlockBuilder, order: list[Any]) -> Any:
    """Emit calls and tuples of ``order`` as bindings, each once; returns the last one's value."""
    value: dict[Any, Any] = {}
    for e in order:
        if isinstance(e, relax.Call):
            value[e] = bb.emit(relax.Call(e.op, [value.get(a, a) for a in e.args], e.attrs, e.ty_args))
        elif isinstance(e, relax.Tuple):
            value[e] = relax.Tuple([value.get(f, f) for f in e.fields])
        elif isinstance(e, relax.TupleGetItem):
            value[e] = bb.emit(relax.TupleGetItem(value.get(e.tuple_value, e.tuple_value), e.index))
    return value.get(order[-1], order[-1])


def _becomes_param(node: Node) -> bool:
    return node.kind in (Kind.CALL, Kind.GETITEM) and isinstance(node.type, TensorType)


def _roofline(calls: Iterable[Node]) -> float:
    """The roofline seconds of ``calls`` (:func:`~gsl_eq.graph.work.roofline_seconds`)."""
    return sum(roofline_seconds(n.op, n.attrs, [i.type for i in n.inputs], n.type) for n in calls)


def _calls(params: list[Node], frontier: list[Node]) -> list[Node]:
    """The calls that compute ``frontier`` from ``params``, children first."""
    return [n for n in Graph(params, frontier).rpo() if n.kind is Kind.CALL]


def _needed(graph: Graph, folded: set[Node]) -> list[Node]:
    """The folded nodes the rest of the graph reads, in graph order.

    A folded node that cannot become a parameter (a tuple, a call returning a
    tuple) stays in the graph, so what it reads is needed in its place.
    """
    succ = graph.successors()
    outputs = set(graph.outputs)
    needed: set[Node] = set()
    for node in reversed(graph.rpo()):
        if node in folded and (node in outputs or any(s not in folded or (s in needed and not _becomes_param(s))
                                                        for s in succ[node])):
            needed.add(node)
    return [n for n in graph.rpo() if n in needed]


def _foldable(graph: Graph, params: set[str]) -> set[Node]:
    folded: set[Node] = set()
    for node in graph.rpo():
        if node.kind is Kind.VAR:
            if node.name in params:
                folded.add(node)
        elif node.kind is Kind.CONST or all(i in folded for i in node.inputs):
            folded.add(node)
    return folded


class _FrozenArrays:
    """The read-only copies workloads hold their parameters in, by id while they live: a workload
    made from another's parameters (a rewrite's result, a fold) shares them instead of copying
    them, and the digest of their bytes (:meth:`Workload.content_key`) is computed once."""

    def __init__(self) -> None:
        self._arrays: dict[int, tuple[weakref.ref, list[bytes]]] = {}

    def frozen(self, array: np.ndarray) -> np.ndarray:
        """``array`` itself if it is one of these copies (still read-only), else a new one."""
        if self._known(array):
            return array
        copy_ = array.copy()
        copy_.flags.writeable = False
        key = id(copy_)
        self._arrays[key] = (weakref.ref(copy_, lambda _, key=key: self._arrays.pop(key, None)), [])
        return copy_

    def digest(self, array: np.ndarray) -> bytes:
        """A digest of ``array``'s bytes, remembered for these copies."""
        known = self._arrays[id(array)][1] if self._known(array) else []
        if not known:
            known.append(hashlib.blake2b(np.ascontiguousarray(array).tobytes(), digest_size=16).digest())
        return known[0]

    def _known(self, array: np.ndarray) -> bool:
        entry = self._arrays.get(id(array))
        return entry is not None and entry[0]() is array and not array.flags.writeable


_FROZEN = _FrozenArrays()


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, tvm.runtime.Tensor):
        return value.numpy()
    if hasattr(value, "detach"):  # a torch tensor
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _from_tvm(value: Any) -> np.ndarray | tuple:
    if isinstance(value, tvm.runtime.Tensor):
        return value.numpy()
    return tuple(_from_tvm(v) for v in value)

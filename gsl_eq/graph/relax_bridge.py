"""Relax IRModule <-> computation graph.

:func:`from_relax` loads the ``main`` function of a module: dataflow bindings of
variables, constants, op calls, tuples and tuple projections, returning one value
or a tuple of values. Anything else (control flow, symbolic shapes, calls to
other functions, non-dataflow code, ops it cannot rebuild) raises
:class:`UnsupportedModuleError` naming the construct and the binding, so a graph
is never a silent approximation of its module.

:func:`to_relax` emits any graph as a well-formed module whose ``main`` keeps the
graph's parameter names and order, with one dataflow binding per node in
reverse post-order. :func:`function_of` wraps a Relax expression over fresh
parameters of given types (to build and time one op or kernel alone).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tvm
import tvm_ffi
from tvm import relax

from ..errors import UnsupportedModuleError
from . import ops
from .graph import Graph, Kind, Node
from .types import TensorType, TupleType, Type, from_relax_type, to_relax_type

# (op, attrs, input count) whose rebuild was checked equal to the loaded call.
_verified_calls: set[tuple[Any, ...]] = set()


def from_relax(mod: tvm.IRModule, func_name: str = "main") -> Graph:
    """Load function ``func_name`` of ``mod`` into a :class:`Graph`, the form rules match and rewrite.

    Parameters
    ----------
    mod
        The Relax module.
    func_name
        The function to load.
    """
    names = sorted(gv.name_hint for gv in mod.get_global_vars())
    if func_name not in names:
        raise UnsupportedModuleError(f"module has no function {func_name!r} (it has {names})")
    func = mod[func_name]
    if not isinstance(func, relax.Function):
        raise UnsupportedModuleError(f"{func_name!r} is a {type(func).__name__}, not a Relax function")
    graph = _Loader(func_name).load(func)
    others = [n for n in names if n != func_name]
    if others:
        raise UnsupportedModuleError(f"module holds functions other than {func_name!r}: {others}; they would be lost")
    return graph


class _Loader:
    def __init__(self, func_name: str):
        self.func_name = func_name
        self.env: dict[Any, Node] = {}

    def where(self, var: Any) -> str:
        return f"{self.func_name}: binding {var.name!r}"

    def load(self, func: relax.Function) -> Graph:
        params = []
        for p in func.params:
            ty = from_relax_type(p.ty, f"{self.func_name}: parameter {p.name!r}")
            if not isinstance(ty, TensorType):
                raise UnsupportedModuleError(f"{self.func_name}: parameter {p.name!r} is a tuple; parameters must be tensors")
            self.env[p] = params_node = Node.var(p.name, ty)
            params.append(params_node)
        body = func.body
        if not isinstance(body, relax.SeqExpr):
            raise UnsupportedModuleError(f"{self.func_name}: body is a {type(body).__name__}, not a sequence of bindings")
        for block in body.blocks:
            dataflow = isinstance(block, relax.DataflowBlock)
            for binding in block.bindings:
                if isinstance(binding, relax.MatchCast):
                    raise UnsupportedModuleError(f"{self.where(binding.var)}: match_cast is not supported")
                self.env[binding.var] = self.node(binding.value, binding.var)
                if not dataflow:
                    raise UnsupportedModuleError(f"{self.where(binding.var)}: non-dataflow code ({_construct(binding.value)} outside a dataflow block)")
        result = body.body
        if isinstance(result, relax.Var) and result in self.env and self.env[result].kind is Kind.TUPLE:
            return Graph(params, self.env[result].inputs, returns_tuple=True)
        if isinstance(result, relax.Tuple):
            return Graph(params, [self.node(f, None) for f in result.fields], returns_tuple=True)
        return Graph(params, [self.node(result, None)], returns_tuple=False)

    def node(self, expr: Any, var: Any) -> Node:
        """The node of expression ``expr``, bound to ``var`` (None for a nested or returned value)."""
        where = self.where(var) if var is not None else f"{self.func_name}: returned value"
        if isinstance(expr, relax.Var):
            if expr not in self.env:
                raise UnsupportedModuleError(f"{where}: reads {expr.name!r}, which is not defined in the function")
            return self.env[expr]
        if isinstance(expr, tvm.ir.GenericConst):
            return Node.const(ops.constant_array(expr))
        if isinstance(expr, relax.Tuple):
            return Node.tuple([self.node(f, var) for f in expr.fields])
        if isinstance(expr, relax.TupleGetItem):
            return Node.getitem(self.node(expr.tuple_value, var), int(expr.index))
        if isinstance(expr, relax.Call):
            return self.call(expr, var, where)
        raise UnsupportedModuleError(f"{where}: {_construct(expr)} is not supported")

    def call(self, call: relax.Call, var: Any, where: str) -> Node:
        if not isinstance(call.op, tvm.ir.Op):
            callee = getattr(call.op, "name_hint", None) or getattr(call.op, "global_symbol", None) or type(call.op).__name__
            raise UnsupportedModuleError(f"{where}: call to another function ({callee}); only Relax ops are supported")
        callees = [a for a in call.args if isinstance(a, (tvm.ir.GlobalVar, relax.ExternFunc))]
        if callees:
            callee = getattr(callees[0], "name_hint", None) or callees[0].global_symbol
            raise UnsupportedModuleError(f"{where}: call to another function ({call.op.name} of {callee}); only Relax ops are supported")
        if call.ty_args:
            raise UnsupportedModuleError(f"{where}: {call.op.name} has type arguments; only plain op calls are supported")
        sig, args, attrs = ops.split_call(call, where)
        key = (sig.name, ops.freeze(attrs), len(args))
        if key not in _verified_calls:
            if not _same_call(ops.make_call(sig.name, args, attrs), call):
                raise UnsupportedModuleError(f"{where}: {sig.name} with {attrs} cannot be rebuilt from its constructor")
            _verified_calls.add(key)
        inputs = [self.node(a, var) for a in args]
        out_type = from_relax_type(call.ty, where)
        attrs = ops.implicit_out_dtype(sig.name, attrs, [i.type for i in inputs], out_type)
        return Node.call(sig.name, inputs, attrs, type=out_type)


def _same_call(a: relax.Call, b: relax.Call) -> bool:
    # Compares what defines a call, not its type: a rebuilt call is not normalized yet.
    return (
        a.op.same_as(b.op)
        and len(a.args) == len(b.args)
        and all(tvm_ffi.structural_equal(x, y) for x, y in zip(a.args, b.args))
        and tvm_ffi.structural_equal(a.attrs, b.attrs)
    )


def _construct(expr: Any) -> str:
    kinds = {relax.If: "control flow (relax.If)", relax.Function: "a nested function", relax.ShapeExpr: "a shape value"}
    for cls, text in kinds.items():
        if isinstance(expr, cls):
            return text
    if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
        return f"a call of {expr.op.name}"
    return f"a {type(expr).__name__}"


def to_relax(graph: Graph, func_name: str = "main") -> tvm.IRModule:
    """Emit ``graph`` as a module with one Relax function ``func_name``: :func:`from_relax` undone.

    Parameters
    ----------
    graph
        The graph.
    func_name
        The function's name.
    """
    params = [relax.Var(n.name, to_relax_type(n.type)) for n in graph.inputs]
    values: dict[Node, Any] = dict(zip(graph.inputs, params))
    bb = relax.BlockBuilder()
    single = graph.outputs[0] if not graph.returns_tuple else None
    with bb.function(func_name, params):
        with bb.dataflow():
            for node in graph.rpo():
                if node in values:
                    continue
                if node.kind is Kind.VAR:
                    raise ValueError(f"variable {node.name!r} is used but is not a parameter of the graph")
                if node.kind is Kind.CONST:
                    values[node] = relax.const(node.value, str(node.value.dtype))
                    continue
                emit = bb.emit_output if node is single else bb.emit
                values[node] = emit(_expr(node, [values[i] for i in node.inputs]))
                emitted = from_relax_type(values[node].ty, f"node {node!r}")
                if emitted != node.type:
                    raise TypeError(f"{node!r}: graph says {node.type}, TVM infers {emitted}")
            if graph.returns_tuple:
                result = bb.emit_output(relax.Tuple([values[o] for o in graph.outputs]))
            elif single.kind in (Kind.VAR, Kind.CONST):
                result = bb.emit_output(values[single])
            else:
                result = values[single]
        bb.emit_func_output(result)
    return bb.get()


def function_of(inputs: Sequence[Type], body: Callable[[list[relax.Expr]], relax.Expr]) -> tvm.IRModule:
    """The module whose ``main(x0, x1, ...)`` returns ``body([x0, x1, ...])``, over fresh
    parameters of types ``inputs`` (a tuple type is passed as a tuple of parameters, its
    fields in order)."""
    params: list[relax.Var] = []

    def argument(ty: Type) -> relax.Expr:
        if isinstance(ty, TupleType):
            return relax.Tuple([argument(f) for f in ty.fields])
        var = relax.Var(f"x{len(params)}", relax.TensorType(ty.shape, ty.dtype))
        params.append(var)
        return var

    args = [argument(t) for t in inputs]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(body(args))
        bb.emit_func_output(out)
    return bb.get()


def _expr(node: Node, inputs: list[Any]) -> Any:
    if node.kind is Kind.CALL:
        return ops.make_call(node.op, inputs, node.attrs)
    if node.kind is Kind.TUPLE:
        return relax.Tuple(inputs)
    return relax.TupleGetItem(inputs[0], node.attrs["index"])

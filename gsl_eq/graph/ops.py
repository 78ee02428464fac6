"""Relax operator signatures: what is an input, what is an attribute, how to call it.

A Relax call mixes data arguments (tensors, tuples of tensors) with
compile-time arguments (a ``ShapeExpr`` for reshape, integers for clip, tuples
for strided_slice) and an attribute object. gsl_eq sees one uniform thing: a
call has ordered data *inputs* and a dict of plain-valued *attributes*, named as
the keyword arguments of the op's Python constructor in ``tvm.relax.op``
(``relax.op.nn.conv2d(data, weight, strides=..., padding=...)``).

Calls are always rebuilt through that constructor, so every call gsl_eq creates
is one TVM itself would create. The loader checks, once per distinct attribute
set, that rebuilding a loaded call gives back a structurally equal call.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from ..errors import UnsupportedModuleError
from .types import Type, from_relax_type, is_data_type, to_relax_type

_NO_DEFAULT = inspect.Parameter.empty


@dataclass(frozen=True)
class OpSignature:
    """How one Relax op is called: its data parameters and its attributes.

    ``inputs`` are the data parameter names in order; ``attrs`` maps every
    attribute name to its default (``inspect.Parameter.empty`` when the
    constructor requires it). ``variadic_input`` tells that the op takes its
    data as one tuple (``concat``).

    Attributes
    ----------
    name
        The op's full Relax name (``"relax.nn.conv2d"``).
    constructor
        Its Python constructor in ``tvm.relax.op``.
    params
        The constructor's parameter names, in order.
    inputs
        The data parameter names, in order.
    attrs
        Each attribute's default, by name (``inspect.Parameter.empty``: required).
    variadic_input
        The op takes its data as one tuple.
    """

    name: str
    constructor: Callable[..., Any]
    params: tuple[str, ...]
    inputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    variadic_input: bool

    @property
    def num_inputs(self) -> int:
        """The number of data inputs."""
        return len(self.inputs)

    def required_attrs(self) -> tuple[str, ...]:
        """The attributes the constructor has no default for."""
        return tuple(k for k, v in self.attrs.items() if v is _NO_DEFAULT)


def op_names() -> list[str]:
    """Names of every Relax op that has a Python constructor, e.g. ``relax.nn.conv2d``."""
    return sorted(n for n in tvm.ir.Op.list_op_names() if n.startswith("relax.") and _constructor(n))


def _constructor(name: str) -> Callable[..., Any] | None:
    scope: Any = relax.op
    *path, leaf = name.split(".")[1:]
    for part in path:
        scope = getattr(scope, part, None)
        if scope is None:
            return None
    fn = getattr(scope, leaf, None)
    return fn if inspect.isfunction(fn) else None


@functools.cache
def signature(name: str) -> OpSignature:
    """The signature of Relax op ``name``, cached.

    Parameters
    ----------
    name
        The op's name, with or without the ``relax.`` prefix (``"nn.conv2d"``).

    Raises
    ------
    KeyError
        An unknown op (or one with no Python constructor).

    Examples
    --------
    ::

        sig = signature("relax.nn.conv2d")
        sig.inputs           # ('data', 'weight')
        sig.attrs["groups"]  # 1, its default
    """
    if not name.startswith("relax."):
        name = "relax." + name
    fn = _constructor(name)
    if fn is None:
        raise KeyError(name)
    op = tvm.ir.Op.get(name)
    params = tuple(inspect.signature(fn).parameters.values())
    names = tuple(p.name for p in params)
    # Op registry argument names can differ from the constructor's (relu: x vs data),
    # so data parameters are found by position.
    tensor_args = [i for i, a in enumerate(op.arguments) if "Tensor" in str(a.type_info) and i < len(names)]
    data = [names[i] for i in tensor_args]
    variadic = any("Tuple" in str(op.arguments[i].type_info) for i in tensor_args)
    attrs = {p.name: p.default for p in params if p.name not in data}
    return OpSignature(name, fn, names, tuple(data), attrs, variadic)


def plain(value: Any, where: str) -> Any:
    """Convert a TVM attribute or compile-time argument into a plain Python value."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):  # also TVM's dtype, a str subclass
        return str(value)
    if isinstance(value, tvm.tirx.IntImm):
        return bool(value.value) if str(value.ty) == "T.bool" else int(value.value)
    if isinstance(value, tvm.tirx.FloatImm):
        return float(value.value)
    if isinstance(value, tvm.ir.StringImm):
        return str(value.value)
    if isinstance(value, relax.ShapeExpr):
        return tuple(plain(v, where) for v in value.values)
    if isinstance(value, relax.Tuple):
        return tuple(plain(v, where) for v in value.fields)
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return tuple(plain(v, where) for v in value)
    shown = str(value).splitlines()[0] if str(value).strip() else repr(value)  # a TVM expression prints its metadata too
    raise UnsupportedModuleError(f"{where}: attribute value {shown} of type {type(value).__name__} is not a constant "
                                 "(computed at run time)")


def call_attrs(call: relax.Call, where: str) -> dict[str, Any]:
    """The attribute object of ``call`` as a dict of plain values."""
    if call.attrs is None:
        return {}
    fields = type(call.attrs).__tvm_ffi_type_info__.fields
    return {f.name: plain(getattr(call.attrs, f.name), where) for f in fields}


def split_call(call: relax.Call, where: str) -> tuple[OpSignature, list[Any], dict[str, Any]]:
    """Split a Relax call into (signature, data arguments, plain attributes)."""
    op_name = call.op.name
    try:
        sig = signature(op_name)
    except KeyError:
        raise UnsupportedModuleError(f"{where}: op {op_name} has no constructor in tvm.relax.op") from None
    if len(call.args) > len(sig.params):
        raise UnsupportedModuleError(f"{where}: {op_name} called with {len(call.args)} arguments, its constructor takes {len(sig.params)}")
    data, attrs = [], call_attrs(call, where)
    for param, arg in zip(sig.params, call.args):
        if param in sig.inputs:
            if not is_data_type(arg.ty):
                raise UnsupportedModuleError(f"{where}: argument {param!r} of {op_name} is a {arg.ty}, not a tensor")
            data.append(arg)
        else:
            attrs[param] = plain(arg, where)
    unknown = set(attrs) - set(sig.attrs)
    if unknown:
        raise UnsupportedModuleError(f"{where}: {op_name} carries attributes {sorted(unknown)} its constructor does not take")
    return sig, data, attrs


def make_call(op: str, inputs: Sequence[Any], attrs: Mapping[str, Any]) -> relax.Call:
    """Build the Relax call of ``op`` on Relax expressions ``inputs`` with plain ``attrs``."""
    sig = signature(op)
    if len(inputs) != sig.num_inputs:
        raise ValueError(f"{op} takes {sig.num_inputs} inputs ({', '.join(sig.inputs)}), got {len(inputs)}")
    return sig.constructor(**dict(zip(sig.inputs, inputs)), **attrs)


def freeze(attrs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable, order-independent key for an attribute dict."""
    return tuple(sorted(attrs.items()))


@functools.lru_cache(maxsize=65536)
def _infer(op: str, attrs_key: tuple[tuple[str, Any], ...], input_types: tuple[Type, ...]) -> tuple[Type, tuple[tuple[str, Any], ...]]:
    bb = relax.BlockBuilder()
    args = [relax.Var(f"in{i}", to_relax_type(t)) for i, t in enumerate(input_types)]
    with bb.testing_scope(def_vars=[]):
        call = make_call(op, args, dict(attrs_key))
        value = bb.normalize(call)
    _, _, canonical = split_call(call, op)
    return from_relax_type(value.ty, f"{op}{dict(attrs_key)}"), freeze(canonical)


def infer(op: str, attrs: Mapping[str, Any], input_types: Sequence[Type]) -> tuple[Type, dict[str, Any]]:
    """The output type TVM infers for a call of ``op``, and its complete, canonical attributes
    (defaults filled in, normalized as TVM stores them: ``padding=1`` becomes ``(1, 1, 1, 1)``).

    Cached per (op, attrs, input types). Raises ``TypeError`` when TVM rejects the call.
    """
    try:
        ty, canonical = _infer(op, freeze(attrs), tuple(input_types))
    except (tvm.error.InternalError, tvm.error.DiagnosticError, ValueError, TypeError, RuntimeError) as err:
        lines = str(err).strip().splitlines() or [type(err).__name__]
        first = re.sub(r"^In ir\.Op\(.*?support_level=\d+\), ", "", lines[-1])
        raise TypeError(f"TVM cannot type {op}{dict(attrs)} on {[str(t) for t in input_types]}: {first}") from None
    return ty, dict(canonical)


def implicit_out_dtype(op: str, attrs: dict[str, Any], input_types: Sequence[Type], out_type: Type) -> dict[str, Any]:
    """``attrs`` with ``out_dtype`` unset where TVM infers the same output type without it.

    PyTorch's exporter writes ``out_dtype="float32"`` on a float32 conv; a rule's target (or a
    module written by hand) leaves it unset. Both are one op: read the same way, their calls are
    equal, in the e-graph and to a rule that asks for the same attributes.
    """
    if attrs.get("out_dtype") is None:
        return attrs
    unset = {**attrs, "out_dtype": None}
    try:
        return unset if infer_type(op, unset, input_types) == out_type else attrs
    except TypeError:
        return attrs


def infer_type(op: str, attrs: Mapping[str, Any], input_types: Sequence[Type]) -> Type:
    """The output type TVM infers for a call of ``op`` (see :func:`infer`).

    Parameters
    ----------
    op
        The op's full Relax name.
    attrs
        Its attributes.
    input_types
        The types of its data inputs, in order.

    Raises
    ------
    TypeError
        TVM rejects the call.
    """
    return infer(op, attrs, input_types)[0]


def constant_array(const: Any) -> np.ndarray:
    """The value of a Relax constant as a NumPy array."""
    return const.value.numpy()

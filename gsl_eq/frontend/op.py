"""Shorthands for every Relax op: ``op.Conv2D(x, w, strides=(2, 2))`` builds a call pattern.

Names are generated from the op registry by CamelCasing the op's name
(``relax.nn.conv2d`` -> ``Conv2D``, ``relax.nn.batch_norm`` -> ``BatchNorm``,
``relax.nn.relu`` -> ``ReLU``); GSL's own names are kept where Relax calls the op
differently (``Concatenate`` for ``relax.concat``, ``Transpose`` for
``relax.permute_dims``). Attribute keywords are the Relax constructor's.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..graph import ops
from .errors import UnknownOpError
from .pat import Call

# Words whose capitalization is not just a capital first letter.
_WORDS = {
    "relu": "ReLU", "leakyrelu": "LeakyReLU", "prelu": "PReLU", "gelu": "GELU", "silu": "SiLU",
    "selu": "SELU", "matmul": "MatMul", "nd": "ND", "fma": "FMA", "rms": "RMS", "isfinite": "IsFinite",
    "isinf": "IsInf", "isnan": "IsNaN", "argmax": "ArgMax", "argmin": "ArgMin", "argsort": "ArgSort",
    "cumsum": "CumSum", "cumprod": "CumProd", "allreduce": "AllReduce", "allgather": "AllGather",
    "topk": "TopK", "vdevice": "VDevice", "roi": "ROI", "astype": "AsType", "nonzero": "NonZero",
}

#: GSL's names for Relax ops, kept beside the generated ones.
ALIASES = {"Concatenate": "relax.concat", "Transpose": "relax.permute_dims"}


class Op:
    """A shorthand for one Relax op; calling it builds a :class:`~gsl_eq.frontend.pat.Call`.
    The module holds one for every op (``op.Conv2D``, ``op.MatMul``, ...); an unknown name raises
    :class:`~gsl_eq.frontend.errors.UnknownOpError`, suggesting close ones.

    Parameters
    ----------
    relax_name
        The op's full Relax name (``"relax.nn.conv2d"``).

    Examples
    --------
    ::

        conv = op.Conv2D(x, w, strides=(2, 2))   # pat.Call("relax.nn.conv2d", x, w, strides=(2, 2))
        op.Conv2D.signature.attrs                # its attributes, with their defaults
    """

    __slots__ = ("relax_name",)

    def __init__(self, relax_name: str):
        self.relax_name = relax_name

    def __call__(self, *args: Any, **attrs: Any) -> Call:
        return Call(self.relax_name, *args, **attrs)

    @property
    def signature(self) -> ops.OpSignature:
        """The op's :class:`~gsl_eq.graph.ops.OpSignature`: its inputs and attributes."""
        return ops.signature(self.relax_name)

    def __repr__(self) -> str:
        return f"op<{self.relax_name}>"


def _camel(word: str) -> str:
    if word in _WORDS:
        return _WORDS[word]
    return re.sub(r"(\d)d$", r"\1D", word[:1].upper() + word[1:])


def _shorthand_names() -> dict[str, str]:
    """Shorthand name -> Relax op name, for every op with a constructor."""
    by_name: dict[str, list[str]] = {}
    for relax_name in ops.op_names():
        leaf = relax_name.rsplit(".", 1)[1]
        by_name.setdefault("".join(_camel(w) for w in leaf.split("_")), []).append(relax_name)
    names = {}
    for short, relax_names in by_name.items():
        for relax_name in relax_names:
            namespace = relax_name.split(".")[1:-1]
            # Ops outside relax.* and relax.nn.* keep their namespace when their name is taken.
            clash = len(relax_names) > 1 and namespace not in ([], ["nn"])
            names[_camel(namespace[0]) + short if clash else short] = relax_name
    return names | ALIASES


SHORTHANDS: dict[str, str] = _shorthand_names()
globals().update({short: Op(relax_name) for short, relax_name in SHORTHANDS.items()})
__all__ = sorted(SHORTHANDS)


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)
    by_case = [short for short in SHORTHANDS if short.lower() == name.lower()]
    close = by_case or difflib.get_close_matches(name, SHORTHANDS, n=3)
    hint = f"; did you mean {', '.join('op.' + c for c in close)}?" if close else ""
    raise UnknownOpError(f"op.{name} is not a Relax op shorthand{hint}")

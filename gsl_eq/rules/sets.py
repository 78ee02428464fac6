"""Rule sets by name, as the command line and sweeps take them: a named group of the library, or a
sum of groups joined by ``+`` (``tensat+default``: TASO's substitutions as TENSAT ran them, then the
default pipeline).

    rule_set("default")            # rules.default()
    rule_set("tensat+default")     # [*rules.tensat(), *rules.default()], each rule once
    check_rule_set("default+nosuch")  # GslEqError: names the unknown part and the sets there are
"""

from __future__ import annotations

from typing import Callable

from ..errors import GslEqError
from ..frontend import Subst

#: The named rule sets and what each holds; a sum of names (``tensat+default``) is a set too.
#: ``default+algebraic`` is listed for its common use: it is the sum of its two parts.
RULE_SETS = {
    "default": "a safe inference pipeline: legalization, structural clean-up, batch norms folded or lowered, "
               "fusions that never add work",
    "all": "every rule of the library but the algebraic identities",
    "algebraic": "algebraic identities (commutativity, associativity...; for saturate mode)",
    "default+algebraic": "default and algebraic together",
    "tvm": "the rules mirroring TVM's CombineParallelMatmul, FoldBatchnormToConv2D, "
           "DecomposeOpsForInference and RemoveRedundantReshape",
    "cpu": "forms TVM's CPU backend may run faster (a 1x1 conv as a matmul, strided or not)",
    "taso": "TASO's substitutions with a Relax meaning (single_rules.txt and multi_rules.txt)",
    "tensat": "TENSAT's experiment set of TASO's substitutions (converted.txt, converted_multi.txt and TASO's hand-written conv merges)",
}


def _groups() -> dict[str, Callable[[], list[Subst]]]:
    from . import algebraic, all as every, cpu, default, taso, tensat, tvm_equivalents

    return {"default": default, "all": every, "algebraic": algebraic, "tvm": tvm_equivalents, "cpu": cpu, "taso": taso,
            "tensat": tensat}


def parts_of(spec: str) -> list[str]:
    """The named groups of the rule set ``spec`` (``"tensat+default"`` -> ``["tensat", "default"]``);
    a :class:`~gsl_eq.errors.GslEqError` naming the part that is not a group, and the groups there are."""
    if not isinstance(spec, str) or not spec.strip():
        raise GslEqError(f"a rule set is a name or a sum of names such as tensat+default, not {spec!r}")
    parts = [part.strip() for part in spec.split("+")]
    groups = _groups()
    for part in parts:
        if part not in groups:
            raise GslEqError(f"unknown rule set {part!r}" + (f" in {spec!r}" if part != spec else "") +
                             f"; the sets are {', '.join(groups)}, or sums of them such as tensat+default")
    return parts


def check_rule_set(spec: str) -> str:
    """``spec``, checked to name a rule set (see :func:`parts_of`), with no rule built."""
    parts_of(spec)
    return spec


def rule_set(spec: str) -> list[Subst]:
    """The rules of the rule set ``spec``: a name of :data:`RULE_SETS`, or a sum of them joined by
    ``+``, its parts' rules in order, each rule once (the first of those with one name)."""
    groups = _groups()
    seen: dict[str, Subst] = {}
    for part in parts_of(spec):
        for rule in groups[part]():
            seen.setdefault(rule.name, rule)
    return list(seen.values())

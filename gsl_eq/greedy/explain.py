"""Why a rule does (not) fire on a workload: each place its source partly matches, and where it stopped.

A place is a node where the rule's first source output could start: a call of
the same op (or an op with the trait) and arity. At each, greedy mode's matcher
runs with failure recording on; the deepest failure (the one reached with the
most patterns matched) is the reason: a pattern that met another kind of
node or op, a guard that was false (with the values it compared), an inner
node with a successor outside the match (the rewrite would remove a node another reads), a missing
output of a multi-output source. Where the source matches, the target is built
as the executors build it: it is refused when TVM cannot type it or an output's
type would change, else the rule fires there.

Each place is tried on its own: a greedy pass also skips matches that overlap
an earlier one, which this explanation does not count as a reason.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import tvm

from ..errors import ArgumentError
from ..frontend import Subst, spec
from ..frontend.pat import Call, Pattern, Variadic
from ..graph import Graph, Kind, Node
from ..workload import Workload
from .match import Failure, Matcher
from .rewriter import Rejection, build_target


@dataclass
class Attempt:
    """The rule at one place: ``node`` (its position in reverse post-order, op and type), the
    ``outcome`` (``fires``, ``no match``, ``target refused``), and for a failure the source
    pattern it stopped at (with the rule's line), the reason, and how many patterns had matched."""

    node: str
    outcome: str
    pattern: str | None = None
    reason: str | None = None
    matched: int = 0


@dataclass
class Explanation:
    """What :func:`explain` found: one :class:`Attempt` per place the source could start.

    Attributes
    ----------
    rule
        The rule's name.
    source_patterns
        The patterns of the rule's source.
    attempts
        One :class:`Attempt` per place the source could start, in reverse post-order.
    """

    rule: str
    source_patterns: int
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def fires(self) -> int:
        """Places where the rule would rewrite."""
        return sum(a.outcome == "fires" for a in self.attempts)

    def reasons(self) -> dict[str, int]:
        """How many places stopped for each reason (values left out, so alike reasons group)."""
        counts: dict[str, int] = {}
        for a in self.attempts:
            if a.outcome != "fires":
                key = f"{a.outcome}: {(a.reason or '').split(':')[0]}"
                counts[key] = counts.get(key, 0) + 1
        return counts

    def summary(self) -> str:
        if not self.attempts:
            return f"{self.rule}: no node where its source could start (no call of its root op with that arity)"
        return f"{self.rule}: fires at {self.fires} of {len(self.attempts)} places its source could start"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fires": self.fires, "summary": self.summary()}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def __str__(self) -> str:
        lines = [self.summary()]
        for a in self.attempts:
            line = f"  {a.node}: {a.outcome}"
            if a.reason:
                line += f" after {a.matched} of {self.source_patterns} patterns, at {a.pattern}: {a.reason}"
            lines.append(line)
        return "\n".join(lines)


def explain(rule: Subst, workload: Workload | Graph) -> Explanation:
    """Where ``rule``'s source could match in ``workload`` and why it does not (or does) fire there:
    for a rule that never fires, the pattern, guard or type that stops it.

    Parameters
    ----------
    rule
        The rule.
    workload
        A workload, or its computation graph.

    Examples
    --------
    ::

        why = gsl_eq.explain(rules.diamond_conv_add(), wl)
        print(why)   # node #7 relax.add ...: no match after 4 of 7 patterns, at Call relax.nn.conv2d
                     # (conv.py:26): guard strides=... is false: expected (1, 1), the node has (2, 2)
    """
    _check_arguments(rule, workload)
    graph = workload.graph if isinstance(workload, Workload) else workload
    order = {node: k for k, node in enumerate(graph.rpo())}
    first = Matcher(rule, graph).first_output()
    result = Explanation(rule.name, len(rule.source))
    for node in graph.rpo():
        if not _could_start(first, node):
            continue
        matcher = Matcher(rule, graph)
        matcher.failures = []
        where = f"node #{order[node]} {node.op or node.kind.value}: {node.type}"
        m = matcher.match_at(node, first)
        if m is None:
            stop = _deepest(matcher.failures)
            result.attempts.append(Attempt(where, "no match", _pattern(stop.pattern), stop.reason, stop.depth)
                                   if stop else Attempt(where, "no match", reason="no reason recorded"))
            continue
        built = build_target(rule, m)
        if isinstance(built, Rejection):
            matched = len(rule.source)
            result.attempts.append(Attempt(where, "target refused", "target", str(built), matched))
        else:
            result.attempts.append(Attempt(where, "fires"))
    return result


def _check_arguments(rule: Any, workload: Any) -> None:
    """An :class:`~gsl_eq.errors.ArgumentError` naming what ``explain`` got, and what it takes, for
    anything but one rule and a workload or graph."""
    if not isinstance(rule, Subst):
        hint = (f"; a library rule is a function of gsl_eq.rules: explain(rules.{rule}(), wl), or pick it from "
                f"a set: next(r for r in rules.default() if r.name == {rule!r})" if isinstance(rule, str) else
                "; for several rules: [explain(r, wl) for r in rules]" if isinstance(rule, (list, tuple)) else "")
        raise ArgumentError(f"explain takes a rule (a gsl_eq.Subst) first, got {_shown(rule)}{hint}")
    if not isinstance(workload, (Workload, Graph)):
        hint = "; for a bare module: explain(rule, Workload(mod))" if isinstance(workload, tvm.IRModule) else ""
        raise ArgumentError(f"explain takes a gsl_eq.Workload (or a gsl_eq.Graph) second, got "
                            f"{_shown(workload)}{hint}")


def _shown(value: Any) -> str:
    text = repr(value)
    if "\n" in text:  # a TVM object prints as its script
        name = type(value).__name__
        return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"
    return f"the {type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _could_start(p: Pattern, node: Node) -> bool:
    """Whether the first source output could match ``node``: same op (or trait) and arity."""
    if isinstance(p, Variadic):
        p = p.field
    if isinstance(p, Call):
        if node.kind is not Kind.CALL or len(node.inputs) != len(p.inputs):
            return False
        return node.op == p.op if isinstance(p.op, str) else spec.has_trait(node.op, p.op.trait)
    return node.kind is not Kind.VAR


def _deepest(failures: list[Failure]) -> Failure | None:
    """The failure reached with the most patterns matched (the last of those: the innermost)."""
    best = None
    for f in failures:
        if best is None or f.depth >= best.depth:
            best = f
    return best


def _pattern(p: Pattern | None) -> str:
    if p is None:
        return "the whole match"
    return f"{p.describe()} ({os.path.basename(p.loc.filename)}:{p.loc.lineno})"

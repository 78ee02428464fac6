"""A numeric soundness check for rules: draw instances, rewrite them, run both with TVM.

For each instance :class:`~.synthesize.Synthesizer` draws (a small graph the
rule's source matches), greedy mode rewrites it once; TVM builds the source
and the rewritten graph and runs both on the same random inputs and
parameters. The verdict:

* ``sound``: every instance rewritten computes what its source computes;
* ``unsound``: some instance differs, in values or in an output's type (greedy
  and saturate mode refuse such a rewrite, but the rule states an equation that
  does not hold); the counterexample is the smallest instance found with
  wrong values (the ones a rewrite would miscompile), else the smallest with
  a wrong type: its Relax module, attributes and largest difference;
* ``untyped``: the source matched but TVM could not type the target on any
  instance, so the rule never fires there;
* ``no instance``: no draw matched in all the tries: the guards are
  unsatisfiable or too narrow for the draws, and the rule may never fire;
* ``unbuildable``: TVM cannot build the source of any instance, so there is
  nothing to compare with (a legalizing rule's source, by design).

Instances whose target cannot be typed are counted even when others are
rewritten, and the first such instance is kept to show. Results are
deterministic for a seed.
"""

from __future__ import annotations

import enum
import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from ..frontend import Subst
from ..greedy.rewriter import Refusal, Rejection, build_target, to_workload
from ..errors import WorkloadError
from ..workload import Workload, random_array
from ..graph.types import to_relax_type
from .synthesize import Instance, Synthesizer

#: Relative and absolute tolerance per dtype (integers and booleans compare exactly).
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 2e-2}


class Verdict(str, enum.Enum):
    SOUND = "sound"
    UNSOUND = "unsound"
    UNTYPED = "untyped"
    NO_INSTANCE = "no instance"
    UNBUILDABLE = "unbuildable"


@dataclass
class Example:
    """One instance, shown: its inputs (name, shape, dtype), its calls' attributes, the
    Relax module of its source and what went wrong on it."""

    inputs: list[tuple[str, tuple[int, ...], str]]
    attributes: list[tuple[str, dict[str, Any]]]
    module: str
    problem: str
    max_difference: float | None = None


@dataclass
class RuleCheck:
    """What checking one rule found (:func:`check_rule`); ``ok`` says whether nothing is wrong.

    Attributes
    ----------
    rule
        The rule's name.
    verdict
        ``sound``, ``unsound`` (an instance computed something else), ``untyped`` (no target
        could be typed), ``unbuildable`` (TVM could build no source) or ``no instance``.
    instances
        Instances rewritten and compared.
    tries
        Draws made.
    untyped
        Instances whose target could not be typed.
    failures
        Instances that computed something else.
    variety
        Distinct input shapes, attribute sets and variadic lengths among the compared
        instances (keys ``shapes``, ``attributes``, ``lengths``).
    counterexample
        A failing instance (:class:`Example`): one with wrong values before one with a wrong
        type, then the smallest; None if none failed.
    untyped_example
        The first instance whose target could not be typed, or None.
    unbuildable
        Instances whose source TVM cannot build.
    unbuildable_example
        The first of those, or None.
    misses
        Why draws produced no instance, with how often.
    checked
        The input shapes of each instance compared, in the order drawn.
    """

    rule: str
    verdict: Verdict
    instances: int
    tries: int
    untyped: int = 0
    failures: int = 0
    variety: dict[str, int] = field(default_factory=dict)
    counterexample: Example | None = None
    untyped_example: Example | None = None
    unbuildable: int = 0
    unbuildable_example: Example | None = None
    misses: dict[str, int] = field(default_factory=dict)
    checked: list[tuple[tuple[int, ...], ...]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether nothing is wrong: sound, with no instance the target could not be typed on."""
        return self.verdict is Verdict.SOUND and not self.untyped

    def summary(self) -> str:
        """One line: the verdict and the evidence."""
        if self.verdict is Verdict.UNSOUND:
            ex = self.counterexample
            return (f"unsound: {self.failures} of {self.instances + self.failures} instances differ; smallest: "
                    f"{_inputs(ex)}, max difference {ex.max_difference:.3g}")
        if self.verdict is Verdict.UNTYPED:
            return f"target cannot be typed on any of {self.untyped} instances, e.g. {_inputs(self.untyped_example)}: " \
                   f"{self.untyped_example.problem}"
        if self.verdict is Verdict.UNBUILDABLE:
            return f"TVM cannot build the source of any of {self.unbuildable} instances, e.g. " \
                   f"{_inputs(self.unbuildable_example)}: {self.unbuildable_example.problem}"
        if self.verdict is Verdict.NO_INSTANCE:
            why = "; ".join(f"{reason} x{n}" for reason, n in self.misses.items())
            return f"no instance found in {self.tries} tries ({why}): the rule may never fire"
        line = (f"sound on {self.instances} instances ({self.variety.get('shapes', 0)} input shapes, "
                f"{self.variety.get('attributes', 0)} attribute sets")
        if self.variety.get("lengths", 0) > 1:
            line += f", {self.variety['lengths']} variadic lengths"
        line += ")"
        if self.untyped:
            line += f"; target cannot be typed on {self.untyped} more, e.g. {_inputs(self.untyped_example)}"
        if self.unbuildable:
            line += f"; TVM cannot build or run the source of {self.unbuildable} more"
        return line

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["summary"] = self.summary()
        return data

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)


def check_rule(rule: Subst, trials: int = 8, seed: int = 0, tries: int | None = None) -> RuleCheck:
    """Check ``rule`` numerically: whether its target computes what its source does, on random
    instances (shapes, attributes and values) of its source; see the module docstring for the verdicts.

    Parameters
    ----------
    rule
        The rule.
    trials
        How many instances to check.
    seed
        The seed the instances are drawn from.
    tries
        Draws at the most (a draw the source does not match, or whose source TVM cannot build,
        is a try but no instance); default ``10 * trials``.

    Raises
    ------
    ValueError
        ``trials`` below 1.

    Examples
    --------
    ::

        result = gsl_eq.check_rule(my_rule, trials=20)
        print(result.summary())        # sound on 20 instances (17 input shapes, ...)
        result.counterexample.module   # when unsound: the Relax module of the smallest failing source
    """
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    tries = 10 * trials if tries is None else tries
    synthesizer = Synthesizer(rule, random.Random(seed))
    result = RuleCheck(rule.name, Verdict.NO_INSTANCE, 0, 0)
    shapes, attributes, lengths = set(), set(), set()
    failing: list[tuple[tuple[bool, int], Example]] = []  # wrong values first, then smallest
    for k in range(tries):
        if result.instances + result.failures + result.untyped >= trials:  # an unbuildable source checks nothing
            break
        result.tries += 1
        instance = synthesizer.draw()
        if instance is None:
            continue
        outcome = _check_instance(rule, instance, seed + k)
        if isinstance(outcome, Rejection):
            result.untyped += 1
            result.untyped_example = result.untyped_example or _example(instance, str(outcome))
        elif isinstance(outcome, WorkloadError):
            result.unbuildable += 1
            result.unbuildable_example = result.unbuildable_example or _example(instance, str(outcome))
        elif outcome is not None:
            result.failures += 1
            failing.append(((outcome.wrong_type, instance.size), _example(instance, outcome.problem, outcome.difference)))
        else:
            result.instances += 1
            result.checked.append(tuple(shape for _, shape, _ in instance.shapes()))
            shapes.add(instance.shapes())
            attributes.add(repr(instance.attributes()))
            lengths.add(instance.lengths())
    result.misses = dict(synthesizer.misses)
    result.variety = {"shapes": len(shapes), "attributes": len(attributes), "lengths": len(lengths)}
    if failing:
        result.verdict = Verdict.UNSOUND
        result.counterexample = min(failing, key=lambda f: f[0])[1]
    elif result.instances:
        result.verdict = Verdict.SOUND
    elif result.untyped:
        result.verdict = Verdict.UNTYPED
    elif result.unbuildable:
        result.verdict = Verdict.UNBUILDABLE
    return result


def check_rules(rules: Iterable[Subst], trials: int = 8, seed: int = 0) -> list[RuleCheck]:
    """:func:`check_rule` on each rule, in order."""
    return [check_rule(rule, trials, seed) for rule in rules]


class _Failure(NamedTuple):
    """How an instance shows the rule wrong: the two sides differ in value, or in type."""

    problem: str
    difference: float
    wrong_type: bool = False


def _check_instance(rule: Subst, instance: Instance, seed: int) -> Rejection | WorkloadError | _Failure | None:
    """None if the rewrite computes the same; the rejection if the target cannot be built; TVM's
    error if the source cannot be built; else what differs and by how much."""
    graph, m = instance.graph, instance.match
    built = build_target(rule, m)
    if isinstance(built, Rejection) and built.reason is Refusal.TYPE_CHANGE:
        return _Failure(f"the two sides differ in type: {built.detail}", float("inf"), wrong_type=True)
    if isinstance(built, Rejection):
        return built
    rewritten = graph.replace(dict(zip(m.outputs, built.targets)))
    rng = np.random.default_rng(seed)
    params = {v.name: random_array(to_relax_type(v.type), rng) for v in graph.inputs if v.name in instance.params}
    source = Workload.from_graph(graph, params)
    target = to_workload(rewritten, source, fold_params=False)
    inputs = source.random_inputs(seed)
    try:  # each side runs once: built soonest (Workload.build's once), not fastest
        expected = _outputs(source.build(once=True)(**inputs))
    except WorkloadError as err:
        return err
    except RuntimeError as err:
        return WorkloadError(f"TVM cannot run the source: {str(err).strip().splitlines()[-1]}")
    for k, (value, node) in enumerate(zip(expected, graph.outputs)):
        if value.shape != node.type.shape or str(value.dtype) != node.type.dtype:
            return WorkloadError(f"TVM runs the source wrong: output {k} is {value.dtype}{list(value.shape)}, "
                                 f"its type says {node.type.dtype}{list(node.type.shape)}")
    try:
        actual = _outputs(target.build(once=True)(**inputs))
    except (WorkloadError, RuntimeError) as err:
        return _Failure(f"the rewrite fails where the source runs: {str(err).strip().splitlines()[-1]}", float("inf"))
    worst: _Failure | None = None
    for k, (u, v) in enumerate(zip(expected, actual)):
        diff = difference(u, v)
        if diff is not None and (worst is None or diff > worst.difference):
            worst = _Failure(f"output {k}: {_describe(u, v, diff)}", diff)
    return worst


def _outputs(value: Any) -> tuple[np.ndarray, ...]:
    return (value,) if isinstance(value, np.ndarray) else tuple(value)


def difference(expected: np.ndarray, actual: np.ndarray) -> float | None:
    """None if ``actual`` equals ``expected`` within the dtype's tolerance, else the largest difference."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return float("inf")
    tol = TOLERANCE.get(str(expected.dtype), 0.0)
    u, v = expected.astype(np.float64), actual.astype(np.float64)
    nan_u, nan_v = np.isnan(u), np.isnan(v)
    if np.any(nan_u != nan_v):
        return float("inf")
    u, v = u[~nan_u], v[~nan_v]
    if u.size == 0:
        return None
    scale = max(1.0, float(np.max(np.abs(u), initial=0.0)))
    with np.errstate(invalid="ignore"):
        diff = np.abs(u - v)
        diff[np.isinf(u) & (u == v)] = 0.0
    if np.all(diff <= tol * scale + tol * np.abs(u)):
        return None
    return float(np.max(diff))


def _describe(u: np.ndarray, v: np.ndarray, diff: float) -> str:
    if u.shape != v.shape or u.dtype != v.dtype:
        return f"source gives {u.dtype}{list(u.shape)}, rewrite {v.dtype}{list(v.shape)}"
    return f"max difference {diff:.3g}"


def _example(instance: Instance, problem: str, diff: float | None = None) -> Example:
    module = Workload.from_graph(instance.graph, {}).mod.script()
    return Example([list(s) for s in instance.shapes()], instance.attributes(), module, problem, diff)


def _inputs(example: Example | None) -> str:
    if example is None:
        return "?"
    return ", ".join(f"{name} {tuple(shape)} {dtype}" for name, shape, dtype in example.inputs)


def failed(results: Sequence[RuleCheck]) -> list[RuleCheck]:
    """The checks a tool should fail on: unsound or untyped rules (no instance is a warning)."""
    return [r for r in results if r.verdict in (Verdict.UNSOUND, Verdict.UNTYPED)]

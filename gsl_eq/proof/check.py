"""Each rule step of a proof run numerically: what its source matched against what its target made.

A step's match is cut out of the graph it applies to at its inputs, which become variables with
random values (constants keep theirs); the matched outputs and the target's outputs are built by TVM
and run on the same values. The first step whose outputs differ beyond the dtype's tolerance (as
:mod:`gsl_eq.soundness` compares) is named with its rule's file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..errors import WorkloadError
from ..graph import Graph, Kind, Node
from ..greedy.match import matched_nodes
from ..soundness.checker import difference
from ..workload import Workload
from .steps import Applied, Step, apply_rule


@dataclass(frozen=True)
class StepFailure:
    """The first step :meth:`~gsl_eq.proof.Proof.check` found computing something else than what it replaced.

    Attributes
    ----------
    step
        Its number, from 1.
    rule
        The rule's name.
    where
        The file and line the rule was written at.
    problem
        What differs.
    """

    step: int
    rule: str
    where: str | None
    problem: str

    def __str__(self) -> str:
        return f"step {self.step}: rule {self.rule} ({self.where}) {self.problem}"


def first_failure(steps: Iterable[tuple[Graph, Step]], trials: int, seed: int) -> StepFailure | None:
    """The first rule step of ``steps`` (each with the graph it applies to) whose outputs differ from
    what it replaced, or None."""
    for k, (before, step) in enumerate(steps, start=1):
        if step.kind != "rule":
            continue
        order = before.rpo()
        applied = apply_rule(before, step.rule, [order[i] for i in step.at], step.shared)
        problem = step_difference(applied, step.rule.source.inputs, trials, seed)
        if problem is not None:
            return StepFailure(k, step.name, step.where, problem)
    return None


def step_difference(applied: Applied, inputs: tuple, trials: int, seed: int) -> str | None:
    """What differs between the match's outputs and the target's on random values of the match's
    inputs, or None (also where the cut-out source cannot be built alone: nothing is shown wrong)."""
    boundary = list(dict.fromkeys(node for p, node in matched_nodes(applied.match) if p in inputs))
    variables = {node: Node.var(f"step_input_{j}", node.type) for j, node in enumerate(boundary)
                 if node.kind is not Kind.CONST}

    def cut(outputs: list[Node]) -> Workload:
        return Workload.from_graph(Graph([], outputs).replace(variables, list(variables.values())), {})

    try:
        source = cut(applied.match.outputs)
        run_source = source.build(once=True)
    except (WorkloadError, TypeError, ValueError, RuntimeError):
        return None  # the cut-out source does not build alone: nothing to compare with
    run_target = None
    for trial in range(trials):
        values = source.random_inputs(seed + trial)
        expected = _outputs(run_source(**values))
        try:
            if run_target is None:
                run_target = cut(applied.builder.targets).build(once=True)
            actual = _outputs(run_target(**values))
        except (WorkloadError, TypeError, ValueError, RuntimeError) as err:
            return f"makes what TVM cannot build or run where the source runs: {str(err).strip().splitlines()[-1]}"
        for k, (u, v) in enumerate(zip(expected, actual)):
            diff = difference(u, v)
            if diff is not None:
                return f"computes another value: output {k} differs by up to {diff:.3g} on random inputs (seed {seed + trial})"
    return None


def _outputs(value: object) -> tuple[np.ndarray, ...]:
    return (value,) if isinstance(value, np.ndarray) else tuple(value)

"""A proof: the steps that take optimize()'s input to its result, replayed and checked.

    proof = result.proof
    print(proof)                       # one line per step: the rule, where it matched, what it made
    proof.replay(raw_input)            # the result again, by greedy mode's rewriter
    proof.check(trials=2)              # None, or the first step whose output differs
    proof.save("steps.jsonl")          # one step per line
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..graph import Graph
from ..graph.diff import structural_key
from ..greedy.rewriter import to_workload
from ..workload import Workload
from .check import StepFailure, first_failure
from .steps import ReplayError, Step, apply_rule, rebuild


@dataclass
class Proof:
    """The steps from ``start`` (the workload optimize() was given) to ``result`` (what it returned).

    ``complete`` tells that the steps reach the result; where they do not, ``missing`` says what was
    left (a saturate-mode proof is derived from the e-graph's result, and may stop short of it).

    Attributes
    ----------
    start
        The workload the steps start from.
    steps
        The steps, in order.
    result
        The workload they lead to.
    complete
        Whether the steps, replayed on ``start``, give ``result``.
    missing
        Why they do not, when ``complete`` is false.
    """

    start: Workload = field(repr=False)
    steps: list[Step]
    result: Workload = field(repr=False)
    complete: bool = True
    missing: str | None = None

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    @property
    def rule_steps(self) -> list[Step]:
        """The steps that are rules' rewrites."""
        return [s for s in self.steps if s.kind == "rule"]

    def befores(self) -> Iterator[tuple[Graph, Step]]:
        """Each step with the graph it applies to."""
        graph = self.start.graph
        for step in self.steps:
            yield graph, step
            graph = step.after

    def replay(self, input: Workload | None = None) -> Workload:
        """Apply the steps to ``input`` (default: ``start``) with greedy mode's matcher and rewriter,
        folding where a fold step does; the workload they give.

        Parameters
        ----------
        input
            The workload to replay on: the start, or one equal to it.

        Raises
        ------
        ReplayError
            A step does not apply (the message names it by number).
        """
        wl = self.start if input is None else input
        graph = wl.graph
        for k, step in enumerate(self.steps, start=1):
            try:
                if step.kind == "rule":
                    order = graph.rpo()
                    graph = apply_rule(graph, step.rule, [order[i] for i in step.at], step.shared).after
                else:
                    wl = rebuild(step.kind, graph, wl, step.folded)
                    graph = wl.graph
            except (ReplayError, IndexError) as err:
                raise ReplayError(f"step {k} of {len(self.steps)} ({step.name}): {err}") from err
        return wl if graph is wl.graph else to_workload(graph, wl, fold_params=False)

    def reaches(self, wl: Workload | None = None) -> bool:
        """Whether replaying the steps gives ``wl`` (default: ``result``): the same graph, node by
        node, and the same parameter values."""
        try:
            replayed = self.replay()
        except ReplayError:
            return False
        return same_workload(replayed, self.result if wl is None else wl)

    def check(self, trials: int = 2, seed: int = 0) -> StepFailure | None:
        """Run each rule step on random inputs, before and after it, and return the first whose outputs
        differ (with its rule's file and line), or None when every step computes what it replaced.

        Parameters
        ----------
        trials
            Random inputs per step.
        seed
            The first inputs' seed.
        """
        return first_failure(self.befores(), trials, seed)

    def to_records(self) -> list[dict[str, Any]]:
        """One plain record per step, numbered from 1."""
        return [{"step": k, **step.describe(before)} for k, (before, step) in enumerate(self.befores(), start=1)]

    def to_json_lines(self) -> str:
        """The steps as JSON, one per line."""
        return "".join(json.dumps(record) + "\n" for record in self.to_records())

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_json_lines` to ``path`` and return it."""
        path = Path(path)
        path.write_text(self.to_json_lines())
        return path

    def summary(self) -> str:
        """One line: the steps by kind, and whether they reach the result."""
        rules = len(self.rule_steps)
        text = f"{len(self.steps)} steps ({rules} rewrites, {len(self.steps) - rules} merges and folds)"
        return text if self.complete else f"{text}, short of the result: {self.missing}"

    def __str__(self) -> str:
        lines = [self.summary()]
        for record in self.to_records():
            line = f"  {record['step']}. {record['kind']}"
            if record["kind"] == "rule":
                made = ", ".join(m["op"] for m in record["made"]) or "no node"
                line += (f" {record['rule']} ({record['where']}) at node #{record['at'][0]}: "
                         f"{len(record['matched'])} nodes matched, made {made}")
            lines.append(line)
        return "\n".join(lines)


def same_workload(a: Workload, b: Workload) -> bool:
    """Whether ``a`` and ``b`` are the same graph, node by node, with the same parameter values."""
    if structural_key(a.graph) != structural_key(b.graph):
        return False
    names = [v.name for v in a.graph.inputs if v.name in a.params]
    return all(name in b.params and np.array_equal(a.params[name], b.params[name]) for name in names)

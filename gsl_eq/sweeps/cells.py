"""The grid of a sweep: every model x rule set x mode x cost model, x extractor for saturate mode and
x rule ordering for greedy mode, each a :class:`Cell` with a stable key (a results file is resumed by it).

    cells = grid(["bert", "nasrnn"], ["default", "tensat+default"], ["greedy", "saturate"],
                 ["roofline", "opcount"], quick=True, time_limit=30)
    cells[0].key          # the same for the same cell in every run: what resuming skips by
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import GslEqError
from ..cost.model import COST_MODELS
from ..run.limits import check_count, check_seconds
from ..models.registry import check_model, is_model_file
from ..optimizer.arguments import CYCLES, EXTRACTORS, MODES, SEARCHES
from ..orderings import orderings_of
from ..rules.sets import check_rule_set, rule_set

#: The options of :func:`~gsl_eq.optimizer.optimize` a sweep passes to every cell (the same to all).
OPTIONS = ("node_limit", "iter_limit", "time_limit", "ilp_time_limit", "multi_iterations", "cycles", "search")


@dataclass(frozen=True)
class Cell:
    """One run of :func:`~gsl_eq.optimizer.optimize`: ``model`` (a name, or a ``.py`` file's absolute
    path) built at its ``quick`` size, the rule set ``rules`` (a name or a sum such as
    ``tensat+default``), ``mode``, ``cost_model``, ``extractor`` (saturate mode; None in greedy
    mode), ``ordering`` (greedy mode: the order of the rules it runs by their positions, None for
    the set's own order) and ``options`` (the limits, as sorted pairs)."""

    model: str
    rules: str
    mode: str
    cost_model: str
    extractor: str | None = None
    ordering: tuple[int, ...] | None = None
    quick: bool = False
    options: tuple[tuple[str, Any], ...] = ()

    def identity(self) -> dict[str, Any]:
        """The fields that make the cell what it is, as a results line has them."""
        return {"model": self.model, "quick": self.quick, "rules": self.rules, "mode": self.mode,
                "cost_model": self.cost_model, "extractor": self.extractor,
                "ordering": None if self.ordering is None else list(self.ordering), "options": dict(self.options)}

    @classmethod
    def of_line(cls, line: dict[str, Any]) -> "Cell":
        """The cell a results line is of (its identity fields, as :meth:`identity` wrote them)."""
        ordering = line.get("ordering")
        return cls(str(line.get("model")), str(line.get("rules")), str(line.get("mode")), str(line.get("cost_model")),
                   line.get("extractor"), None if ordering is None else tuple(ordering), bool(line.get("quick")),
                   tuple(sorted((line.get("options") or {}).items())))

    def mode_label(self) -> str:
        """The mode, with the rule ordering of a greedy cell that has one: ``"greedy, order 2-0-1"``."""
        if self.ordering is None:
            return self.mode
        order = "-".join(map(str, self.ordering)) if len(self.ordering) <= 8 else f"#{self.key[:6]}"
        return f"{self.mode}, order {order}"

    @property
    def key(self) -> str:
        """A stable key: the same cell has the same key in every run and on every machine."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def label(self) -> str:
        """A short description: ``"nasrnn · tensat+default · saturate · roofline · ilp"``, or for a greedy
        cell with an ordering ``"nasrnn · default · greedy, order 1-0 · roofline"``."""
        parts = [Path(self.model).name if is_model_file(self.model) else self.model, self.rules, self.mode_label(),
                 self.cost_model]
        if self.extractor:
            parts.append(self.extractor)
        return " · ".join(parts)


def grid(models: Sequence[str], rules: Sequence[str] = ("default",), modes: Sequence[str] = ("saturate",),
         costs: Sequence[str] = ("roofline",), extractors: Sequence[str] = ("ilp",), orderings: int | None = None,
         seed: int = 0, quick: bool = False, **options: Any) -> list[Cell]:
    """The cells of models x ``rules`` x ``modes`` x ``costs``, saturate mode's x ``extractors``,
    greedy mode's x ``orderings`` rule orderings (every permutation when there are fewer, else a
    sample drawn with ``seed``; None: the rule set's own order only), in that nesting order.

    Greedy mode runs only the rules whose source is connected (it cannot match the others; see
    :meth:`~gsl_eq.frontend.Subst.require_connected`): its orderings are orders of those.
    ``options`` go to every :func:`~gsl_eq.optimizer.optimize` call: ``node_limit``,
    ``iter_limit``, ``time_limit``, ``ilp_time_limit``, ``multi_iterations``, ``cycles``, ``search``.
    Every name is checked before anything runs: a :class:`~gsl_eq.errors.GslEqError` names an
    unknown model, a missing file, an unknown rule set, mode, cost model, extractor or option.
    """
    model_specs = [_model_spec(m) for m in _names("models", models)]
    rule_specs = [check_rule_set(r) for r in _names("rule sets", rules)]
    mode_names = _checked("mode", _names("modes", modes), MODES)
    cost_names = _checked("cost model", _names("cost models", costs), tuple(COST_MODELS))
    extractor_names = _checked("extractor", _names("extractors", extractors), EXTRACTORS)
    pairs = _options(options)
    if orderings is not None:
        orderings = check_count("orderings", orderings)
    cells: list[Cell] = []
    for model in model_specs:
        for spec in rule_specs:
            for mode in mode_names:
                for cost in cost_names:
                    if mode == "saturate":
                        cells += [Cell(model, spec, mode, cost, extractor, None, quick, pairs)
                                  for extractor in extractor_names]
                    elif orderings is None:
                        cells.append(Cell(model, spec, mode, cost, None, None, quick, pairs))
                    else:
                        count = len(greedy_rules(spec)[0])
                        cells += [Cell(model, spec, mode, cost, None, tuple(order), quick, pairs)
                                  for order in orderings_of(count, orderings, seed)]
    return cells


def greedy_rules(spec: str) -> tuple[list[Any], int]:
    """The rules of ``spec`` greedy mode runs (those with a connected source), and how many are left out."""
    rules = rule_set(spec)
    kept = [r for r in rules if r.connected]
    return kept, len(rules) - len(kept)


def _model_spec(spec: str) -> str:
    check_model(spec)
    return str(Path(spec).resolve()) if is_model_file(spec) else spec


def _names(what: str, values: Iterable[str] | str) -> list[str]:
    if isinstance(values, str):
        values = [v for v in values.split(",")]
    names = [str(v).strip() for v in values]
    if not names or not all(names):
        raise GslEqError(f"{what}: give at least one, and no empty name (got {list(values)!r})")
    return list(dict.fromkeys(names))


def _checked(what: str, names: list[str], known: tuple[str, ...]) -> list[str]:
    for name in names:
        if name not in known:
            raise GslEqError(f"unknown {what} {name!r}; choose from {', '.join(known)}")
    return names


def _options(options: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise GslEqError(f"unknown option {', '.join(unknown)} for a sweep's cells; the options are {', '.join(OPTIONS)}")
    checked: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if name in ("node_limit", "iter_limit", "multi_iterations"):
            checked[name] = check_count(name, value)
        elif name in ("time_limit", "ilp_time_limit"):
            checked[name] = check_seconds(name, value)
        else:
            choices = CYCLES if name == "cycles" else SEARCHES
            if value not in choices:
                raise GslEqError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
            checked[name] = value
    return tuple(sorted(checked.items()))

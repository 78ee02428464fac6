"""optimize()'s first phase: its arguments checked and made into what the later phases read.

Every mistake is caught here, before anything is folded or built, with a message naming the argument
and what it takes::

    optimize(wl, rules.default)     # TypeError: ... is a function; call it, e.g. rules.default()
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import tvm

from .. import rules as library
from ..cost import CostModel, get_cost_model
from ..frontend import Subst
from ..run.limits import Limits, check_count, check_seconds
from ..workload import Workload

if TYPE_CHECKING:
    from ..measure.schedule_db import ScheduleDatabase

MODES = ("saturate", "greedy")
SELECTIONS = ("cost", "measured")
EXTRACTORS = ("ilp", "greedy", "tree", "egglog")
#: What extraction does with the cycles of the e-graph: keep them (the exact extractor forbids
#: cyclic choices) or filter them as TENSAT does (:func:`~gsl_eq.egraph.cycles.closing_cycles`).
CYCLES = ("keep", "filter")
#: How saturate mode searches: one saturation, or rounds of it restarted from the best term where the
#: e-graph stops at its node limit (:mod:`gsl_eq.optimizer.guided`).
SEARCHES = ("saturate", "restart")


@dataclass(frozen=True)
class Settings:
    """optimize()'s choices, checked: see :func:`~gsl_eq.optimizer.optimize` for each."""

    mode: str
    extractor: str
    limits: Limits
    ilp_time_limit: float
    select: str
    candidates: int
    multi_iterations: int | None
    cycles: str
    search: str = "saturate"

    @property
    def alternatives(self) -> int:
        """How many graphs saturation offers besides its result: measured selection's candidates."""
        return self.candidates if self.select == "measured" else 0


def settings(mode: str, extractor: str, limits: Limits, ilp_time_limit: float, select: str, candidates: int,
             multi_iterations: int | None, cycles: str, search: str = "saturate") -> Settings:
    """The choices as :class:`Settings`, or a ValueError (LimitError for a limit) naming the one at fault."""
    _one_of("mode", mode, MODES)
    _one_of("extractor", extractor, EXTRACTORS)
    _one_of("select", select, SELECTIONS)
    _one_of("cycles", cycles, CYCLES)
    _one_of("search", search, SEARCHES)
    candidates = check_count("candidates", candidates)
    if select == "measured" and candidates < 2:
        raise ValueError("select='measured' with candidates=1 would time only the input and return it; "
                         "candidates counts the input, so give at least 2")
    if multi_iterations is not None:
        multi_iterations = check_count("multi_iterations", multi_iterations)
    return Settings(mode, extractor, limits, check_seconds("ilp_time_limit", ilp_time_limit), select, candidates,
                    multi_iterations, cycles, search)


def _one_of(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")


def as_workload(mod_or_workload: Workload | tvm.IRModule) -> Workload:
    """A workload as given, or a bare IRModule whose function parameters all stay runtime inputs."""
    if isinstance(mod_or_workload, Workload):
        return mod_or_workload
    if isinstance(mod_or_workload, tvm.IRModule):
        return Workload(mod_or_workload, {})
    raise TypeError(f"optimize takes a gsl_eq.Workload or a tvm.IRModule, not {type(mod_or_workload).__name__}")


def cost_model(cost: str | CostModel, schedules: "ScheduleDatabase | None") -> CostModel:
    """``cost`` as a model; ``"tvm"`` schedules its kernels with ``schedules`` when given."""
    if schedules is not None and isinstance(cost, str) and cost.strip().lower() == "tvm":
        from ..cost.tvm_cost import TVMCost

        return TVMCost(schedules)
    return get_cost_model(cost)


def rule_list(rules: object, order: Sequence[int | str] | None, mode: str = "greedy",
              model: CostModel | None = None) -> list[Subst]:
    """The rules to run, in ``order`` (rule indices or names) where given; default: :func:`gsl_eq.rules.default`,
    and in saturate mode under a model that prices TVM's CPU kernels (``cost="tvm"``) :func:`gsl_eq.rules.cpu`
    too: they are choices such a model can make, where greedy mode would take each of them."""
    if rules is None:
        rules = library.default() + (library.cpu() if mode == "saturate" and getattr(model, "name", "") == "tvm" else [])
    return ordered(as_rule_list(rules), order)


def as_rule_list(rules: object) -> list[Subst]:
    """``rules`` as a list of Subst, each rule once (a library rule given twice, as in
    ``rules.legalize() + rules.default()``, is kept where it comes first), or a TypeError that says
    what was passed instead; two different rules of one name are a ValueError."""
    hint = ""
    if isinstance(rules, Subst):
        hint = ": put a single rule in a list, [rule]"
    elif callable(rules):
        hint = f": {getattr(rules, '__qualname__', rules)!s} is a function; call it, e.g. rules.default()"
    elif isinstance(rules, (str, bytes, Workload, tvm.IRModule)) or not isinstance(rules, Iterable):
        hint = ""
    else:
        rule_list = list(rules)
        wrong = [(k, r) for k, r in enumerate(rule_list) if not isinstance(r, Subst)]
        if not wrong:
            first: dict[str, Subst] = {}
            twice = sorted({r.name for r in rule_list if not _same_rule(first.setdefault(r.name, r), r)})
            if twice:
                raise ValueError(f"rules must have distinct names; more than one rule is named "
                                 f"{', '.join(map(repr, twice))} (name them: Subst(source, target, name=...))")
            return list(first.values())
        k, r = wrong[0]
        raise TypeError(f"rules must be a list of Subst; item {k} is {_describe(r)}")
    raise TypeError(f"rules must be a list of Subst; got {_describe(rules)}{hint}")


def _same_rule(a: Subst, b: Subst) -> bool:
    """Whether two rules of one name are one rule: the same object, or the library's rule built
    twice (``rules.legalize() + rules.default()``: by the same line of gsl_eq.rules)."""
    return a is b or (a.loc == b.loc and Path(a.loc.filename).resolve().is_relative_to(_LIBRARY))


_LIBRARY = Path(library.__file__).resolve().parent


def _describe(value: object) -> str:
    return f"the {type(value).__name__} {value!r}"[:200]


def ordered(rule_list: list[Subst], order: Sequence[int | str] | None) -> list[Subst]:
    """``rule_list`` in ``order``, a permutation of rule indices or names; as it is where None."""
    if order is None:
        return rule_list
    names = [r.name for r in rule_list]
    index = [names.index(o) if isinstance(o, str) and o in names else o for o in order]
    if sorted(i for i in index if isinstance(i, int)) != list(range(len(rule_list))):
        raise ValueError(f"order {list(order)} is not a permutation of the {len(rule_list)} rules {names}")
    return [rule_list[i] for i in index]

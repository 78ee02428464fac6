"""What a saturation run reports: an :class:`Iteration` per iteration and the :class:`Report` of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..run.limits import StopReason


@dataclass
class Iteration:
    """What one iteration did and how long each part took (seconds).

    Per rule name: ``matches``, new matches its search found (in a controlled iteration,
    not those whose target is already there; for a disconnected source, the pairs formed);
    ``new_keys`` / ``accepted_keys``, distinct keys (combinations of its parts' keys) Python
    saw for the first time / accepted;
    ``rejected``, the others by reason (:meth:`~.compile.Query.decide`: source guard
    false, target cannot be typed, output type would change), their rows dropped;
    ``applied``, matches applied (each at most once); ``backlog``, matches found
    but not applied yet, left in the worklist. ``banned``: rules under a ban from
    an earlier iteration (neither searched nor applied); ``new_bans``: rules whose
    search found more matches than their limit (counted, not applied);
    ``searched``: how many rules were searched; ``late``: rules left out of the search because
    theirs was predicted to end past the time limit.
    ``rebuild_time`` is egglog's own figure, part of ``search_time`` and ``apply_time``.
    ``fast``: the iteration was fast (see :mod:`.fast`; ``search_time`` is then the
    time recording keys, ``apply_time`` the time applying every match). A controlled iteration's
    ``search_time`` includes a fast attempt that was refused.
    """

    enodes: int
    matches: dict[str, int]
    new_keys: dict[str, int]
    accepted_keys: dict[str, int]
    applied: dict[str, int]
    banned: list[str]
    search_time: float
    guard_time: float
    apply_time: float
    rebuild_time: float
    total_time: float
    backlog: dict[str, int] = field(default_factory=dict)
    searched: int = 0
    new_bans: list[str] = field(default_factory=list)
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    fast: bool = False
    late: list[str] = field(default_factory=list)


@dataclass
class Report:
    """The runner's history: one :class:`Iteration` per iteration and why it stopped."""

    iterations: list[Iteration] = field(default_factory=list)
    stop_reason: StopReason | None = None
    compile_time: float = 0.0  # compiling the rules into egglog
    load_time: float = 0.0  # loading the graph
    uncompiled: list[str] = field(default_factory=list)  # rules not compiled by the deadline: never searched
    stop_time: float = 0.0  # clearing the worklists and marking what folds, once the run stops
    #: Per rule name, the maximal matches of a variadic-output rule applied at load (:mod:`.seeding`).
    seeded: dict[str, int] = field(default_factory=dict)
    seed_time: float = 0.0

    @property
    def python_time(self) -> float:
        return sum(i.guard_time for i in self.iterations)

    @property
    def engine_time(self) -> float:
        return sum(i.search_time + i.apply_time for i in self.iterations)

    @property
    def total_time(self) -> float:
        return self.seed_time + sum(i.total_time for i in self.iterations) + self.stop_time

    def applied(self) -> dict[str, int]:
        """Applications per rule over the whole run, those at load (:attr:`seeded`) included."""
        return _sum([self.seeded, *(it.applied for it in self.iterations)])

    def rejected(self) -> dict[str, dict[str, int]]:
        """Rejected keys per rule and reason over the whole run (each key is decided once)."""
        total: dict[str, dict[str, int]] = {}
        for it in self.iterations:
            for name, reasons in it.rejected.items():
                total[name] = _sum([total.get(name, {}), reasons])
        return total


def _sum(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts added up key by key."""
    total: dict[str, int] = {}
    for c in counts:
        for name, n in c.items():
            total[name] = total.get(name, 0) + n
    return total

"""egglog calls under a deadline, and what they did.

egglog cannot be stopped inside a call, so the runner never starts one predicted to end
past its deadline (:meth:`EngineCalls._run` raises :class:`OutOfTime` instead): a call
consuming worklist rows is predicted from the slowest rate per row seen so far, any other
from the time its rulesets took last, scaled by how much the e-graph grew since (a
search's time grows about as the e-graph does; a multi-output source's matches, by the cube of
that growth). A rule whose search alone is predicted past the deadline
is left out of the iteration's search (:meth:`EngineCalls._affordable`), unless that prediction
comes from matches on a far smaller e-graph and the search, tried on a forked copy, ends within a
share of the time left (:meth:`EngineCalls._probed_in_time`); a multi-output source's search
predicted so is tried first, unless predicted at milliseconds, and left out if the trial does not
end; those predicted at milliseconds, on an e-graph grown twice over since, are tried together on one
copy (:meth:`EngineCalls._late_of_group`). Its matches are counted per GSL rule from egglog's names for the rules it compiles
(:mod:`.compile`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterable

from ..run.bounded import IN_PROCESS_ENODES, run_bounded


@dataclass
class Counts:
    """What a sequence of egglog runs did: matches per egglog rule, whether anything changed."""

    matches: dict[str, int] = field(default_factory=dict)
    updated: bool = False
    rebuild: float = 0.0

    def add(self, out: object) -> dict[str, int]:
        """Count one egglog run; returns its matches per egglog rule."""
        report = out.report  # type: ignore[attr-defined]
        self.updated |= report.updated
        self.rebuild += sum(r.total_seconds() for r in report.rebuild_time_per_ruleset.values())
        for name, count in report.num_matches_per_rule.items():
            self.matches[name] = self.matches.get(name, 0) + count
        return report.num_matches_per_rule


#: What a match found costs, its worklist row written, then read by the rules that reject or apply it and
#: cleared when the run stops: what a search is predicted by, so that the time left covers the rows it
#: leaves (a variadic source can find tens of millions of matches, and their rows then take minutes).
SECONDS_PER_MATCH = 4e-6
#: What a call consuming worklist rows spends per row until its own rate is measured: dropping the rows
#: of rejected keys is a cheaper pass over the same rows than writing them.
SECONDS_PER_ROW = 1e-6


#: A search predicted from matches found on an e-graph this many times smaller is tried on a forked copy
#: before it is left out: the cube of a large growth is a bound far above most searches (a variadic
#: merge's matches, predicted from a small e-graph, can be predicted hours where the search takes a blink).
STALE_GROWTH = 4.0
#: The share of the time left such a trial may take; past it the child is stopped and the search left out.
PROBE_SHARE = 0.25
#: A multi-output search with a stale record predicted at less than this runs without a trial: a trial's
#: fork costs more than such a search, and many trials of cheap searches add up, while the explosive
#: searches are predicted at seconds and more.
TRIAL_FLOOR = 0.1
#: Multi-output searches on an e-graph grown this many times since their record, predicted under
#: :data:`TRIAL_FLOOR`, are tried together on one forked copy: a search that found nothing can turn
#: endless within one iteration's growth (a variadic source's join over split parts, as new parts gain
#: readers), and a record of no matches predicts nothing.
GROUP_GROWTH = 2.0


class OutOfTime(Exception):
    """The deadline passed between two egglog calls."""


class EngineCalls:
    """The :class:`~.runner.Runner`'s egglog calls: reads ``egraph``, ``deadline``, ``rules``,
    ``queries``, ``rule_queries``, ``report`` and ``graph``, and its timing records: ``_seconds_per_row``
    (per kind of call, per row), ``_last_time`` (per ruleset, seconds and the e-nodes then) and
    ``_last_matches`` (per rule index: the matches its last search found, and the e-nodes then)."""

    def _run(self, counts: Counts, rulesets: list[str], rows: int = 0) -> dict[str, int]:
        """One egglog iteration of each of ``rulesets`` in turn (one egglog call), unless it is
        predicted to end past the deadline; returns the matches per egglog rule. ``rows``: how
        many worklist rows it consumes, when that is known.

        egglog cannot be stopped inside a call, so each call's time is predicted: per row
        consumed for the calls that consume worklists (the slowest rate seen so far, or
        :data:`SECONDS_PER_ROW` before one is measured), else the
        time the slowest of its rulesets took last (alone or with others), times the e-graph's
        growth since.
        """
        kind = rulesets[0].split("_")[0]
        size = self._size()
        predicted = self._seconds_per_row.get(kind, SECONDS_PER_ROW) * rows if rows else self._predicted(rulesets, size)
        start = time.perf_counter()
        if start + predicted > self.deadline:
            raise OutOfTime
        (out,) = self.egraph.run(_once(rulesets))
        took = time.perf_counter() - start
        if rows >= 100:
            self._seconds_per_row[kind] = max(self._seconds_per_row.get(kind, 0.0), took / rows)
        self._last_time.update(dict.fromkeys(rulesets, (took, size)))
        return counts.add(out)

    def _size(self) -> int:
        """E-nodes at the end of the last iteration (as loaded, before the first)."""
        its = self.report.iterations
        return its[-1].enodes if its else self._loaded_size

    def _predicted(self, rulesets: list[str], size: int) -> float:
        """The time the slowest of ``rulesets`` took last, times the e-graph's growth since; for the search
        of a source of several outputs, at least :data:`SECONDS_PER_MATCH` for each match it found last
        times the cube of that growth: it matches pairs of e-nodes sharing an input, more of them as
        inputs gain readers (the matches of TASO's matmul merge and of a variadic merge of split parts
        were seen to grow by a power of the growth between two and a half and above three)."""
        return max((self._growing(r, size) for r in rulesets), default=0.0)

    def _growing(self, ruleset: str, size: int) -> float:
        last, then = self._last_time.get(ruleset, (0.0, size))
        predicted = last * max(1.0, size / max(then, 1))
        kind, _, index = ruleset.partition("_")
        if kind == "search" and index.isdigit() and int(index) in self._last_matches and self._multi_output(int(index)):
            matches, then = self._last_matches[int(index)]
            predicted = max(predicted, SECONDS_PER_MATCH * matches * max(1.0, size / max(then, 1)) ** 3)
        return predicted

    def _affordable(self, rules: list[int]) -> tuple[list[int], list[int]]:
        """``rules`` split into those whose search is predicted to end before the deadline, and the others
        (left out of this iteration's search: one egglog call cannot be stopped). The search of a source of
        several outputs whose record is stale (:meth:`_stale`) is tried first, unless predicted under
        :data:`TRIAL_FLOOR`, however far within the time left: its matches can outgrow any power of the
        e-graph's growth (sums regrouped by associativity give a variadic merge ever more operands, so
        that a search predicted within the time left can find millions of matches and overrun the
        limit, the more so with each operand more); those predicted under it are tried together once the
        e-graph has grown :data:`GROUP_GROWTH` times (:meth:`_late_of_group`)."""
        left, size = self.deadline - time.perf_counter(), self._size()
        predicted = {k: self._predicted([f"search_{k}"], size) for k in rules}
        late = [k for k in rules if (predicted[k] > left
                                     or predicted[k] >= TRIAL_FLOOR and self._stale(k, size) and self._multi_output(k))
                and not self._probed_in_time(k, size)]
        grown = [k for k in rules if k not in late and predicted[k] < TRIAL_FLOOR and self._multi_output(k)
                 and size > IN_PROCESS_ENODES and self._stale(k, size, GROUP_GROWTH)]
        late += self._late_of_group(grown, size)
        return [k for k in rules if k not in late], late

    def _late_of_group(self, rules: list[int], size: int) -> list[int]:
        """Of ``rules`` (searches whose record is stale by :data:`GROUP_GROWTH`), those that do not end in
        time: all tried on one forked copy within :data:`PROBE_SHARE` of the time left, their records
        then its seconds and their matches; if they do not end there, each alone (:meth:`_probed_in_time`)."""
        if not rules:
            return []
        rulesets = [f"search_{k}" for k in rules]
        budget = PROBE_SHARE * (self.deadline - time.perf_counter())
        found = run_bounded(lambda: self._search_alone(rulesets), budget)
        if found is None:
            return [k for k in rules if not self._probed_in_time(k, size, GROUP_GROWTH)]
        took, matches = found
        for k in rules:
            self._probed[k] = size
            self._last_time[f"search_{k}"] = (took, size)
            self._last_matches[k] = (matches.get(k, 0), size)
        return []

    def _stale(self, k: int, size: int, growth: float = STALE_GROWTH) -> bool:
        """Whether rule ``k``'s search is predicted from matches on an e-graph at least ``growth`` times
        smaller than ``size`` e-nodes, and was not tried since it grew so."""
        matches = self._last_matches.get(k)
        return matches is not None and size >= growth * max(matches[1], self._probed.get(k, 0), 1)

    def _multi_output(self, k: int) -> bool:
        return any(len(q.outputs) > 1 for q in self.rule_queries[k] if not q.disconnected)

    def _probed_in_time(self, k: int, size: int, growth: float = STALE_GROWTH) -> bool:
        """Whether rule ``k``'s search, whose record is stale (:meth:`_stale`), ran on a forked copy of the
        e-graph within :data:`PROBE_SHARE` of the time left, with room left for running it here; its time
        and matches there are then its record. A search that did not end there is recorded as endless,
        and so left out, until the e-graph has grown as much again."""
        if not self._stale(k, size, growth):
            return False
        self._probed[k] = size
        ruleset = f"search_{k}"
        budget = PROBE_SHARE * (self.deadline - time.perf_counter())
        found = run_bounded(lambda: self._search_alone(ruleset), budget)
        if found is None:
            self._last_time[ruleset] = (math.inf, size)
            return False
        took, matches_found = found
        self._last_time[ruleset] = (took, size)
        self._last_matches[k] = (matches_found, size)
        return time.perf_counter() + self._predicted([ruleset], size) <= self.deadline

    def _search_alone(self, rulesets: str | list[str]) -> tuple[float, dict[int, int] | int]:
        """Seconds and matches of one run of ``rulesets`` (in a forked copy: what it adds is thrown away):
        of one ruleset, its matches; of a list, the matches per rule index."""
        start = time.perf_counter()
        (out,) = self.egraph.run(_once([rulesets] if isinstance(rulesets, str) else rulesets))
        if isinstance(rulesets, str):
            return time.perf_counter() - start, sum(out.report.num_matches_per_rule.values())
        indices = [int(r.split("_")[1]) for r in rulesets]
        return time.perf_counter() - start, self._per_rule_index(out.report.num_matches_per_rule, indices)

    def _in_buckets(self, buckets: Iterable[int], counts: Counts, rulesets: list[str], rows: int = 0) -> dict[str, int]:
        """Run ``rulesets`` (rules reading ``Open``) with ``buckets`` open, one egglog call; returns
        their matches per egglog rule."""
        self.egraph.open_buckets(buckets)
        matches = self._run(counts, rulesets, rows)
        self.egraph.run("(run close 1)")
        return matches

    @staticmethod
    def _per_rule_index(counts: dict[str, int], rules: list[int]) -> dict[int, int]:
        """egglog's per-rule counts (rules named "search r<k>_<q>", "apply r<k>_<q>_<v>[ bucketed]",
        "window r<k>_<q>_<v>", "direct r<k>_<q>_<v>") summed per GSL rule index, every one of
        ``rules`` included."""
        total = dict.fromkeys(rules, 0)
        for name, n in counts.items():
            words = name.split()
            if words[0] in ("search", "apply", "window", "direct"):
                k = int(words[1][1:].split("_")[0])
                total[k] = total.get(k, 0) + n
        return total

    def _per_rule(self, counts: dict[str, int]) -> dict[str, int]:
        """egglog's per-rule counts summed per GSL rule name."""
        total: dict[str, int] = {}
        for k, n in self._per_rule_index(counts, []).items():
            total[self.rules[k].name] = total.get(self.rules[k].name, 0) + n
        return total


def _once(rulesets: list[str]) -> str:
    """The egglog command running each of ``rulesets`` once, in turn."""
    if len(rulesets) == 1:
        return f"(run {rulesets[0]} 1)"
    return f"(run-schedule (seq {' '.join(f'(run {r})' for r in rulesets)}))"

"""Which rules an iteration searches and applies, and how a rule is applied in part.

egg's ``BackoffScheduler`` with worklists, where the budget bounds what is
*applied*, not only what is counted:

* every rule has a limit per iteration: ``match_limit``, or ``multi_match_limit``
  for a rule with several source outputs (its matches are joins and multiply
  fastest; TENSAT bounds them separately too), doubled each time it is banned;
* a rule whose search finds more new matches than its limit is banned for
  ``ban_length << times_banned`` iterations: neither searched nor applied. Its
  matches wait in its worklist;
* with ``multi_iterations``, a rule with several source outputs is searched in the
  first ``multi_iterations`` iterations only (TENSAT's ``iter_multi``): merges of
  merges are what make its e-graphs explode; the matches it found by then still apply;
* outside a ban, a rule applies at most its limit per iteration (fewer when the
  runner's node or time budget is short) and is searched only while its worklist
  is below its limit. So a ban ends without releasing the backlog at once (egglog's
  own back-off releases every delayed match), and no search grows a worklist that
  already fills the rule's budget.

A share of a rule's matches is applied by *buckets*: a hash of each match's
e-classes puts it in one of ``BUCKETS`` buckets, and opening ``n`` buckets applies
about ``n / BUCKETS`` of the matches. Each rule opens the buckets after the ones it
opened last, so every match is reached, in a scattered order (a stride near
``BUCKETS`` over the golden ratio): the hashes of matches built alike can fill a
range of buckets, which consecutive buckets would take all at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .egraph import BUCKETS, BucketSpan


@dataclass
class RuleSchedule:
    """The back-off state of one rule and the first bucket it opens next."""

    base_limit: int
    times_banned: int = 0
    banned_until: int = 0
    cursor: int = 0

    @property
    def limit(self) -> int:
        return self.base_limit << self.times_banned


class Scheduler:
    """Back-off with budgets for the rules of one run (see the module docstring).

        scheduler = Scheduler(multi_output=[False, True], match_limit=1000, multi_match_limit=100)
        if scheduler.should_search(k, iteration, backlog): ...
    """

    def __init__(self, multi_output: Sequence[bool], match_limit: int = 1000, multi_match_limit: int = 100,
                 ban_length: int = 5, multi_iterations: int | None = None):
        self.rules = [RuleSchedule(multi_match_limit if multi else match_limit) for multi in multi_output]
        self.multi_output = list(multi_output)
        self.ban_length = ban_length
        self.multi_iterations = multi_iterations

    def retired(self, k: int, iteration: int) -> bool:
        """Whether rule ``k`` is searched no more (a multi-output rule past ``multi_iterations``)."""
        return self.multi_output[k] and self.multi_iterations is not None and iteration >= self.multi_iterations

    def active(self, iteration: int) -> int:
        """How many rules may still be searched in ``iteration``."""
        return sum(not self.retired(k, iteration) for k in range(len(self.rules)))

    def limit(self, k: int) -> int:
        """How many matches rule ``k`` may apply in one iteration."""
        return self.rules[k].limit

    def banned(self, k: int, iteration: int) -> bool:
        return iteration < self.rules[k].banned_until

    def should_search(self, k: int, iteration: int, backlog: int) -> bool:
        """Search rule ``k`` unless it is retired, banned or its worklist already fills its budget."""
        return not self.retired(k, iteration) and not self.banned(k, iteration) and backlog < self.limit(k)

    def after_search(self, k: int, iteration: int, found: int) -> bool:
        """Ban rule ``k`` if its search found more matches than its limit; True if it did."""
        s = self.rules[k]
        if found <= s.limit:
            return False
        s.banned_until = iteration + 1 + (self.ban_length << s.times_banned)
        s.times_banned += 1
        return True

    def any_banned(self, iteration: int) -> bool:
        return any(iteration < s.banned_until for s in self.rules)

    def lift_bans(self) -> None:
        """End every ban now (when nothing else would change, as egg does)."""
        for s in self.rules:
            s.banned_until = 0

    def buckets(self, k: int, share: float) -> BucketSpan:
        """The buckets rule ``k`` opens next to apply about ``share`` of its bucketed matches (at least one)."""
        s = self.rules[k]
        count = min(BUCKETS, max(1, int(share * BUCKETS)))
        opened = BucketSpan(s.cursor, count)
        s.cursor = (s.cursor + count) % BUCKETS
        return opened

"""Saturate mode's proof: rule applications found on the input that lead, step by step, to the extracted graph.

The extracted graph (the goal) is a set of nodes, each known by its structural key
(:func:`~gsl_eq.graph.diff.node_keys`). Starting from the input, each pass is one rule's: of all the
rules' matches that replace nodes the goal does not hold by nodes closer to it, as greedy mode's
matcher finds them (inner nodes left to their other readers, as an e-graph keeps them), the pass of
the rule that takes the graph closest; so a rule whose match gains a little never uses up the match
of one that gains more. Passes repeat until the graph is the goal. A variadic match may take the
smaller group a tuple of the goal holds (an e-graph merges groups of fixed sizes); where no single
match brings the graph closer, a chain of a few rewrites whose middle forms the goal lacks may
(:func:`_chain`). Where that search stops short, a second one starts again from the input, taking
first, in places of no goal node, only matches whose targets put there a node the goal holds: a
target takes its source's place for every reader, and one the goal computes otherwise may need
the source as it was. Each match is one step. Every
node of the goal is an e-node some rule's target built, or the input's, so the rules that built the
goal's nodes find them again, in an order where each match exists in the graph the steps before made.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Sequence

from ..frontend import Subst
from ..graph import Graph, Kind, Node
from ..graph.diff import label, merge_common, node_key, node_keys, structural_key
from ..greedy.match import Match, Matcher, first_output, matched_nodes, may_match
from ..greedy.rewriter import Rejection, build_target
from .record import sequenced
from .steps import ReplayError, Step, apply_rule, rule_step


def derive(start: Graph, goal: Graph, rules: Sequence[Subst], deadline: float | None = None
           ) -> tuple[list[Step], Graph, str | None]:
    """The steps from ``start`` toward ``goal`` by ``rules``, the graph they reach, and what is left
    (None when it is ``goal``, node by node).

    Parameters
    ----------
    start
        The graph rewriting starts from.
    goal
        The graph to reach.
    rules
        The rules the steps may apply (those with a connected source, and those of two outputs
        sharing no pattern, paired with nodes near each other).
    deadline
        A ``time.perf_counter()`` time past which no pass starts.
    """
    aim = _Goal(goal)
    runnable = [rule for rule in rules if rule.connected or (not rule.variadic and len(rule.source.outputs) == 2)]
    best = None
    for held_first in (False, True):
        steps, reached, left, missing = _search(start, aim, runnable, deadline, held_first)
        if missing is None:
            return steps, reached, None
        best = min(best or (left, steps, reached, missing), (left, steps, reached, missing), key=lambda b: b[0])
        if deadline is not None and time.perf_counter() > deadline:
            break
    _, steps, reached, missing = best
    return steps, reached, missing


def _search(start: Graph, aim: "_Goal", rules: Sequence[Subst], deadline: float | None, held_first: bool
            ) -> tuple[list[Step], Graph, int, str | None]:
    """The steps one search finds from ``start`` toward the goal, the graph they reach, how many places
    are left and why (None: none). Each turn takes the best pass, else the shortest chain;
    ``held_first``: the best pass of matches whose targets, in places of no goal node, are nodes the
    goal holds, then a chain, then the best pass of any (:meth:`_Goal.gain`)."""
    steps: list[Step] = []
    current = _merged(start, steps)
    seen = {structural_key(current)}  # the graphs the steps made: none is made twice
    while True:
        keys = node_keys(current)
        places = aim.places(current, keys)
        if not places:
            return steps, _merged(current, steps), 0, None
        if deadline is not None and time.perf_counter() > deadline:
            return steps, current, len(places), "the time limit ended the search for the steps"
        made = (_best_pass(current, rules, keys, places, aim, seen, deadline, strict=held_first)
                or _chain(current, rules, aim, CHAIN_DEPTH, seen, deadline)
                or (held_first and _best_pass(current, rules, keys, places, aim, seen, deadline, strict=False)))
        if not made and deadline is not None and time.perf_counter() > deadline:
            return steps, current, len(places), "the time limit ended the search for the steps"
        if not made:
            return steps, current, len(places), (
                f"no rule's match, nor a chain of {CHAIN_DEPTH}, brings the graph closer to the extracted "
                f"one at {len(places)} places where they differ")
        steps += made
        current = _merged(made[-1].after, steps)  # an e-class is one node: copies a pass made would not match as one
        seen.add(structural_key(current))


def _merged(graph: Graph, steps: list[Step]) -> Graph:
    """``graph`` with computations done twice merged, a merge step added to ``steps`` if any were."""
    merged = merge_common(graph)
    if merged is not graph:
        steps.append(Step("merge", merged))
    return merged


def _best_pass(graph: Graph, rules: Sequence[Subst], keys: dict[Node, int], places: dict[Node, Node | None],
               aim: "_Goal", seen: set[int], deadline: float | None = None, strict: bool = False) -> list[Step]:
    """The steps of the pass of one rule that takes ``graph`` closest to the goal (the first such rule
    of ``rules``), to a graph not ``seen`` before: of all rules, since a rule whose match takes the
    graph a little closer may use up the match of another that takes it further. Empty if none, or
    if the ``deadline`` passes first. ``strict``: as :meth:`_Goal.gain` counts."""
    found = []
    for k, rule in enumerate(rules):
        if deadline is not None and time.perf_counter() > deadline:
            return []
        batch, gain = _toward(graph, rule, keys, places, aim, strict)
        if batch:
            found.append((gain, k, batch))
    for _, k, batch in sorted(found, key=lambda f: (-f[0], f[1])):
        try:
            made, after = sequenced(graph, rules[k], batch, shared=True)
        except ReplayError:  # a match of the batch, applied after the others, would make a cycle
            continue
        if structural_key(after) not in seen:
            return made
    return []


#: The most rewrites a chain takes whose first ones bring the graph no closer to the goal.
CHAIN_DEPTH = 3
#: The most rewrites tried, in all, in the search for one chain.
CHAIN_TRIES = 4000


def _chain(graph: Graph, rules: Sequence[Subst], aim: "_Goal", depth: int, seen: set[int], deadline: float | None
           ) -> list[Step]:
    """The shortest chain of rewrites (up to ``depth``), the first at a place where ``graph`` differs
    from the goal and each further one at, or next to, a node the one before made, that takes the graph closer
    (:func:`_closer`):
    middle forms that neither agree with the goal nor appear in it (a sum reassociated one term at a
    time, a split moved past one op after another), to a graph not ``seen`` before. Empty if none is
    found within :data:`CHAIN_TRIES`."""
    keys = node_keys(graph)
    places = aim.places(graph, keys)
    base = (len(places), aim.distance(graph, keys, places))
    tries = [CHAIN_TRIES]
    starts = [n for n in reversed(graph.rpo()) if n in places]  # from the outputs down
    for limit in range(2, depth + 1):
        found = _extend(graph, rules, aim, limit, starts, base, seen, tries, deadline)
        if found:
            return found
    return []


def _closer(places: int, distance: int, base: tuple[int, int]) -> bool:
    """Fewer places than ``base``'s, or as many and a shorter distance (goal nodes built on the way)."""
    return places < base[0] or (places == base[0] and distance < base[1])


def _extend(graph: Graph, rules: Sequence[Subst], aim: "_Goal", depth: int, at: Sequence[Node], base: tuple[int, int],
            seen: set[int], tries: list[int], deadline: float | None, opening: bool = True) -> list[Step] | None:
    """A chain of at most ``depth`` rewrites, the first at one of the nodes ``at``, in order; after the
    opening rewrite, none where ``graph`` is already closer (:func:`_chain`)."""
    keys = node_keys(graph)
    if not opening:
        places = aim.places(graph, keys)
        if _closer(len(places), aim.distance(graph, keys, places), base) and structural_key(graph) not in seen:
            return []
    if depth == 0:
        return None
    for rule in rules:
        first_pattern = first_output(rule)
        nodes = [n for n in at if may_match(first_pattern, n)]
        matcher = Matcher(rule, graph, shared_inner=True) if nodes else None
        for node in nodes:
            for m in _options(matcher, node, rule, aim, dict(keys), keys):
                if tries[0] <= 0 or (deadline is not None and time.perf_counter() > deadline):
                    return None
                tries[0] -= 1
                try:
                    applied = apply_rule(graph, rule, m.outputs, shared=True)
                except ReplayError:
                    continue
                step = rule_step(graph, applied, rule, True)
                after = applied.after.rpo()
                made = [after[k] for k in step.made]
                readers = applied.after.successors()
                reach = list(dict.fromkeys([*made, *(r for n in made for r in (*readers.get(n, ()), *n.inputs))]))
                rest = _extend(applied.after, rules, aim, depth - 1, reach, base, seen, tries, deadline, opening=False)
                if rest is not None:
                    return [step, *rest]
    return None


class _Goal:
    """The graph to reach, and how close a node is to the goal node in its place: the nodes that agree
    with the goal's, from that node down (a node equal to the goal's, with everything it reads, counts
    as the nodes of its tree)."""

    def __init__(self, goal: Graph):
        self.graph = goal
        self.keys = node_keys(goal)
        self.held = set(self.keys.values())
        self.tuples = [node for node in goal.rpo() if node.kind is Kind.TUPLE]
        self.labels = {node: label(node) for node in goal.rpo()}
        self.size: dict[Node, int] = {}
        for node in goal.rpo():
            self.size[node] = min(1 + sum(self.size[i] for i in node.inputs), 1 << 30)

    def places(self, graph: Graph, keys: dict[Node, int]) -> dict[Node, Node | None]:
        """Each node of ``graph`` that differs from the goal's node in its place, with that node: places
        pair from the outputs down, through nodes alike but for their inputs. Below a node unlike the
        goal's, the nodes the goal does not hold anywhere are places of no goal node (None)."""
        found: dict[Node, Node | None] = {}
        stack: list[tuple[Node, Node | None]] = list(zip(graph.outputs, self.graph.outputs))
        while stack:
            node, want = stack.pop()
            if node in found or (keys[node] == self.keys[want] if want is not None else keys[node] in self.held):
                continue
            found[node] = want
            if want is not None and label(node) == label(want) and len(node.inputs) == len(want.inputs):
                stack.extend(zip(self._ordered(node, want, keys), want.inputs))
            else:
                stack.extend((i, None) for i in node.inputs)
        return found

    def distance(self, graph: Graph, keys: dict[Node, int] | None = None,
                 places: dict[Node, Node | None] | None = None) -> int:
        """How far ``graph`` is from the goal: its places, less the goal's nodes it holds (a chain may
        build them before they move to their places)."""
        keys = node_keys(graph) if keys is None else keys
        places = self.places(graph, keys) if places is None else places
        return len(places) - len(self.held.intersection(keys.values()))

    def _ordered(self, node: Node, want: Node, keys: dict[Node, int]) -> tuple[Node, ...]:
        """``node``'s inputs in the order that pairs them best with ``want``'s: two inputs the goal
        holds swapped (a sum whose terms a rule commuted) pair crosswise, so what lies below them
        pairs with its like."""
        if len(node.inputs) != 2:
            return node.inputs
        a, b = node.inputs
        x, y = want.inputs
        straight = self.agreement(a, x, keys) + self.agreement(b, y, keys)
        return (b, a) if self.agreement(b, x, keys) + self.agreement(a, y, keys) > straight else (a, b)

    def agreement(self, node: Node, want: Node, keys: dict[Node, int], depth: int = 4) -> int:
        """:meth:`closeness` to ``depth`` levels down."""
        total, stack = 0, [(node, want, 0)]
        while stack:
            a, b, d = stack.pop()
            if keys[a] == self.keys[b]:
                total += self.size[b]
            elif d < depth and label(a) == label(b) and len(a.inputs) == len(b.inputs):
                total += 1
                stack.extend((i, j, d + 1) for i, j in zip(a.inputs, b.inputs))
        return total

    def gain(self, node: Node, target: Node, want: Node | None, keys: dict[Node, int], existing: dict[Node, int],
             strict: bool = False) -> int:
        """How much closer ``target`` is than ``node`` to ``want``; in a place of no goal node, how many
        more of the nodes ``target`` newly builds the goal holds than it does not; ``strict``, none
        unless the goal holds ``target`` itself (two matmuls a concat joins, merged by another rule
        into pieces of a split, no longer match the rule that joins them)."""
        if want is not None:
            return self.closeness(target, want, keys) - self.closeness(node, want, keys)
        if strict and node_key(target, keys) not in self.held:
            return 0
        made, stack, seen = 0, [target], set()
        while stack:
            n = stack.pop()
            if n in seen or n in existing:  # a node of the graph: not built
                continue
            seen.add(n)
            made += 1 if node_key(n, keys) in self.held else -1
            stack.extend(n.inputs)
        return made

    def closeness(self, node: Node, want: Node, keys: dict[Node, int]) -> int:
        """How much of ``want``'s tree ``node`` agrees with, from the top down: a pair of nodes alike
        counts one and what their inputs agree with, a pair equal the size of ``want``'s tree (each
        pair counted once, as the trees share their subtrees)."""
        memo: dict[tuple[Node, Node], int] = {}
        stack = [(node, want)]
        while stack:
            a, b = pair = stack[-1]
            if pair in memo:
                stack.pop()
            elif node_key(a, keys) == self.keys[b]:
                memo[pair] = self.size[b]
            elif label(a) != self.labels[b] or len(a.inputs) != len(b.inputs):
                memo[pair] = 0
            else:
                below = list(zip(a.inputs, b.inputs))
                waiting = [p for p in below if p not in memo]
                if waiting:
                    stack.extend(waiting)
                else:
                    memo[pair] = 1 + sum(memo[p] for p in below)
        return memo[(node, want)]


def _toward(graph: Graph, rule: Subst, keys: dict[Node, int], places: dict[Node, Node | None], aim: _Goal,
            strict: bool = False) -> tuple[list[tuple[Node, ...]], int]:
    """The matches of ``rule`` in ``graph`` (none overlapping) whose targets agree more with the goal, in
    the places of their outputs, than the outputs did, each by its source outputs, and how much closer
    they take the graph in all. A variadic match
    may take fewer instances, grouped as a tuple of the goal groups them (an e-graph merges groups of
    fixed sizes)."""
    scratch = dict(keys)
    matcher = Matcher(rule, graph, shared_inner=True)
    first = matcher.first_output()
    taken: list[tuple[Node, ...]] = []
    total = 0
    for node in graph.rpo():
        if node in matcher.consumed or not may_match(first, node):
            continue
        best, gained = None, 0
        for m in _options(matcher, node, rule, aim, scratch, keys):
            gain = _gain(m, rule, places, aim, scratch, keys, strict)
            if gain > gained:
                best, gained = m, gain
        if best is not None:
            matcher.consumed.update(n for p, n in matched_nodes(best) if p not in matcher.inputs)
            taken.append(tuple(best.outputs))
            total += gained
    return taken, total


def _gain(m: Match, rule: Subst, places: dict[Node, Node | None], aim: _Goal, scratch: dict[Node, int],
          keys: dict[Node, int], strict: bool = False) -> int:
    """How much closer to the goal ``m``'s target takes the places of its outputs; 0 if it takes any
    further, or none is a place."""
    placed = [(o, k) for k, o in enumerate(m.outputs) if o in places]
    if not placed:
        return 0
    built = build_target(rule, m)
    if isinstance(built, Rejection):
        return 0
    gains = [aim.gain(o, built.targets[k], places[o], scratch, keys, strict) for o, k in placed]
    return sum(gains) if min(gains) >= 0 else 0


def _options(matcher: Matcher, node: Node, rule: Subst, aim: _Goal, scratch: dict[Node, int],
             keys: dict[Node, int]) -> list[Match]:
    """The matches whose first source output is ``node``: the greedy one and, for a variadic source,
    the groups of its instances that the goal's tuples take; for two source outputs, each other
    partner of ``node`` (:func:`_partnered`)."""
    if not rule.connected:  # two source outputs sharing no pattern: an e-graph pairs any two e-classes
        return _partnered(matcher, node, None)
    m = matcher.match_at(node)
    if m is None:
        return []
    if not rule.variadic:
        return [m, *_partnered(matcher, node, m)] if len(m.outputs) == 2 else [m]
    if len(m.outputs) < 2:
        return [m]
    built = build_target(rule, m)
    if isinstance(built, Rejection):
        return [m]
    (runs,) = m.instances.values()
    bound = [{node_key(n, scratch) for n in instance.values()} for instance in runs]
    options, groups = [m], {tuple(m.outputs)}
    for tup in aim.tuples:  # each field of the goal's tuple: the instance binding it
        group = tuple(next((o for o, b in zip(m.outputs, bound) if aim.keys[f] in b), None) for f in tup.inputs)
        if None in group or group[0] is not node or len(set(group)) < len(group) or group in groups:
            continue
        groups.add(group)
        sub = matcher.match_at(node, group=group)
        if sub is not None:
            options.append(sub)
    return options


#: The most partners of a two-output match tried besides the greedy one.
PARTNERS = 32
#: How many readers up from the nodes a match's inputs bound its partners are looked for.
PARTNER_DEPTH = 3


def _partnered(matcher: Matcher, first: Node, m: Match | None) -> list[Match]:
    """The matches of a two-output rule that pair ``first`` with another node that reads, within a few
    readers up, the nodes the inputs of ``first``'s match ``m`` bound, or what they read (the greedy
    matcher takes the first partner it meets; an e-graph merges any pair); without ``m`` (a source
    whose outputs share no pattern), what ``first`` reads and what that reads. In either order where
    the rule is symmetric."""
    if m is None:
        bound, inner, second = list(first.inputs), {first}, None
    else:
        bound = [n for p, n in matched_nodes(m) if p in matcher.inputs]
        inner, second = {n for _, n in matched_nodes(m)}, m.outputs[1]
    near = list(dict.fromkeys([*bound, *(i for n in bound for i in n.inputs)]))
    for _ in range(PARTNER_DEPTH):
        near = list(dict.fromkeys([*near, *(r for n in near for r in matcher.succ.get(n, ()))]))
    pattern = matcher.rule.source.outputs[1]
    below = _below(matcher.graph)
    partners = [r for r in near if r is not second and r not in inner and may_match(pattern, r)
                and not _reads(below, r, first) and not _reads(below, first, r)][:PARTNERS]
    orders = [(first, r) for r in partners]
    if matcher.rule.symmetric:
        orders += [(r, first) for r in partners] + ([(second, first)] if second is not None else [])
    found = []
    for outputs in orders:
        other = matcher.match_outputs(outputs)
        if other is not None:
            found.append(other)
    return found


@lru_cache(maxsize=8)
def _below(graph: Graph) -> dict[Node, int]:
    """Each node of ``graph`` with the nodes it reads, through any path, and itself, as bits of their
    positions in reverse post-order (the highest bit is the node's own): two outputs of one rewrite
    must not read each other, or the rewrite would make a cycle."""
    below: dict[Node, int] = {}
    for k, node in enumerate(graph.rpo()):
        bits = 1 << k
        for i in node.inputs:
            bits |= below[i]
        below[node] = bits
    return below


def _reads(below: dict[Node, int], a: Node, b: Node) -> bool:
    """Whether ``a`` reads ``b``, through any path (:func:`_below`)."""
    return bool(below[a] >> (below[b].bit_length() - 1) & 1)

"""GSL rules compiled into guarded egglog rewrites.

egglog e-matches fixed shapes, so a rule's source is first made concrete: one
:class:`Query` per choice of op behind each op trait, of alternative at each
``pat.Alt`` (or branch at a source ``pat.Cond``) and of length for each
``pat.Variadic`` (tuple arities present in the e-graph; 1 or ``min_len`` up to
``max_variadic`` instances for variadic outputs). Each query is the source's
nodes written as egglog facts, one *slot* per node, and becomes egglog rules:

* *search* e-matches the source once and records, for every match, a **key**
  (the form of each call, tuple and projection, which holds its attributes and
  the types of it and its inputs, and each constant's value id: plain integers
  the pattern binds itself, so the matches of repeated blocks share a handful of
  keys) and a worklist **row**: the e-classes of the outputs and of the source
  nodes the target reads, then the key. (egglog enumerates only the distinct
  bindings of what a rule's actions use, so matches differing only in nodes the
  target does not read are one row.)
* Python decides each new key once (:meth:`Query.decide`). The key holds
  everything a GSL rule may read, so it rebuilds the matched subgraph as a small
  graph and runs greedy mode's own matcher and target builder on it: the
  attribute guards, op traits, alternatives, variadic instances and target
  attributes mean exactly what they mean in greedy mode, and TVM infers the
  type of every new node. The target it built, read as a shape (kinds, ops,
  wiring to the slots), is a **variant**; the forms of the nodes it creates go
  into tables keyed by the key. Rows of rejected keys are dropped (*reject*);
  :meth:`Query.decide` says why a key is rejected (:data:`SOURCE_GUARD_FALSE` or a
  :class:`~gsl_eq.greedy.rewriter.Refusal`'s text).
* *apply* rules, one per variant, read worklist rows (never the e-graph), create
  the target e-nodes, union each source output with its target and delete the row.
  What they did is not recorded: once a term is chosen, the *provenance* rules (the
  source, its key's decision and the target's e-nodes, joined with the chosen e-nodes)
  tell which rules build it (:func:`.attribution.attribute`). To apply a rule in part,
  the runner moves its rows into buckets (by a hash of the match's e-classes) and a
  *window* twin applies chosen buckets.

While the runner's limits are far, its iterations are *fast*: a *key* rule per
query records only the keys of its matches (egglog enumerates just their distinct
values; the rule is skipped when every key a match could have is decided,
:meth:`Query.covered`), Python decides the new ones, and a *direct* rule per
variant applies every match of a decided key where it is found, without a worklist
(:meth:`~.runner.Runner._fast`).

So e-matching, union and rebuilding stay in the engine, each match is found
once, and Python sees one row per distinct key, never one per match. A rule
with several source outputs becomes one multi-pattern query; distinct outputs
never match one e-class (a match maps distinct patterns to distinct nodes).

A source whose outputs share no node (``[relu(a), relu(b)]``) would make that
query a cartesian product of its parts' matches. Instead each part is e-matched
alone (*find*) into rows of its own, with its own keys; Python decides each new
combination of part keys once (the same :meth:`Query.decide`, on the combined
key) and accepts it into ``Pair``; rows wait in buckets until the runner opens
them (*activate*), and *pair* joins the active rows of every part under the
accepted combinations into the worklist. Pairing is semi-naive, so each
combination of rows is formed once, and the runner opens only as many buckets as
its budget of new pairs allows (:meth:`~.runner.Runner._pair_all`).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Collection, Iterator

from ..errors import GslEqError
from ..frontend import Subst, spec
from ..frontend.check import mirror
from ..frontend.errors import EvaluationError
from ..frontend.pat import (Alt, Call, Cond, Const, GetItem, OpWithTrait, Pattern, Tuple, Variable,
                            Variadic, Wildcard)
from ..graph import Graph, Kind, Node
from ..graph.types import Type
from ..greedy.match import Matcher
from ..greedy.rewriter import Rejection, build_target
from .egraph import BUCKETS, EGraph, constructor_name, head_name, mix, want_relation

#: The parts of a variant's program (:meth:`Query.variant_program`), in the order they are defined.
VARIANT_PARTS = ("tables", "apply", "direct", "prune", "provenance")
#: The most keys :meth:`Query.covered` enumerates.
KEY_SPACE = 64
#: Default largest number of instances a variadic source output is instantiated with (larger
#: groups of the loaded graph are merged whole when it is loaded: :mod:`.seeding`).
MAX_VARIADIC = 3
#: Why :meth:`Query.decide` rejects a key greedy mode's matcher does not match: a source guard
#: (an attribute constraint, a same-attribute or op-trait condition) is false on it.
SOURCE_GUARD_FALSE = "source guard false"


class UnsupportedRuleError(GslEqError):
    """A rule uses a construct saturate mode cannot compile."""


@dataclass(frozen=True)
class Slot:
    """One node of a query: its egglog variable, its form and its child slots."""

    kind: Kind | None  # None: a wildcard, bound by the slot that reads it
    op: str | None
    children: tuple[int, ...]

    @property
    def has_form(self) -> bool:
        return self.kind in (Kind.CALL, Kind.TUPLE, Kind.GETITEM)

    @property
    def in_key(self) -> bool:
        """Whether the key holds a value of this slot: its form, or a constant's value id."""
        return self.has_form or self.kind is Kind.CONST


@dataclass
class Variant:
    """One shape of built target: the nodes it creates (kind, op, child references) and the unions.

    A reference is ``("s", slot)`` for a matched node or ``("n", j)`` for created node j.
    """

    index: int
    created: tuple[tuple[Kind, str | None, tuple[tuple[str, int], ...]], ...]
    unions: tuple[tuple[int, tuple[str, int]], ...]


@dataclass(frozen=True)
class Rulesets:
    """The egglog rulesets a rule's queries put their rules in."""

    search: str
    bucket: str
    apply: str
    window: str
    #: For disconnected sources: each part e-matched alone, its rows into buckets, and active
    #: rows paired (the rows of opened buckets are made active by a ruleset per query and part,
    #: :meth:`Query.activate`).
    find: str
    pend: str
    pair: str
    #: Fast iterations (:meth:`~.runner.Runner._fast`): *key* records the keys of the source's
    #: matches (egglog enumerates only their distinct values), *direct* applies every new match
    #: of a decided key at once, with no worklist.
    key: str
    direct: str
    #: *prune* deletes the worklist rows whose target is already built (:meth:`Query.variant_program`).
    prune: str
    reject: str = "reject"
    clear: str = "clear"

    @classmethod
    def of_rule(cls, k: int) -> "Rulesets":
        kinds = ("search", "bucket", "apply", "window", "find", "pend", "pair", "key", "direct", "prune")
        return cls(*(f"{kind}_{k}" for kind in kinds))

    def declarations(self) -> str:
        own = (self.search, self.bucket, self.apply, self.window, self.find, self.pend, self.pair, self.key,
               self.direct, self.prune)
        return "\n".join(f"(ruleset {r})" for r in own)


@dataclass
class Query:
    """One concrete shape of a rule's source, with its egglog rules and decided keys."""

    rule: Subst
    index: int  # the rule's index in the runner
    name: str
    slots: list[Slot]
    outputs: list[int]
    kept: list[int]  # the slots a worklist row holds: the outputs and what the target reads
    #: The slots of each connected part of the source, when it has several (outputs sharing no
    #: node): each part is e-matched alone and its matches are paired (:meth:`program`).
    components: list[list[int]] = field(default_factory=list)
    #: For a symmetric rule (``Subst(symmetric=True)``), one involution of the slots per two
    #: neighbouring outputs, swapping them: only matches whose outputs' ranks ascend are applied.
    mirrors: list[dict[int, int]] = field(default_factory=list)
    variants: dict[tuple, Variant] = field(default_factory=dict)
    seen: set[tuple[int, ...]] = field(default_factory=set)
    #: Per component, the component keys already combined into full keys.
    component_seen: list[set[tuple[int, ...]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.component_seen = [set() for _ in self.components]
        self._covered, self._covered_state = False, None

    @property
    def multi_output(self) -> bool:
        return len(self.outputs) > 1

    @property
    def disconnected(self) -> bool:
        return len(self.components) > 1

    @property
    def created(self) -> int:
        """The most e-nodes one application can add (over the variants decided so far)."""
        return max((len(v.created) for v in self.variants.values()), default=0)

    @property
    def key_arity(self) -> int:
        return sum(s.in_key for s in self.slots)

    def key_positions(self, slots: list[int]) -> list[int]:
        """Where the values of ``slots`` are in the key."""
        position = list(itertools.accumulate((s.in_key for s in self.slots), initial=0))
        return [position[i] for i in sorted(slots) if self.slots[i].in_key]

    @functools.cached_property
    def key_heads(self) -> list[str]:
        """The egglog constructor of each key position's slot."""
        return [head_name(s.kind, s.op, len(s.children)) for s in self.slots if s.in_key]

    def ready(self, eg: EGraph) -> bool:
        """Whether every constructor the source matches may have e-nodes (``eg.literals``); until
        then it has no match, and egglog need not compile its rules."""
        return all(head in eg.literals for head in self.key_heads)

    def covered(self, eg: EGraph) -> bool:
        """Whether every key a match could have is decided already, so that recording keys can be
        skipped: each key position holds a literal its constructor's e-nodes may hold
        (``eg.literals``), and every combination of those (at most :data:`KEY_SPACE`) is seen."""
        pools = [eg.literals.get(h, set()) for h in self.key_heads]
        state = (tuple(len(p) for p in pools), len(self.seen))
        if self._covered_state != state:
            self._covered = (math.prod(len(p) for p in pools) <= KEY_SPACE
                             and all(key in self.seen for key in itertools.product(*pools)))
            self._covered_state = state
        return self._covered

    # --- text of the egglog rules -------------------------------------------------------
    def facts(self, slots: list[int] | None = None) -> str:
        """The source (or the part of it in ``slots``) as egglog facts. The key is the form of every
        call, tuple and projection (attributes and types: a leaf's type is in its parent's form)
        and every constant's value, all bound by the pattern itself: no lookups."""
        chosen = set(range(len(self.slots)) if slots is None else slots)
        facts, j = [], 0
        for i, s in enumerate(self.slots):
            children = " ".join(f"p{c}" for c in s.children)
            if i not in chosen:
                pass
            elif s.has_form:
                ctor = "GetItem" if s.kind is Kind.GETITEM else constructor_name(s.kind, s.op, len(s.children))
                facts.append(f"(= p{i} ({ctor} k{j} {children}))")
            elif s.kind is Kind.CONST:
                facts.append(f"(= p{i} (Const k{j}))")
            elif s.kind is Kind.VAR:
                facts.append(f"(= p{i} (Var n{i}))")
            j += s.in_key
        outputs = [o for o in self.outputs if o in chosen]
        facts.reverse()  # parents before their children: egglog's join order follows, and is faster so
        facts += [f"(!= p{a} p{b})" for a, b in itertools.combinations(outputs, 2)]
        if slots is None:
            facts += self.one_of_mirrors()
        return " ".join(facts)

    def one_of_mirrors(self) -> list[str]:
        """For a symmetric rule, the facts keeping one match of each set of mirrored ones: the
        outputs' e-class ranks ascend (``order``; ties kept both ways: every set keeps its sorted order)."""
        if not self.mirrors:
            return []
        return [f"(<= (order p{a}) (order p{b}))" for a, b in itertools.pairwise(self.outputs)]

    def mirrored(self, key: tuple[int, ...], mirror: dict[int, int]) -> tuple[int, ...]:
        """The key of the match ``mirror`` (one of :attr:`mirrors`) makes of the match of ``key``."""
        position = list(itertools.accumulate((s.in_key for s in self.slots), initial=0))
        out = list(key)
        for slot, image in mirror.items():
            if self.slots[slot].in_key:
                out[position[slot]] = key[position[image]]
        return tuple(out)

    def key_vars(self, slots: list[int] | None = None) -> str:
        positions = range(self.key_arity) if slots is None else self.key_positions(slots)
        return " ".join(f"k{j}" for j in positions)

    def row(self, slots: list[int] | None = None) -> str:
        """The columns of a worklist row: the e-classes of the kept slots, then the key (of the
        part of the source in ``slots``, or of the whole)."""
        return " ".join([*(f"p{i}" for i in self._kept(slots)), self.key_vars(slots)])

    def _kept(self, slots: list[int] | None) -> list[int]:
        """The kept slots (of the part in ``slots``, or all)."""
        return self.kept if slots is None else [i for i in self.kept if i in slots]

    def program(self, rulesets: "Rulesets") -> str:
        """The relations of the query and its rules but the apply rules (:meth:`variant_program`).

        *search*: every match adds its key to ``Key_<q>`` (what Python decides) and
        its row to the worklist ``M_<q>``, so the source is e-matched once;
        *reject* drops the rows of rejected keys; *bucket* moves rows to the
        bucketed worklist ``MB_<q>`` (a hash of the row's e-classes picks the bucket), from which buckets can be applied one by one; *clear*
        empties both worklists.
        """
        key, row = self.key_vars(), f"(M_{self.name} {self.row()})"
        lines = [
            f"(relation Key_{self.name} ({self._sorts()}))",
            f"(relation Rej_{self.name} ({self._sorts()}))",
            *self._bucketed(f"M_{self.name}", f"MB_{self.name}", None, rulesets.bucket, rulesets.clear),
            f"(rule ({row} (Rej_{self.name} {key})) ((delete {row})) :ruleset {rulesets.reject})",
        ]
        if not self.disconnected:
            lines += [f"(rule ({self.facts()}) ((Key_{self.name} {key}) {row}) :ruleset {rulesets.search} "
                      f":name \"search {self.name}\")",
                      f"(rule ({self.facts()}) ((Key_{self.name} {key})) :ruleset {rulesets.key} "
                      f":name \"key {self.name}\")"]
            return "\n".join(lines)
        # Each part is matched alone ("find"); its rows wait (Pend, then PendB in a bucket) until
        # their bucket is opened (Act), and active rows of every part are paired under the keys
        # Python accepted (Pair): pairing is semi-naive, so each combination is formed once.
        lines.append(f"(relation Pair_{self.name} ({self._sorts()}))")
        for c, part in enumerate(self.components):
            pend, act = f"(Pend_{self.name}_{c} {self.row(part)})", f"(Act_{self.name}_{c} {self.row(part)})"
            lines += [
                f"(relation Key_{self.name}_{c} ({self._sorts(part)}))",
                f"(relation Act_{self.name}_{c} ({self._sorts(part, exprs=True)}))",
                *self._bucketed(f"Pend_{self.name}_{c}", f"PendB_{self.name}_{c}", part, rulesets.pend, rulesets.clear),
                f"(ruleset {self.activate(c)})",
                f"(rule ({self.facts(part)} (Pairable p{self.part_outputs()[c]})) "
                f"((Key_{self.name}_{c} {self.key_vars(part)}) {pend}) "
                f":ruleset {rulesets.find} :name \"find {self.name}_{c}\")",
                f"(rule ((Open b) (PendB_{self.name}_{c} {self.row(part)} b)) "
                f"({act} (delete (PendB_{self.name}_{c} {self.row(part)} b))) :ruleset {self.activate(c)})",
                f"(rule ({act}) ((delete {act})) :ruleset {rulesets.clear})",
            ]
        across = [f"(Apart p{a} p{b})" for a, b in itertools.combinations(self.part_outputs(), 2)]
        acts = " ".join(f"(Act_{self.name}_{c} {self.row(part)})" for c, part in enumerate(self.components))
        lines.append(f"(rule ({acts} (Pair_{self.name} {key}) {' '.join(across + self.one_of_mirrors())}) ({row}) "
                     f":ruleset {rulesets.pair} "
                     f":name \"search {self.name}\")")
        return "\n".join(lines)

    def peek_program(self, k: int) -> str:
        """Rules copying the rows of the opened buckets of the bucketed worklist into ``Peek_<q>``
        (ruleset ``peek_<k>``) and emptying it (``unpeek_<k>``): egglog then counts those rows
        before any is applied (:meth:`~.runner.Runner._fitting`)."""
        sorts, cols, peek = self._sorts(exprs=True), self.row(), f"Peek_{self.name}"
        return "\n".join([
            f"(relation {peek} ({sorts}))",
            f"(rule ((Open b) (MB_{self.name} {cols} b)) (({peek} {cols})) :ruleset peek_{k})",
            f"(rule (({peek} {cols})) ((delete ({peek} {cols}))) :ruleset unpeek_{k})",
        ])

    def part_outputs(self) -> list[int]:
        """The first source output of each part."""
        return [next(o for o in self.outputs if o in part) for part in self.components]

    def activate(self, c: int) -> str:
        """The ruleset making the rows of part ``c`` in opened buckets active."""
        return f"activate_{self.name}_{c}"

    def _sorts(self, slots: list[int] | None = None, exprs: bool = False) -> str:
        """The column sorts of a key (or, with ``exprs``, of a row) of the source or of the part in ``slots``."""
        keys = self.key_arity if slots is None else len(self.key_positions(slots))
        return " ".join(["Expr"] * (len(self._kept(slots)) if exprs else 0) + ["i64"] * keys)

    def _bucketed(self, plain: str, twin: str, slots: list[int] | None, bucket: str, clear: str) -> list[str]:
        """Worklist ``plain`` of rows (of the source, or of the part in ``slots``) and its bucketed
        twin: the *bucket* rule moves each row to a bucket a hash of its e-classes picks."""
        sorts, cols, kept = self._sorts(slots, exprs=True), self.row(slots), self._kept(slots)
        hashes = " ".join(f"(= h{i} (num p{i}))" for i in kept)
        mixed = mix(*(f"h{i}" for i in kept))  # not a xor: an e-class's hash is a polynomial of its children's
        return [
            f"(relation {plain} ({sorts}))",
            f"(relation {twin} ({sorts} i64))",
            f"(rule (({plain} {cols}) {hashes}) (({twin} {cols} (% {mixed} {BUCKETS})) (delete ({plain} {cols}))) "
            f":ruleset {bucket})",
            f"(rule (({plain} {cols})) ((delete ({plain} {cols}))) :ruleset {clear})",
            f"(rule (({twin} {cols} b)) ((delete ({twin} {cols} b))) :ruleset {clear})",
        ]

    def variant_program(self, eg: EGraph, v: Variant, rulesets: "Rulesets",
                        parts: Collection[str] = VARIANT_PARTS) -> str:
        """The ``parts`` (of :data:`VARIANT_PARTS`) of one variant: its *tables* and its rules, each
        defined when first needed (egglog compiles every rule it is given).

        *apply* consumes every worklist row (of either worklist) whose key chose this variant,
        *window* only the bucketed rows of the buckets in ``Open``: each creates the target's
        e-nodes, unions each source output with its target and deletes the row; they read rows,
        never the e-graph. *direct* does the same for every match of the source itself (a fast
        iteration: no worklist). *prune* deletes the rows whose target is already built and
        unioned (matches an earlier iteration applied, which a semi-naive search can find again).
        *provenance* rules (run once a term is chosen, :func:`.attribution.attribute`) find where
        the source matches under a key that chose this variant and the target's e-node ``j`` is a
        wanted one (or, for a union with a matched node, the source output's e-class is wanted)."""
        table, key, sorts = f"{self.name}_{v.index}", self.key_vars(), " ".join(["i64"] * self.key_arity)
        # the key chose this variant: Ok, or (when the target creates nodes) the first created node's form
        tables = [] if v.created else [f"(function Ok_{table} ({sorts}) i64 :merge old)"]
        lookups, actions, terms = [] if v.created else [f"(= ok (Ok_{table} {key}))"], [], []
        ref = {("s", i): f"p{i}" for i in self.kept}  # in queries: created nodes are bound variables
        made = dict(ref)  # in actions: a created node read once is written where it is read
        reads = [0] * len(v.created)  # (egglog's let costs time: a node read once is inlined instead)
        for c in [c for _, _, children in v.created for c in children] + [t for _, t in v.unions]:
            if c[0] == "n":
                reads[c[1]] += 1
        for j, (kind, op, children) in enumerate(v.created):
            tables.append(f"(function A_{table}_{j} ({sorts}) i64 :merge old)")
            lookups.append(f"(= A{j} (A_{table}_{j} {key}))")
            arity = len(children)
            ctor = eg.declare(kind, op, arity) if kind in (Kind.CALL, Kind.TUPLE) else head_name(kind, op, arity)
            ref[("n", j)] = f"new{j}"
            terms.append((ctor, f"A{j} {' '.join(ref[c] for c in children)}".strip()))
            term = f"({ctor} {f'A{j} ' + ' '.join(made[c] for c in children)})".replace(" )", ")")
            if reads[j] == 1:
                made[("n", j)] = term
            else:
                actions.append(f"(let new{j} {term})")
                made[("n", j)] = f"new{j}"
        actions += [f"(union p{s} {made[t]})" for s, t in v.unions]
        body, head = " ".join(lookups), " ".join(actions)
        row, bucketed = f"(M_{self.name} {self.row()})", f"(MB_{self.name} {self.row()} b)"
        lines = {"tables": tables, "apply": [], "direct": [], "prune": [], "provenance": []}
        lines["apply"] = [
            f"(rule ({row} {body}) ({head} (delete {row})) :ruleset {rulesets.apply} :name \"apply {table}\")",
            f"(rule ({bucketed} {body}) ({head} (delete {bucketed})) :ruleset {rulesets.apply} "
            f":name \"apply {table} bucketed\")",
            f"(rule ((Open b) {bucketed} {body}) ({head} (delete {bucketed})) :ruleset {rulesets.window} "
            f":name \"window {table}\")",
        ]
        source = f"{self.facts()} {body}"
        if not self.disconnected:  # a disconnected source's matches are paired, never applied directly
            lines["direct"].append(f"(rule ({source}) ({head}) :ruleset {rulesets.direct} :name \"direct {table}\")")
        built = [f"(= new{j} ({ctor} {args}))" for j, (ctor, args) in enumerate(terms)]
        done = " ".join([*built, *(f"(= p{s} {ref[t]})" for s, t in v.unions)])
        lines["prune"].append(f"(rule ({row} {body} {done}) ((delete {row})) :ruleset {rulesets.prune} "
                              f":name \"prune {table}\")")
        for j, (ctor, args) in enumerate(terms):
            lines["provenance"].append(
                f"(rule (({want_relation(ctor)} {args} w) {' '.join(built[:j])} {source}) "
                f"((BuiltChosen w {self.index})) :ruleset provenance :name \"provenance {table} {j}\")")
        for s, t in v.unions:
            if t[0] == "s":
                lines["provenance"].append(f"(rule ((WantClass p{s} w) {source}) ((MergedChosen w {self.index})) "
                                           f":ruleset provenance :name \"provenance {table} union {s}\")")
        return "\n".join(line for part in parts for line in lines[part])

    # --- deciding one key ----------------------------------------------------------------
    def decide(self, eg: EGraph, key: tuple[int, ...]) -> tuple[Variant, list[int]] | str:
        """Run greedy mode's matcher and target builder on the subgraph ``key`` describes.

        Returns the variant the built target takes and, for each node it creates,
        its form (or a constant's value id); or, when the key is rejected, why:
        :data:`SOURCE_GUARD_FALSE` (the matcher refuses it, or cannot evaluate a
        guard on it) or the :class:`~gsl_eq.greedy.rewriter.Refusal` text of
        :func:`~gsl_eq.greedy.rewriter.build_target` (the target cannot be typed, an
        output's type would change).
        """
        nodes = self._materialize(eg, key)
        outputs = [nodes[o] for o in self.outputs]
        try:
            matcher = Matcher(self.rule, Graph([], outputs))
            m = matcher.match_outputs(outputs) if self.disconnected else matcher.match_at(outputs[0])
        except (KeyError, EvaluationError, TypeError):
            return SOURCE_GUARD_FALSE
        if m is None or set(m.outputs) != set(outputs):
            return SOURCE_GUARD_FALSE
        builder = build_target(self.rule, m)
        if isinstance(builder, Rejection):
            return builder.reason.value
        built = builder.targets
        slot_of = {n: i for i, n in enumerate(nodes)}
        created: dict[Node, int] = {}
        shape: list[tuple[Kind, str | None, tuple[tuple[str, int], ...]]] = []
        payloads: list[int] = []

        def ref(node: Node) -> tuple[str, int]:
            if node in slot_of:
                return ("s", slot_of[node])
            if node not in created:
                children = tuple(ref(i) for i in node.inputs)
                created[node] = len(shape)
                shape.append((node.kind, node.op, children))
                payloads.append(eg.const(node.value) if node.kind is Kind.CONST else eg.form(node))
            return ("n", created[node])

        unions = tuple((slot_of[o], ref(b)) for o, b in zip(m.outputs, built) if b is not o)
        del ref  # the recursive closure is a cycle holding the e-graph: only the cycle collector would free it
        read = {i for _, _, children in shape for kind, i in children if kind == "s"} | {i for i, _ in unions}
        if not read <= set(self.kept):
            raise UnsupportedRuleError(f"rule {self.rule.name}: its target reads source nodes saturate mode did not keep")
        signature = (tuple(shape), unions)
        variant = self.variants.get(signature)
        if variant is None:
            variant = self.variants[signature] = Variant(len(self.variants), *signature)
        return variant, payloads

    def _materialize(self, eg: EGraph, key: tuple[int, ...]) -> list[Node]:
        """The matched subgraph as nodes: every call, tuple, projection and constant as the key
        says, each leaf a variable of the type its parent's form gives it."""
        values: Iterator[int] = iter(key)
        payloads = [next(values) if s.in_key else None for s in self.slots]
        types: dict[int, Type] = {}
        for i, s in enumerate(self.slots):
            if s.has_form:
                form = eg.forms[payloads[i]]
                types[i] = eg.types[form.type]
                for child, ty in zip(s.children, form.inputs):
                    types.setdefault(child, eg.types[ty])
            elif s.kind is Kind.CONST:
                types[i] = eg.types[eg.const_type(payloads[i])]
        nodes: list[Node] = []
        for i, s in enumerate(self.slots):
            ty, inputs = types[i], [nodes[c] for c in s.children]
            if s.kind is Kind.CALL:
                node = Node(Kind.CALL, ty, inputs, s.op, dict(eg.attrs[eg.forms[payloads[i]].payload]))
            elif s.kind is Kind.GETITEM:
                node = Node(Kind.GETITEM, ty, inputs, attrs={"index": eg.forms[payloads[i]].payload})
            elif s.kind is Kind.CONST:
                node = Node(Kind.CONST, ty, value=eg.consts[payloads[i]])
            elif s.kind is Kind.TUPLE:
                node = Node(Kind.TUPLE, ty, inputs)
            else:  # a variable, or what a wildcard matched: a leaf of the subgraph
                node = Node(Kind.VAR, ty, name=f"p{i}")
            nodes.append(node)
        return nodes


class _Instantiation:
    """Walks a rule's source for one choice of trait ops, alternatives and variadic lengths."""

    def __init__(self, rule: Subst, ops: dict[OpWithTrait, str], choice: dict[Pattern, int], lengths: dict[Variadic, int]):
        self.rule, self.ops, self.choice, self.lengths = rule, ops, choice, lengths
        self.slots: list[Slot] = []
        self.memo: dict[tuple[Pattern, Any], int] = {}

    def outputs(self) -> list[int]:
        outs = self.rule.source.outputs
        if self.rule.variadic:
            v = outs[0]
            return [self.instance_field(v, k) for k in range(self.lengths[v])]
        return [self.slot(p, None) for p in outs]

    def instance_field(self, v: Variadic, k: int) -> int:
        if k == 0 and v.first:
            return self.slot(v.first[v.templates.index(v.field)], None)
        return self.slot(v.field, (v, k))

    def slot(self, p: Pattern, instance: tuple[Variadic, int] | None) -> int:
        owner = self.rule.template_owner.get(p)
        scope = instance if instance is not None and owner is instance[0] else None
        if owner is not None and scope is None:
            raise UnsupportedRuleError(f"rule {self.rule.name}: {p.describe()} is a template reached outside its variadic")
        instance = scope  # a shared pattern, and all it reads, is the same in every instance
        memo_key = (p, scope)
        if memo_key in self.memo:
            return self.memo[memo_key]
        if isinstance(p, Alt):
            index = self.slot(p.alts[self.choice[p]], instance)
        elif isinstance(p, Cond):
            index = self.slot(p.then if self.choice[p] == 0 else p.orelse, instance)
        elif isinstance(p, Variadic):
            if instance is not None:
                raise UnsupportedRuleError(f"rule {self.rule.name}: variadics nested in variadics are not compiled")
            fields = tuple(self.instance_field(p, k) for k in range(self.lengths[p]))
            index = self._add(Slot(Kind.TUPLE, None, fields))
        elif isinstance(p, Call):
            children = tuple(self.slot(c, instance) for c in p.inputs)
            # calls of one op trait share the op here; greedy mode's matcher checks they share attributes
            index = self._add(Slot(Kind.CALL, p.op if isinstance(p.op, str) else self.ops[p.op], children))
        elif isinstance(p, Tuple):
            index = self._add(Slot(Kind.TUPLE, None, tuple(self.slot(c, instance) for c in p.inputs)))
        elif isinstance(p, GetItem):
            index = self._add(Slot(Kind.GETITEM, None, (self.slot(p.inputs[0], instance),)))
        elif isinstance(p, Const):
            index = self._add(Slot(Kind.CONST, None, ()))
        elif isinstance(p, Variable):
            index = self._add(Slot(Kind.VAR, None, ()))
        elif isinstance(p, Wildcard):
            index = self._add(Slot(None, None, ()))
        else:
            raise UnsupportedRuleError(f"rule {self.rule.name}: {p.describe()} in a source is not compiled for saturation")
        self.memo[memo_key] = index
        return index

    def _add(self, s: Slot) -> int:
        self.slots.append(s)
        return len(self.slots) - 1

    def kept(self, outputs: list[int]) -> list[int]:
        """The slots a worklist row needs: the outputs and the source nodes the target reads
        (every slot when the source has variadics, alternatives or conditions: what the target
        reads then depends on the match)."""
        if self.rule.source.variadics or any(isinstance(p, (Alt, Cond)) for p in self.rule.source.rpo):
            return list(range(len(self.slots)))
        read = {self.memo[(p, None)] for p in self.rule.target.inputs if (p, None) in self.memo}
        return sorted({*outputs, *read})


def compile_rule(rule: Subst, index: int, eg: EGraph, max_variadic: int = MAX_VARIADIC) -> list[Query]:
    """The queries of ``rule`` (index ``index`` in the runner), with the constructors they use declared in ``eg``."""
    source = rule.source.rpo
    present = {op for kind, op, _ in eg.constructors.values() if kind is Kind.CALL}
    tuple_sizes = sorted(n for kind, _, n in eg.constructors.values() if kind is Kind.TUPLE)
    traits = list(dict.fromkeys(p.op for p in source if isinstance(p, Call) and isinstance(p.op, OpWithTrait)))
    # Only ops already in the e-graph can match; an op trait expands to those of its ops.
    trait_choices = [[o for o in spec.ops_with_trait(t.trait) if o in present] for t in traits]
    branches = [p for p in source if isinstance(p, (Alt, Cond))]
    branch_choices = [range(len(p.alts)) if isinstance(p, Alt) else range(2) for p in branches]
    variadics = list(rule.source.variadics)
    length_choices = []
    for v in variadics:
        low = v.min_len or (1 if rule.variadic else 0)
        if rule.variadic and v is rule.source.outputs[0]:
            length_choices.append(range(max(low, 1), max(max_variadic, low) + 1))
        else:
            length_choices.append([n for n in tuple_sizes if n >= low])
    queries, shapes = [], set()
    for ops, alts, lengths in itertools.product(itertools.product(*trait_choices), itertools.product(*branch_choices),
                                                itertools.product(*length_choices)):
        walk = _Instantiation(rule, dict(zip(traits, ops)), dict(zip(branches, alts)), dict(zip(variadics, lengths)))
        outputs = walk.outputs()
        if any(walk.slots[o].kind is None for o in outputs):
            raise UnsupportedRuleError(f"rule {rule.name}: a source output that is a wildcard cannot be e-matched")
        parented = {c for s in walk.slots for c in s.children}
        if any(s.kind in (None, Kind.VAR) and i not in parented for i, s in enumerate(walk.slots)):
            raise UnsupportedRuleError(f"rule {rule.name}: a variable that is a whole source output cannot be e-matched")
        shape = (tuple(walk.slots), tuple(outputs))
        if shape in shapes:
            continue
        shapes.add(shape)
        for s in walk.slots:
            if s.kind is Kind.CALL:
                eg.declare(Kind.CALL, s.op, len(s.children))
            elif s.kind is Kind.TUPLE:
                eg.declare(Kind.TUPLE, None, len(s.children))
        parts = _components(walk.slots)
        swaps = []
        if rule.symmetric:
            swaps = [mirror(pair, lambda i: walk.slots[i].children, lambda i: (walk.slots[i].kind, walk.slots[i].op))
                     for pair in itertools.pairwise(outputs)]
            if None in swaps:
                raise UnsupportedRuleError(f"rule {rule.name} is symmetric, but the e-matched form of its source "
                                           "is not the same with its outputs swapped")
        queries.append(Query(rule, index, f"r{index}_{len(queries)}", walk.slots, outputs, walk.kept(outputs),
                             parts if len(parts) > 1 else [], swaps))
    return queries


def _components(slots: list[Slot]) -> list[list[int]]:
    """The slots of each connected part of a query (joined through the inputs they share)."""
    part = list(range(len(slots)))

    def find(i: int) -> int:
        while part[i] != i:
            part[i] = part[part[i]]
            i = part[i]
        return i

    for i, s in enumerate(slots):
        for c in s.children:
            part[find(c)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(slots)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values())

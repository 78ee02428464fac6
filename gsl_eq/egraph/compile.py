"""GSL rules compiled into guarded egglog rewrites.

A rule becomes two egglog rules over the same query, the source pattern
written as e-node facts:

* *collect* records, for every match, a **key**: the interned ids of what the
  rule's attribute expressions can read — the attributes of each matched call,
  the type of each matched value, the index of each projection, the value of
  each constant. Keys are plain integers, so millions of matches in repeated
  blocks share a handful of keys.
* Python evaluates each new key once (:meth:`CompiledRule.decide`): the source's
  attribute constraints, then the target, built with TVM's type inference. For
  an accepted key it fills tables giving the attributes and type of every node
  the target creates.
* *apply* joins the query with those tables and creates the target e-nodes and
  unions each source output with its target output, inside egglog.

So e-matching, union and rebuilding stay in the engine; Python sees one row
per distinct key, never one per match. A rule whose source has several outputs
becomes a multi-pattern query and unions every output pair.

A target ``pat.Cond`` gives one apply rule per choice of branches; the key's
decision says which one fires. Not compiled yet: ``pat.Alt`` and
``pat.Variadic`` (:class:`UnsupportedRuleError`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import GslEqError
from ..frontend import Subst, spec
from ..frontend.errors import EvaluationError
from ..frontend.evaluation import Env, evaluate, node_attr, satisfies
from ..frontend.pat import Call, Cond, Const, GetItem, OpWithTrait, Pattern, Tuple, Variable, Wildcard
from ..graph import Kind, Node
from ..graph.ops import freeze
from ..greedy.match import Match, same_value
from ..greedy.rewrite import RewriteError, TargetBuilder
from .egraph import EGraph


class UnsupportedRuleError(GslEqError):
    """A rule uses a construct saturate mode cannot compile."""


@dataclass
class CompiledRule:
    """One GSL rule (for one choice of ops behind its op traits) as egglog rules and tables."""

    rule: Subst
    index: int
    trait_ops: dict[OpWithTrait, str]
    var: dict[Pattern, str] = field(default_factory=dict)
    columns: list[tuple[Pattern, str]] = field(default_factory=list)  # key column: (pattern, "attrs"|"type"|"index"|"const")
    variants: list["Variant"] = field(default_factory=list)  # one per choice of target branches
    seen: set[tuple[int, ...]] = field(default_factory=set)
    accepted: int = 0

    @property
    def name(self) -> str:
        return f"r{self.index}"

    # --- text of the egglog rules -------------------------------------------------------
    def program(self, eg: EGraph) -> str:
        facts = self._query(eg)
        key = " ".join(f"k{i}" for i in range(len(self.columns)))
        sorts = " ".join(["i64"] * len(self.columns))
        key_facts = " ".join(f"(= k{i} {self._key_expr(p, role)})" for i, (p, role) in enumerate(self.columns))
        lines = [
            f"(relation Key_{self.name} ({sorts}))",
            f"(rule ({facts} {key_facts}) ((Key_{self.name} {key})) :ruleset collect :name \"collect {self.name}\")",
        ]
        for variant in self.variants:
            table = f"{self.name}_{variant.index}"
            lines.append(f"(function Ok_{table} ({sorts}) i64 :merge old)")
            lookups, actions = [f"(= ok (Ok_{table} {key}))"], []
            for j, p in enumerate(variant.built):
                for kind in ("A", "T"):
                    lines.append(f"(function {kind}_{table}_{j} ({sorts}) i64 :merge old)")
                    lookups.append(f"(= {kind}{j} ({kind}_{table}_{j} {key}))")
                actions.extend(self._create(eg, variant, j, p))
            for s, t in zip(self.rule.source.outputs, self.rule.target.outputs):
                actions.append(f"(union {self.var[s]} {self._target_var(variant, t)})")
            lines.append(f"(rule ({facts} {key_facts} {' '.join(lookups)}) ({' '.join(actions)}) "
                         f":ruleset apply :name \"apply {table}\")")
        return "\n".join(lines)

    def _query(self, eg: EGraph) -> str:
        facts = []
        for i, p in enumerate(self.rule.source.rpo):
            v = self.var[p] = f"p{i}"
            children = " ".join(self.var[c] for c in p.inputs)
            if isinstance(p, Call):
                op = p.op if isinstance(p.op, str) else self.trait_ops[p.op]
                ctor = eg.declare(Kind.CALL, op, len(p.inputs))
                attrs = f"a{i}" if isinstance(p.op, str) else f"t_{id(p.op)}"
                facts.append(f"(= {v} ({ctor} {attrs} {children}))")
                self.columns.append((p, "attrs"))
            elif isinstance(p, Tuple):
                facts.append(f"(= {v} ({eg.declare(Kind.TUPLE, None, len(p.inputs))} {children}))")
            elif isinstance(p, GetItem):
                facts.append(f"(= {v} (GetItem g{i} {children}))")
                self.columns.append((p, "index"))
            elif isinstance(p, Variable):
                facts.append(f"(= {v} (Var name{i}))")
            elif isinstance(p, Const):
                facts.append(f"(= {v} (Const c{i}))")
                self.columns.append((p, "const"))
            elif not isinstance(p, Wildcard):
                raise UnsupportedRuleError(f"rule {self.rule.name}: {p.describe()} in a source is not compiled for saturation yet")
            self.columns.append((p, "type"))
        # M is a bijection (seed 000): distinct outputs never match one e-class (no self-merges).
        outs = [self.var[o] for o in self.rule.source.outputs]
        facts += [f"(!= {a} {b})" for a, b in itertools.combinations(outs, 2)]
        return " ".join(facts)

    def _key_expr(self, p: Pattern, role: str) -> str:
        i = self.rule.source.rpo.index(p)
        if role == "attrs":
            return f"a{i}" if isinstance(p.op, str) else f"t_{id(p.op)}"
        return {"index": f"g{i}", "const": f"c{i}", "type": f"(ty {self.var[p]})"}[role]

    def _target_var(self, variant: "Variant", p: Pattern) -> str:
        p = variant.resolve(p)
        return self.var[p] if p in self.rule.target.boundary else f"new{variant.built.index(p)}"

    def _create(self, eg: EGraph, variant: "Variant", j: int, p: Pattern) -> list[str]:
        children = " ".join(self._target_var(variant, c) for c in p.inputs)
        if isinstance(p, Call):
            op = p.op if isinstance(p.op, str) else self.trait_ops[p.op]
            term = f"({eg.declare(Kind.CALL, op, len(p.inputs))} A{j} {children})"
        elif isinstance(p, Tuple):
            term = f"({eg.declare(Kind.TUPLE, None, len(p.inputs))} {children})"
        elif isinstance(p, GetItem):
            term = f"(GetItem A{j} {children})"
        elif isinstance(p, Const):
            term = f"(Const A{j})"
        else:
            raise UnsupportedRuleError(f"rule {self.rule.name}: {p.describe()} in a target is not compiled for saturation yet")
        return [f"(let new{j} {term})", f"(set (ty new{j}) T{j})"]

    # --- deciding one key ----------------------------------------------------------------
    def decide(self, eg: EGraph, key: tuple[int, ...]) -> tuple["Variant", list[tuple[int, int]]] | None:
        """If ``key`` passes: the target variant it takes and the (attributes, index or constant id;
        type id) of each node that variant creates. Otherwise None."""
        nodes: dict[Pattern, Node] = {}
        values = dict(zip(self.columns, key))
        m = Match()
        for p in self.rule.source.rpo:
            ty = eg.types[values[(p, "type")]]
            if isinstance(p, Call):
                op = p.op if isinstance(p.op, str) else self.trait_ops[p.op]
                node = Node(Kind.CALL, ty, (), op, dict(eg.attrs[values[(p, "attrs")]]))
                if isinstance(p.op, OpWithTrait):
                    m.trait_ops[p.op] = node
            elif isinstance(p, GetItem):
                node = Node(Kind.GETITEM, ty, (), attrs={"index": values[(p, "index")]})
            elif isinstance(p, Const):
                node = Node(Kind.CONST, ty, value=eg.consts[values[(p, "const")]])
            else:
                node = Node(Kind.VAR if isinstance(p, Variable) else Kind.TUPLE, ty, name="?")
            nodes[p] = node
            env = Env(nodes, {}, {})
            try:
                if isinstance(p, Const) and p.value is not None and not same_value(node.value, p.value):
                    return None
                for name, expr in p.attrs.items():
                    if not satisfies(node_attr(node, name), evaluate(expr, env)):
                        return None
            except (KeyError, EvaluationError):
                return None
        m.nodes = nodes
        builder = TargetBuilder(self.rule, m)
        try:
            outputs = builder.outputs()
        except (RewriteError, EvaluationError, TypeError, KeyError, IndexError, ValueError):
            return None
        if any(o.type != nodes[s].type for s, o in zip(self.rule.source.outputs, outputs)):
            return None
        variant = next(v for v in self.variants if all(builder.choices.get(c) == b for c, b in v.choices.items()))
        created = []
        for p in variant.built:
            node = builder.built[p]
            if node.kind is Kind.CALL:
                payload = eg.attrs(freeze(node.attrs))
            elif node.kind is Kind.GETITEM:
                payload = node.attrs["index"]
            elif node.kind is Kind.CONST:
                eg.consts.append(node.value)
                payload = len(eg.consts) - 1
            else:
                payload = -1
            created.append((payload, eg.type_id(node.type)))
        return variant, created


@dataclass
class Variant:
    """The target with one branch chosen at each ``pat.Cond``: the patterns it builds, in order."""

    index: int
    choices: dict[Cond, bool]
    built: list[Pattern]

    def resolve(self, p: Pattern) -> Pattern:
        while isinstance(p, Cond):
            p = p.then if self.choices[p] else p.orelse
        return p


def _variants(rule: Subst) -> list[Variant]:
    target = rule.target
    conds = [p for p in target.rpo if isinstance(p, Cond)]
    variants = []
    for k, branches in enumerate(itertools.product((True, False), repeat=len(conds))):
        v = Variant(k, dict(zip(conds, branches)), [])
        used: set[Pattern] = set()
        stack = [v.resolve(o) for o in target.outputs]
        while stack:
            p = stack.pop()
            if p in used or p in target.boundary:
                continue
            used.add(p)
            stack.extend(v.resolve(c) for c in p.inputs)
        v.built = [p for p in target.rpo if p in used]
        variants.append(v)
    return variants


def compile_rule(rule: Subst, index: int, eg: EGraph) -> list[CompiledRule]:
    """The egglog rules of ``rule``: one per choice of ops for its op traits."""
    if rule.variadic or rule.source.variadics:
        raise UnsupportedRuleError(f"rule {rule.name}: variadic patterns are not compiled for saturation yet")
    traits = list(dict.fromkeys(p.op for p in rule.source.rpo if isinstance(p, Call) and isinstance(p.op, OpWithTrait)))
    present = {op for kind, op, _ in eg.constructors.values() if kind is Kind.CALL}
    # Only ops already in the e-graph can match; an op trait expands to those of its ops.
    choices = itertools.product(*([o for o in spec.ops_with_trait(t.trait) if o in present] for t in traits))
    compiled = []
    for k, ops in enumerate(choices):
        c = CompiledRule(rule, index * 1000 + k, dict(zip(traits, ops)))
        c.variants = _variants(rule)
        eg.run(c.program(eg))
        compiled.append(c)
    return compiled

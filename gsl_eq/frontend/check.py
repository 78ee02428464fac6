"""Semantic checks of a substitution rule: what makes a rule well-formed before it runs.

Per-pattern checks (op exists, input count, attribute names, variadic form)
run in the pattern constructors. The checks here need the whole rule:

* outputs: source and target outputs pair up one to one;
* structure: the source's outputs are connected (*connected source* in the
  documentation's glossary), the target reads only the source's inputs, each
  pattern is one a source can match or a target can build, templates are used
  only inside their variadic;
* context: walking the rule in the executor's order with a simulated context,
  every symbol is bound where it is used and every ``p.l`` reads a pattern that
  already has a node (an attribute is evaluated only after the patterns it reads
  are matched).
"""

from __future__ import annotations

from typing import Callable, Collection, Hashable, Sequence, TypeVar

from . import attr as A
from . import spec
from .errors import (
    AttributeOrderError,
    DisconnectedSourceError,
    InvalidOperandError,
    Loc,
    MissingAttributeError,
    OutputCountError,
    SourcePatternError,
    TargetInputError,
    TargetPatternError,
    UnboundSymbolError,
    UnknownAttributeError,
    VariadicError,
)
from .pat import Alt, Call, Cond, Const, Instance, Match, OpWithTrait, Pattern, Variable, Variadic, Wildcard
from .pattern_graph import PatternGraph


def check_outputs(src: Sequence[Pattern], tgt: Sequence[Pattern], loc: Loc) -> None:
    """Source and target outputs pair up: same count, a variadic output with a variadic output."""
    for side, outs in (("source", src), ("target", tgt)):
        if not outs:
            raise OutputCountError(f"the {side} has no output pattern", loc)
        if len(outs) > 1 and any(isinstance(p, Variadic) for p in outs):
            raise OutputCountError(f"a variadic {side} output must be the only output, but the {side} has {len(outs)}", loc)
    if isinstance(src[0], Variadic) != isinstance(tgt[0], Variadic):
        var, fixed = ("source", "target") if isinstance(src[0], Variadic) else ("target", "source")
        raise OutputCountError(f"the {var} has variadic outputs but the {fixed} has a fixed number ({len(src if fixed == 'source' else tgt)})", loc)
    if len(src) != len(tgt):
        raise OutputCountError(f"the source has {len(src)} outputs but the target has {len(tgt)}; they must pair up", loc)
    seen: set[Pattern] = set()
    for p in src:
        if p in seen:
            raise OutputCountError(f"source output {p!r} is listed twice; each output must be matched to its own node", loc)
        seen.add(p)


N = TypeVar("N", bound=Hashable)


def mirror(outputs: Sequence[N], inputs: Callable[[N], Sequence[N]], label: Callable[[N], Hashable]) -> dict[N, N] | None:
    """The involution of a graph's nodes that swaps its two ``outputs`` and keeps every node's
    ``label`` and ordered ``inputs`` (a node both outputs read maps to itself), or None if there
    is none. A symmetric rule's source must have one: its matches come in mirrored pairs."""
    first, second = outputs
    swap: dict[N, N] = {}
    todo = [(first, second)]
    while todo:
        p, q = todo.pop()
        if swap.get(p, q) != q or swap.get(q, p) != p:
            return None
        if p in swap:
            continue
        if label(p) != label(q) or len(inputs(p)) != len(inputs(q)):
            return None
        swap[p], swap[q] = q, p
        todo.extend(zip(inputs(p), inputs(q)))
    return swap


def _mirror_label(p: Pattern) -> Hashable:
    """What a pattern's mirror must share: its class, op and literal attributes (expressions are
    compared on matches: saturate mode decides a match's mirror too). A constant mirrors only itself."""
    literal = tuple(sorted((k, repr(v)) for k, v in p.attrs.items() if not isinstance(v, A.AttrExpr)))
    return (type(p), p.op if isinstance(p, Call) else None, tuple(sorted(p.attrs)), literal,
            id(p) if isinstance(p, Const) else None)


def check_symmetric(src: PatternGraph, loc: Loc) -> None:
    """A rule declared symmetric has two source outputs and a :func:`mirror` swapping them, or
    one variadic output whose instances bind no index (a first instance has the others' form,
    as every variadic's; its attributes may differ, as it commonly carries the constraints the
    others are compared to: saturate mode decides the permuted matches too)."""
    (out, *rest) = src.outputs
    if isinstance(out, Variadic) and not rest:
        if out.index is not None or any(isinstance(p, Alt) for p in src.rpo):
            raise SourcePatternError(
                f"the instances of variadic output {out!r} bind an index or contain an alternative, so they are "
                "not interchangeable and the rule cannot be symmetric", loc)
        return
    if len(src.outputs) != 2 or any(isinstance(p, (Variadic, Alt)) for p in src.rpo):
        raise OutputCountError(
            f"a symmetric rule needs exactly two source outputs and no variadic or alternative pattern, or one "
            f"variadic output; this source has {len(src.outputs)} output(s)", loc)
    if mirror(src.outputs, src.preds, _mirror_label) is None:
        raise SourcePatternError(
            f"source outputs {src.outputs[0]!r} and {src.outputs[1]!r} are not mirror images (the same ops, "
            "attributes and inputs with the outputs swapped), so the rule cannot be symmetric", loc)


def template_owners(*graphs: PatternGraph) -> dict[Pattern, Variadic]:
    """Each template pattern -> the variadic it belongs to; a template belongs to one variadic."""
    owner: dict[Pattern, Variadic] = {}
    for graph in graphs:
        for v in graph.variadics:
            for t in v.templates:
                if owner.get(t, v) is not v:
                    raise VariadicError(f"{t!r} is a template of both {owner[t]!r} and {v!r}", v.loc)
                owner[t] = v
    return owner


def _check_template_uses(graph: PatternGraph, owner: dict[Pattern, Variadic]) -> None:
    for p in graph.rpo:
        for q in graph.preds(p):
            v = owner.get(q)
            if v is not None and p is not v and owner.get(p) is not v:
                raise VariadicError(
                    f"{p!r} reads {q!r}, a template of {v!r}, but is not one of its templates: outside its variadic "
                    f"a template stands for no single node; list {p!r} in the templates or use an instance access v(template, i)",
                    p.loc)


def check_source(src: PatternGraph, owner: dict[Pattern, Variadic], loc: Loc) -> None:
    """Patterns a source can match, templates used inside their variadic, connected outputs."""
    for p in src.rpo:
        if isinstance(p, Const) and p.fill is not None:
            raise SourcePatternError(f"{p!r} computes its value with fill, which only a target can do; match a "
                                     "constant by value, or any constant with pat.Const()", p.loc)
        if isinstance(p, Match):
            raise SourcePatternError(f"{p!r} chooses a target by the alternative matched; it can only be used in a target", p.loc)
        if isinstance(p, Instance):
            raise SourcePatternError(f"instance access {p!r} can only be used in a target or in an attribute expression", p.loc)
    for p in src.outputs:
        if not isinstance(p, Variadic) and not src.preds(p):
            raise SourcePatternError(f"source output {p!r} is an input: a source output must be computed from the source's inputs", loc)
    _check_template_uses(src, owner)
    _check_connected(src, loc)


def disconnected_output(src: PatternGraph) -> int | None:
    """The first source output sharing no pattern with the outputs before it, if any: a connected
    source needs, for k >= 2, (R(o_1) | ... | R(o_{k-1})) & R(o_k) not empty, R(o) being the
    patterns reached from output o.
    Greedy mode needs a connected source; saturate mode pairs the outputs' e-classes."""
    reached: frozenset[Pattern] = frozenset()
    for k, out in enumerate(src.outputs):
        here = src.reach(out)
        if k and not reached & here:
            return k
        reached |= here
    return None


def _check_connected(src: PatternGraph, loc: Loc) -> None:
    v = src.outputs[0]
    if isinstance(v, Variadic):  # then the only output (check_outputs)
        shared = src.reach(v.field) - set(v.templates)
        if v.first:
            shared &= src.reach(v.first[v.templates.index(v.field)])
        if not shared:
            raise DisconnectedSourceError(
                f"the instances of variadic output {v!r} share no pattern"
                + (" with its first instance" if v.first else "")
                + ": each must read a non-template pattern (such as a common input)", v.loc)


def check_target(src: PatternGraph, tgt: PatternGraph, owner: dict[Pattern, Variadic], loc: Loc) -> None:
    """The target reads only source inputs and builds only what can be built."""
    traits = {p.op for p in src.rpo if isinstance(p, Call) and isinstance(p.op, OpWithTrait)}
    for p in tgt.rpo:
        if p in tgt.boundary:
            _check_source_use(p, src, tgt, owner, loc)
        elif isinstance(p, (Wildcard, Variable)):
            raise TargetInputError(f"target input {p!r} is not part of the source: a target may only read the source's inputs", p.loc)
        elif isinstance(p, Const) and p.value is None and p.fill is None:
            raise TargetPatternError(f"{p!r} has no value: a target must give the value of a constant it creates "
                                     "(value=..., or fill=a function of the match's attributes)", p.loc)
        elif isinstance(p, Alt):
            raise TargetPatternError(f"{p!r} can only be matched; in a target choose with pat.Match or pat.Cond", p.loc)
        elif isinstance(p, Match) and p.alt not in src:
            raise TargetPatternError(f"{p!r} follows {p.alt!r}, which is not part of the source", p.loc)
        elif isinstance(p, Instance):
            if p.variadic not in src:
                raise TargetInputError(f"{p!r} reads an instance of {p.variadic!r}, which is not part of the source", p.loc)
            if src.preds(p.template):
                raise TargetInputError(
                    f"{p!r} reads template {p.template!r}, which the source matches as an inner node, not an input; "
                    "the rewrite replaces it", p.loc)
        elif isinstance(p, Call):
            _check_target_call(p, traits)
        elif isinstance(p, Variadic):
            if p.min_len is not None:
                raise VariadicError(f"min_len of {p!r} only constrains a source; a target builds length instances", p.loc)
            if "length" not in p.attrs and p not in tgt.outputs:
                raise VariadicError(f"target variadic {p!r} needs a length: how many instances to build", p.loc)
    _check_template_uses(tgt, owner)


def _check_source_use(p: Pattern, src: PatternGraph, tgt: PatternGraph, owner: dict[Pattern, Variadic], loc: Loc) -> None:
    users = tgt.succ.get(p, ())
    where = users[0].loc if users else loc
    if p in owner:
        raise VariadicError(
            f"the target reads {p!r}, a template of source {owner[p]!r}, which stands for no single node; "
            "use an instance access v(template, i)", where)
    if src.preds(p):
        what = "an output" if p in src.outputs else "an inner node"
        raise TargetInputError(
            f"the target uses {p!r}, which the source matches as {what}, not an input: the rewrite replaces it, "
            "so the target must build its own pattern (a target may only read the source's inputs)", where)


def _check_target_call(p: Call, traits: Collection[OpWithTrait]) -> None:
    if isinstance(p.op, OpWithTrait):
        if p.op not in traits:
            raise TargetPatternError(
                f"{p!r} calls {p.op!r}, which no source call matched, so the target cannot tell which op to build", p.loc)
        return
    op_attrs = p.op_attrs()
    for name in p.attrs:
        if name not in op_attrs:
            raise UnknownAttributeError(
                f"{p!r} sets {name!r}, which is not an attribute of {p.op}: a target call sets op attributes only "
                f"(its attributes: {', '.join(sorted(op_attrs)) or 'none'})", p.loc)
    missing = [a for a in spec.signature(p.op).required_attrs() if a not in p.attrs]
    if missing:
        raise MissingAttributeError(f"target call {p!r} must set {', '.join(map(repr, missing))}: {p.op} has no default for it", p.loc)


class OrderChecker:
    """Walks a rule in the executor's order with a simulated context (the semantic check of the order).

    The context holds the patterns that have a node at each point and the
    symbols bound there. A source is matched in reverse post-order, a pattern's
    attributes checked after its inputs; only one branch of an ``Alt`` or a
    ``Cond`` is matched, so afterwards only what every branch matched counts; a
    variadic's templates have nodes only inside the variadic. A target is built
    in reverse post-order after the whole source is matched.
    """

    def __init__(self, owner: dict[Pattern, Variadic]):
        self.owner = owner
        self.scope: list[Variadic] = []
        self.ever: set[Pattern] = set()

    def run(self, graph: PatternGraph, known: Collection[Pattern] = ()) -> set[Pattern]:
        """Check ``graph`` starting from the patterns in ``known``; return the patterns with nodes after it."""
        self.graph = graph
        self.verb = "built" if graph.boundary else "matched"
        matched = set(known)
        for out in graph.outputs:
            self.visit(out, matched, frozenset())
        return matched

    def visit(self, p: Pattern, matched: set[Pattern], bound: frozenset[A.Symbol]) -> None:
        if p in matched:
            return
        if p in self.graph.boundary:
            users = self.graph.succ.get(p, ())
            raise TargetInputError(
                f"the target uses {p!r}, which the source matches in only some alternatives of a pat.Alt or pat.Cond",
                users[0].loc if users else p.loc)
        if isinstance(p, (Cond, Alt, Match)):
            if isinstance(p, Cond):
                self.check_expr(p.pred, p, "condition", matched, bound)
            branches = []
            for branch in p.inputs:
                inner = set(matched)
                self.visit(branch, inner, bound)
                branches.append(inner)
            matched.update(set.intersection(*branches))
        elif isinstance(p, Variadic):
            if "length" in p.attrs:
                self.check_expr(p.attrs["length"], p, "length", matched, bound)
            if p.first:
                self.visit(p.inputs[0], matched, bound)
            self.scope.append(p)
            self.visit(p.field, matched, bound if p.index is None else bound | {p.index})
            self.scope.pop()
            matched.difference_update(p.templates)
        elif isinstance(p, Instance):
            self.check_instance(p, p, "instance index", matched, bound)
        else:
            for q in p.inputs:
                self.visit(q, matched, bound)
            for name, e in p.attrs.items():
                self.check_expr(e, p, repr(name), matched, bound)
        matched.add(p)
        self.ever.add(p)

    def check_expr(self, expr: A.AttrExpr, site: Pattern, what: str, matched: set[Pattern], bound: frozenset[A.Symbol]) -> None:
        """Every symbol in ``expr`` is bound and every attribute it reads has a node."""
        stack: list[tuple[A.AttrExpr, frozenset[A.Symbol], A.AttrExpr | None]] = [(expr, bound, None)]
        seen: set[tuple[int, frozenset[A.Symbol]]] = set()
        while stack:
            e, b, parent = stack.pop()
            if (id(e), b) in seen:
                continue
            seen.add((id(e), b))
            if isinstance(e, A.Symbol):
                if e not in b:
                    use = parent.loc if parent is not None else site.loc
                    raise UnboundSymbolError(
                        f"symbol {e!r} (created at {e.loc}) is used in the {what} of {site!r} where nothing binds it; "
                        "bind it with the index of a pat.Variadic or attr.Variadic, attr.Sum/ReduceIndexed or attr.Map",
                        use)
            elif isinstance(e, A.GetAttr):
                self.check_read(e, site, what, matched, b)
            else:
                stack.extend((child, b | frozenset(binds), e) for child, binds in e.scopes())

    def check_instance(self, p: Instance, site: Pattern, what: str, matched: set[Pattern], bound: frozenset[A.Symbol]) -> None:
        if p.variadic not in matched:
            raise AttributeOrderError(f"{p!r} reads an instance of {p.variadic!r} before that variadic is matched", p.loc)
        self.check_expr(p.index_expr, site, what, matched, bound)

    def check_read(self, e: A.GetAttr, site: Pattern, what: str, matched: set[Pattern], bound: frozenset[A.Symbol]) -> None:
        p = e.pattern
        if isinstance(p, Instance):
            self.check_instance(p, site, what, matched, bound)
            return
        if p in matched:
            return
        v = self.owner.get(p)
        if v is not None and v not in self.scope:
            raise VariadicError(
                f"{e!r} in the {what} of {site!r} reads template {p!r} outside its variadic {v!r}, where it stands for "
                "no single node; read an instance with v(template, i)", e.loc)
        if p in self.ever:
            problem = f"{p!r}, which has a node in only some branches of a pat.Alt, pat.Cond or pat.Match"
        elif p in self.graph:
            problem = f"{p!r} before it is {self.verb}: it comes later in reverse post-order"
            if not self.graph.boundary:
                problem += "; state the constraint on the later pattern instead"
        else:
            problem = f"{p!r}, which is not part of the rule's source{' or target' if self.graph.boundary else ''}"
        raise AttributeOrderError(f"{e!r} in the {what} of {site!r} reads {problem}", e.loc)


def check_where(where: object, src: PatternGraph, order: OrderChecker, matched: set[Pattern],
                loc: Loc) -> tuple[A.AttrExpr, ...]:
    """A rule's ``where=`` guards: attribute expressions (not Python values: ``a.shape == b.shape``
    builds one, ``a is b`` does not) reading source patterns every match has, with no free symbol."""
    guards = tuple(where) if isinstance(where, (list, tuple)) else (where,)
    for k, guard in enumerate(guards):
        if not isinstance(guard, A.AttrExpr):
            raise InvalidOperandError(
                f"where guard {k} is {guard!r} of type {type(guard).__name__}, not an attribute expression: "
                "compare attributes of source patterns, e.g. where=a.shape == b.shape", loc)
        order.check_expr(guard, src.outputs[0], f"where guard {k}", matched, frozenset())
    return guards


def memoizable(roots: Sequence[A.AttrExpr]) -> frozenset[A.AttrExpr]:
    """Expressions worth memoizing while rewriting: computed once, however often they are read.

    Those referenced more than once (by object identity) among ``roots`` and
    their sub-expressions, that have no free symbols and are not trivial.
    """
    counts: dict[A.AttrExpr, int] = {}
    stack = list(roots)
    while stack:
        e = stack.pop()
        counts[e] = counts.get(e, 0) + 1
        if counts[e] == 1:
            stack.extend(e.children())
    return frozenset(
        e for e, n in counts.items() if n > 1 and not e.free and not isinstance(e, (A.Const, A.Symbol))
    )


def attribute_roots(graph: PatternGraph) -> list[A.AttrExpr]:
    """Every attribute expression a graph's own patterns carry, in ``rpo`` order."""
    roots: list[A.AttrExpr] = []
    for p in graph.rpo:
        if p in graph.boundary:
            continue
        if isinstance(p, Cond):
            roots.append(p.pred)
        if isinstance(p, Instance):
            roots.append(p.index_expr)
        roots.extend(p.attrs.values())
    return roots

"""``Subst``: a graph substitution rule, checked and prepared for execution.

    subst = Subst(y1, y2)                              # one output each
    subst = Subst([conv1, conv2], [split[0], split[1]])  # paired outputs
    subst = Subst(src, tgt)                            # variadic outputs
    subst = Subst(a + b, b + a, where=a.shape == b.shape)  # a guard over the matched source
    subst = Subst([relu(a), relu(b)], [s[0], s[1]])    # outputs sharing nothing: saturate mode only
    subst = Subst([x @ w1, x @ w2], [s[0], s[1]], symmetric=True)  # one of each mirrored pair of matches

Building a rule runs every semantic check (see :mod:`gsl_eq.frontend.check`)
and precomputes what executors read: the source and target pattern graphs
(reverse post-order, successor lists, inputs, outputs) and the target attribute
expressions worth memoizing.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Sequence

from ..run import executors
from . import attr as A
from . import check
from .errors import DisconnectedSourceError, InvalidOperandError, Loc, user_location
from .pat import Pattern, Variadic
from .pattern_graph import PatternGraph

if TYPE_CHECKING:
    from ..workload import Workload


class Subst:
    """A substitution rule from source pattern(s) to target pattern(s): what greedy mode applies
    (call the rule on a workload) and saturate mode adds to the e-graph (:func:`gsl_eq.optimize`).

    Parameters
    ----------
    src, tgt
        Each one pattern or a list of output patterns, the k-th source output being replaced by
        the k-th target output; a variadic on both sides pairs up their instances.
    name
        A name for reports; by default the file:line that built the rule, with ``#k`` for the
        k-th rule built there.
    where
        A guard (or a list of guards): attribute expressions over any source pattern, checked
        once the whole source has matched, e.g. ``where=[a.shape == b.shape, w.ndim == 4]``.
    symmetric
        The two source outputs are interchangeable, as in merging two matmuls of one input
        (``[x @ w1, x @ w2]``): every match has a mirror (the outputs swapped) whose rewrite is the
        first's mirror image (``concat(w2, w1)`` for ``concat(w1, w2)``), so saturate mode applies
        one of each pair, as TENSAT does for TASO's learned two-output rules: the e-graph grows by
        half as much, at the same best cost. The source must read the same with its outputs
        swapped (checked here); saturate mode raises if a guard accepts a match and rejects its
        mirror. A variadic output's instances may be declared interchangeable too (they bind no
        index): saturate mode then applies one order of each set of matches (merging n convs of
        one input: n! orders become one). The order kept is the graph's
        (:mod:`gsl_eq.egraph.egraph`, ``order``), so merged branches split back in the order a
        concat reads them. Greedy mode ignores it.

    Raises
    ------
    GSLError
        A subclass naming the faulty element and its line, when the rule is malformed.

    Examples
    --------
    Two convolutions of one input by kernels of one shape, added, are one convolution by the
    summed kernels::

        from gsl_eq import Subst, op, pat
        from gsl_eq.models import diamond_conv

        x, w1 = pat.Wildcard(), pat.Variable()
        w2 = pat.Variable(shape=w1.shape)
        same = ["strides", "padding", "dilation", "groups"]
        conv1 = op.Conv2D(x, w1)
        conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, same))
        rule = Subst(conv1 + conv2, op.Conv2D(x, w1 + w2, **pat.same_attr(conv1, same)))
        print(rule(diamond_conv()).mod)   # greedy mode: one conv2d left
    """

    source: PatternGraph
    target: PatternGraph
    memoizable: frozenset[A.AttrExpr]
    _built_at: collections.Counter[str] = collections.Counter()  # unnamed rules per source line

    def __init__(self, src: Pattern | Sequence[Pattern], tgt: Pattern | Sequence[Pattern], name: str | None = None,
                 where: A.AttrExpr | Sequence[A.AttrExpr] = (), symmetric: bool = False):
        self.loc: Loc = user_location()
        #: A name for reports; defaults to the file:line that built the rule, with ``#k`` for
        #: the k-th rule built there (a loop or a helper function builds several on one line).
        self.name: str = name or self._default_name()
        src_outputs, tgt_outputs = _outputs(src, "source", self.loc), _outputs(tgt, "target", self.loc)
        check.check_outputs(src_outputs, tgt_outputs, self.loc)
        self.source = PatternGraph(src_outputs)
        self.target = PatternGraph(tgt_outputs, boundary=self.source.vertices)
        owner = check.template_owners(self.source, self.target)
        check.check_source(self.source, owner, self.loc)
        check.check_target(self.source, self.target, owner, self.loc)
        order = check.OrderChecker(owner)
        matched = order.run(self.source)
        #: Guards over the whole matched source, each true for the rule to apply (``where=``).
        self.where: tuple[A.AttrExpr, ...] = check.check_where(where, self.source, order, matched, self.loc)
        order.run(self.target, known=matched)
        #: Target attribute expressions whose value may be memoized while rewriting.
        self.memoizable = check.memoizable(check.attribute_roots(self.target))
        if not isinstance(symmetric, bool):
            raise InvalidOperandError(f"symmetric must be True or False, got {symmetric!r}", self.loc)
        if symmetric:
            check.check_symmetric(self.source, self.loc)
        #: Whether saturate mode applies one of each pair of mirrored matches (``symmetric=``).
        self.symmetric: bool = symmetric
        #: Templates of every variadic of the rule, each with its variadic.
        self.template_owner: dict[Pattern, Variadic] = owner
        #: The first source output sharing no pattern with those before it, if any: saturate mode
        #: pairs such outputs, greedy mode cannot match them (:meth:`require_connected`).
        self.disconnected_output: int | None = check.disconnected_output(self.source)

    @property
    def connected(self) -> bool:
        """Whether every source output after the first shares a pattern with one before it."""
        return self.disconnected_output is None

    def require_connected(self) -> None:
        """Raise :class:`DisconnectedSourceError` unless the source is connected (greedy mode's
        matcher reaches every output from the first)."""
        k = self.disconnected_output
        if k is not None:
            out = self.source.outputs[k]
            raise DisconnectedSourceError(
                f"rule {self.name}: source output {k} {out!r} shares no pattern with the outputs before it; "
                "greedy mode reaches every output from the first, so it cannot match this rule "
                "(saturate mode can: it pairs the outputs' e-classes; keep greedy runs to "
                "[r for r in rules if r.connected])", out.loc)

    @property
    def inputs(self) -> tuple[Pattern, ...]:
        """The source's input patterns, in reverse post-order."""
        return self.source.inputs

    @property
    def src_outputs(self) -> tuple[Pattern, ...]:
        return self.source.outputs

    @property
    def tgt_outputs(self) -> tuple[Pattern, ...]:
        return self.target.outputs

    @property
    def variadic(self) -> bool:
        """Whether the outputs are variadic (one ``pat.Variadic`` on each side)."""
        return isinstance(self.source.outputs[0], Variadic)

    def __call__(self, wl: "Workload", fold_params: bool = True) -> "Workload":
        """Apply the rule to workload ``wl`` until no match is left (greedy mode); returns a new workload.

        Parameters
        ----------
        wl
            The workload to rewrite; it is left as it is.
        fold_params
            Fold computations on parameters only into new parameters (``v_param_1``, ...)
            afterwards, as in GSL.
        """
        return executors.apply(self, wl, fold_params)

    def _default_name(self) -> str:
        line = f"{self.loc.filename.rsplit('/', 1)[-1]}:{self.loc.lineno}"
        Subst._built_at[line] += 1
        count = Subst._built_at[line]
        return line if count == 1 else f"{line}#{count}"

    def __repr__(self) -> str:
        return f"<Subst {len(self.source)} source / {len(self.target)} target patterns @ {self.loc}>"


def _outputs(side: Any, name: str, loc: Loc) -> tuple[Pattern, ...]:
    outputs = tuple(side) if isinstance(side, (list, tuple)) else (side,)
    for p in outputs:
        if not isinstance(p, Pattern):
            raise InvalidOperandError(f"{name} output {p!r} is not a pattern", loc)
    return outputs

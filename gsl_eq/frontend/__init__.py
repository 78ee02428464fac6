"""GSL, the Graph Substitution Language: rules written as Python patterns.

    from gsl_eq.frontend import pat, op, attr, spec, Subst

    x = pat.Wildcard()
    w1 = pat.Variable()
    w2 = pat.Variable(shape=w1.shape)
    conv1 = op.Conv2D(x, w1)
    conv2 = op.Conv2D(x, w2, **pat.same_attr(conv1, ["strides", "padding", "dilation", "groups"]))
    subst = Subst(conv1 + conv2, op.Conv2D(x, w1 + w2, **pat.same_attr(conv1, ["strides", "padding", "dilation", "groups"])))

``pat`` builds patterns, ``op`` has a shorthand for every Relax op, ``attr``
builds attribute expressions, ``spec`` tells op traits, and ``Subst`` checks a
rule and prepares it for the executors, which evaluate attribute expressions
with :func:`evaluate`.
"""

from . import attr, op, pat, spec
from .errors import (
    ArityError,
    AttributeOrderError,
    DisconnectedSourceError,
    EvaluationError,
    ExpressionUsageError,
    GSLError,
    InvalidOperandError,
    Loc,
    MissingAttributeError,
    OutputCountError,
    RuleError,
    SourcePatternError,
    TargetInputError,
    TargetPatternError,
    UnboundSymbolError,
    UnknownAttributeError,
    UnknownOpError,
    VariadicError,
)
from .evaluation import Env, Memo, evaluate, node_of, satisfies
from .pattern_graph import PatternGraph
from .subst import Subst

__all__ = [
    "ArityError", "AttributeOrderError", "DisconnectedSourceError", "Env", "EvaluationError",
    "ExpressionUsageError", "GSLError", "InvalidOperandError", "Loc", "Memo", "MissingAttributeError",
    "OutputCountError", "PatternGraph", "RuleError", "SourcePatternError", "Subst", "TargetInputError",
    "TargetPatternError", "UnboundSymbolError", "UnknownAttributeError", "UnknownOpError",
    "VariadicError", "attr", "evaluate", "node_of", "op", "pat", "satisfies", "spec",
]

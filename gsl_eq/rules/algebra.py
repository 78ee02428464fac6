"""Algebraic identities, for saturate mode: they let an e-graph reach forms no single rule
ordering reaches. Applied greedily, the symmetric ones never stop (``greedy`` bounds them).

Every rule holds for any shapes TVM accepts on both sides: a target that would
change the output's type is refused when it is built.
"""

from __future__ import annotations

from ..frontend import Subst, op, pat, spec


def add_commutative() -> Subst:
    """``a + b -> b + a``."""
    a, b = pat.Wildcard(), pat.Wildcard()
    return Subst(a + b, b + a, name="add_commutative")


def mul_commutative() -> Subst:
    """``a * b -> b * a``."""
    a, b = pat.Wildcard(), pat.Wildcard()
    return Subst(a * b, b * a, name="mul_commutative")


def add_associative() -> Subst:
    """``(a + b) + c -> a + (b + c)``."""
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    return Subst((a + b) + c, a + (b + c), name="add_associative")


def mul_associative() -> Subst:
    """``(a * b) * c -> a * (b * c)``."""
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    return Subst((a * b) * c, a * (b * c), name="mul_associative")


def add_associative_left() -> Subst:
    """``a + (b + c) -> (a + b) + c``: associativity the other way."""
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    return Subst(a + (b + c), (a + b) + c, name="add_associative_left")


def mul_associative_left() -> Subst:
    """``a * (b * c) -> (a * b) * c``."""
    a, b, c = pat.Wildcard(), pat.Wildcard(), pat.Wildcard()
    return Subst(a * (b * c), (a * b) * c, name="mul_associative_left")


def mul_distributes() -> Subst:
    """``a * (b + c) -> a * b + a * c`` when ``a``, ``b`` and ``c`` have one shape (no broadcasting)."""
    a = pat.Wildcard()
    b = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    c = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    return Subst(a * (b + c), a * b + a * c, name="mul_distributes")


def mul_factors() -> Subst:
    """``a * b + a * c -> a * (b + c)`` when ``a``, ``b`` and ``c`` have one shape."""
    a = pat.Wildcard()
    b = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    c = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    return Subst(a * b + a * c, a * (b + c), name="mul_factors")


def matmul_distributes_left() -> Subst:
    """``x @ (a + b) -> x @ a + x @ b`` when ``a`` and ``b`` have one shape (no broadcasting)."""
    x, a = pat.Wildcard(), pat.Wildcard()
    b = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    return Subst(op.MatMul(x, a + b), op.MatMul(x, a) + op.MatMul(x, b), name="matmul_distributes_left")


def matmul_distributes_right() -> Subst:
    """``(a + b) @ x -> a @ x + b @ x`` when ``a`` and ``b`` have one shape."""
    x, a = pat.Wildcard(), pat.Wildcard()
    b = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    return Subst(op.MatMul(a + b, x), op.MatMul(a, x) + op.MatMul(b, x), name="matmul_distributes_right")


def matmul_factor_left() -> Subst:
    """``x @ a + x @ b -> x @ (a + b)`` when ``a`` and ``b`` have one shape: one matmul instead of two."""
    x, a = pat.Wildcard(), pat.Wildcard()
    b = pat.Wildcard(shape=a.shape, dtype=a.dtype)
    return Subst(op.MatMul(x, a) + op.MatMul(x, b), op.MatMul(x, a + b), name="matmul_factor_left")


def matmul_associative() -> Subst:
    """``(a @ b) @ c -> a @ (b @ c)`` for 2-d operands."""
    a = pat.Wildcard(ndim=2)
    b = pat.Wildcard(ndim=2)
    c = pat.Wildcard(ndim=2)
    return Subst(op.MatMul(op.MatMul(a, b), c), op.MatMul(a, op.MatMul(b, c)), name="matmul_associative")


def element_wise_over_concat() -> Subst:
    """``ew(concat(a, b)) -> concat(ew(a), ew(b))`` for any element-wise op (relu among them)."""
    a, b = pat.Wildcard(), pat.Wildcard()
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    cat = op.Concatenate((a, b))
    return Subst(ew(cat), op.Concatenate((ew(a), ew(b)), axis=cat.axis), name="element_wise_over_concat")


def concat_of_element_wise() -> Subst:
    """``concat(ew(a), ew(b)) -> ew(concat(a, b))``: one element-wise call instead of two.

    When: ``a`` and ``b`` have one dtype (an op such as ``isfinite`` gives both results
    one dtype from inputs of two).
    """
    a = pat.Wildcard()
    b = pat.Wildcard(dtype=a.dtype)
    ew = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    cat = op.Concatenate((ew(a), ew(b)))
    return Subst(cat, ew(op.Concatenate((a, b), axis=cat.axis)), name="concat_of_element_wise")


def ring() -> list[Subst]:
    """Commutativity, associativity (both ways) and distributivity (both ways) of ``add`` and
    ``multiply``: wildcard-heavy rules whose e-graphs grow explosively, the stress test of
    saturate mode's limits."""
    return [
        add_commutative(), mul_commutative(), add_associative(), add_associative_left(),
        mul_associative(), mul_associative_left(), mul_distributes(), mul_factors(),
    ]


def algebraic() -> list[Subst]:
    """The identities saturation uses besides the library's fusions (which include the TASO-style
    merges of parallel matmuls and convs sharing an input: ``parallel_matmul``, ``parallel_conv``)."""
    from .broadcast import concat_of_broadcast, concat_of_broadcast_variadic
    from .conv import parallel_conv
    from .matmul import parallel_matmul

    return [
        add_commutative(), mul_commutative(), add_associative(), mul_associative(),
        matmul_distributes_left(), matmul_distributes_right(), matmul_factor_left(), matmul_associative(),
        element_wise_over_concat(), concat_of_element_wise(), parallel_matmul(), parallel_conv(),
        concat_of_broadcast_variadic(), concat_of_broadcast(),
    ]

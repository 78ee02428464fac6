"""Legalizing rules: rewrite what TVM cannot compile into an equal computation it can."""

from __future__ import annotations

from ..frontend import Subst, op, pat


def bool_cumsum() -> Subst:
    """``cumsum(m)`` over a boolean tensor, boolean out -> ``astype(cumsum(astype(m, int32)), bool)``.

    When: the scan's input is boolean and it keeps the input's dtype. A boolean running
    sum is true from the first true element on (a count above zero); TVM's LLVM code
    generator cannot compile the boolean scan (Hugging Face GPT-2 and Llama emit one
    when called without an attention mask), the int32 one it can.
    """
    # Input: a boolean tensor
    mask = pat.Wildcard(dtype="bool")
    # Source pattern: the boolean scan
    scan = op.CumSum(mask, dtype=None, exclusive=False)
    # Target pattern: count in int32, then back to booleans
    counts = op.CumSum(op.AsType(mask, dtype="int32"), axis=scan.axis, dtype="int32", exclusive=False)
    return Subst(scan, op.AsType(counts, dtype="bool"), name="bool_cumsum")


def bool_equal() -> Subst:
    """``equal(a, b)`` over booleans -> ``equal(astype(a, int8), astype(b, int8))``.

    When: both operands are boolean. TVM's LLVM code generator emits a module that
    fails verification for the boolean comparison (GPT-2's packed-sequence mask
    compares two boolean scans); booleans compare the same as 0/1 integers.
    """
    # Inputs: two boolean tensors
    a = pat.Wildcard(dtype="bool")
    b = pat.Wildcard(dtype="bool")
    # Source pattern: compare them; target pattern: compare them as int8
    return Subst(op.Equal(a, b), op.Equal(op.AsType(a, dtype="int8"), op.AsType(b, dtype="int8")), name="bool_equal")

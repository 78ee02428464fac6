"""Malformed rules fail when built, with their own error type, naming the problem and the user's line.

``fails(Error, *fragments, at=k)`` expects the block under the ``with`` to raise
exactly ``Error``, whose message holds each fragment and this file's name with
the line ``k`` lines below the ``with``.
"""

import contextlib
import os
import sys

import pytest

from gsl_eq.errors import GslEqError
from gsl_eq.frontend import (
    ArityError,
    AttributeOrderError,
    DisconnectedSourceError,
    ExpressionUsageError,
    GSLError,
    InvalidOperandError,
    MissingAttributeError,
    OutputCountError,
    SourcePatternError,
    Subst,
    TargetInputError,
    TargetPatternError,
    UnboundSymbolError,
    UnknownAttributeError,
    UnknownOpError,
    VariadicError,
    attr,
    op,
    pat,
    spec,
)

FILE = os.path.basename(__file__)


@contextlib.contextmanager
def fails(error, *fragments, at):
    line = sys._getframe(2).f_lineno + at
    with pytest.raises(error) as info:
        yield
    assert type(info.value) is error, f"raised {type(info.value).__name__}, expected {error.__name__}"
    message = str(info.value)
    assert f"{FILE}:{line}:" in message, f"expected line {line} in: {message}"
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in: {message}"
    assert isinstance(info.value, GSLError) and isinstance(info.value, GslEqError)


@pytest.fixture
def x():
    return pat.Wildcard()


@pytest.fixture
def w():
    return pat.Variable()


# --- ops, inputs and attribute names (checked by the pattern constructors) ---------


def test_unknown_op_name(x):
    with fails(UnknownOpError, "'relax.nn.conv5d'", "relax.nn.conv2d", at=1):
        pat.Call("relax.nn.conv5d", x)


def test_unknown_op_name_without_prefix(x, w):
    with fails(UnknownOpError, "'nn.dense'", at=1):
        pat.Call("nn.dense", x, w)


def test_unknown_op_shorthand(x, w):
    with fails(UnknownOpError, "op.Conv2d", "did you mean op.Conv2D", at=1):
        op.Conv2d(x, w)


def test_an_op_shorthand_misspelt_only_in_case_is_named(x):
    with fails(UnknownOpError, "op.Relu", "did you mean op.ReLU?", at=1):
        op.Relu(x)


def test_not_an_op(x):
    with fails(InvalidOperandError, "is not an op", at=1):
        pat.Call(x, x)


def test_too_few_inputs(x):
    with fails(ArityError, "relax.nn.conv2d takes 2 inputs (data, weight), got 1", at=1):
        op.Conv2D(x)


def test_too_many_inputs(x, w):
    y = pat.Wildcard()
    with fails(ArityError, "relax.add takes 2 inputs", "got 3", at=1):
        op.Add(x, w, y)


def test_trait_call_arity(x):
    with fails(ArityError, "BROADCASTING take 2 inputs, got 1", at=1):
        pat.Call(pat.OpWithTrait(spec.OpTrait.BROADCASTING), x)


def test_alt_of_one(x):
    with fails(ArityError, "at least two alternatives", at=1):
        pat.Alt(op.ReLU(x))


def test_match_target_count(x):
    alt = pat.Alt(op.ReLU(x), op.Sigmoid(x))
    with fails(ArityError, "2 alternatives has 1 targets", at=1):
        pat.Match(alt, [op.Tanh(x)])


def test_unknown_attribute_set(x, w):
    with fails(UnknownAttributeError, "'stride'", "Call relax.nn.conv2d", "did you mean 'strides'", at=1):
        op.Conv2D(x, w,
                  stride=(1, 1))


def test_unknown_attribute_read(x, w):
    conv = op.Conv2D(x, w)
    with fails(UnknownAttributeError, "cannot read attribute 'kernel_size'", at=1):
        op.ReLU(x, shape=conv.kernel_size)


def test_unknown_variable_attribute():
    with fails(UnknownAttributeError, "'layout'", "Variable", at=1):
        pat.Variable(layout="NCHW")


def test_index_of_a_non_tuple_item(x):
    with fails(UnknownAttributeError, "'index'", "Wildcard", at=1):
        x.index


def test_non_pattern_input(x):
    with fails(InvalidOperandError, "'y' of type str is not a pattern", at=1):
        op.Add(x, "y")


def test_pattern_as_attribute(x, w):
    with fails(InvalidOperandError, "is used where an attribute expression is expected", at=1):
        op.Conv2D(x, w, strides=w)


def test_negative_tuple_index(x):
    split = op.Split(x, indices_or_sections=2)
    with fails(InvalidOperandError, "tuple index -1 is negative", at=1):
        split[-1]


def test_expression_as_condition(x, w):
    with fails(ExpressionUsageError, "use &, |, ~ instead of and, or, not", at=1):
        if x.shape == w.shape:
            pass


def test_len_of_expression(x):
    with fails(ExpressionUsageError, "attr.Len", at=1):
        len(x.shape)


# --- variadic form (checked by pat.Variadic and instance access) --------------------


def test_variadic_field_not_a_template(x):
    relu = op.ReLU(x)
    with fails(VariadicError, "must be one of its templates", at=1):
        pat.Variadic(relu, templates=[])


def test_variadic_index_not_a_symbol(x):
    item = op.Split(x, indices_or_sections=2)[0]
    with fails(VariadicError, "must be an attr.Symbol()", at=1):
        pat.Variadic(item, templates=[item], index=0)


def test_variadic_template_outside_field(x, w):
    relu = op.ReLU(x)
    with fails(VariadicError, "is not part of the field", at=1):
        pat.Variadic(relu, templates=[relu, w])


def test_variadic_shared_pattern_reads_template(x, w):
    conv = op.Conv2D(x, w)
    relu = op.ReLU(conv)
    with fails(VariadicError, "is not a template itself", at=1):
        pat.Variadic(relu, templates=[relu, w])


def test_variadic_first_count(x, w):
    conv = op.Conv2D(x, w)
    conv1 = op.Conv2D(x, pat.Variable())
    with fails(VariadicError, "first has 1 patterns but there are 2 templates", at=1):
        pat.Variadic(conv, templates=[conv, w], first=[conv1])


def test_variadic_first_of_another_op(x, w):
    w1 = pat.Variable()
    conv = op.Conv2D(x, w)
    dense = op.MatMul(x, w1)
    with fails(VariadicError, "does not have the form of its template", at=1):
        pat.Variadic(conv, templates=[conv, w], first=[dense, w1])


def test_variadic_first_reads_other_input(x, w):
    w1, w2 = pat.Variable(), pat.Variable()
    conv = op.Conv2D(x, w)
    conv1 = op.Conv2D(x, w2)
    with fails(VariadicError, "input 1 of first-instance pattern", at=1):
        pat.Variadic(conv, templates=[conv, w], first=[conv1, w1])


def test_variadic_negative_min_len(x):
    relu = op.ReLU(x)
    with fails(VariadicError, "min_len must be a non-negative int", at=1):
        pat.Variadic(relu, templates=[relu], min_len=-1)


def test_instance_of_non_template(x, w):
    conv = op.Conv2D(x, w)
    src = pat.Variadic(conv, templates=[conv, w])
    with fails(VariadicError, "is not a template of", at=1):
        src(x, 0)


# --- context: symbols and the order of attribute reads (checked by Subst) ----------


def test_attribute_read_before_its_pattern_is_matched(x):
    w1, w2 = pat.Variable(), pat.Variable()
    conv2 = op.Conv2D(x, w2)
    conv1 = op.Conv2D(x, w1, strides=conv2.strides)  # conv1 is matched first
    y = conv1 + conv2
    with fails(AttributeOrderError, ".strides", "before it is matched", at=-2):
        Subst(y, op.Conv2D(x, w1 + w2))


def test_attribute_of_pattern_outside_the_rule(x, w):
    other = op.Sigmoid(x)
    y = op.ReLU(x, shape=other.shape)
    with fails(AttributeOrderError, "not part of the rule's source", at=-1):
        Subst(y, op.Tanh(x))


def test_attribute_of_pattern_matched_in_one_alternative(x):
    relu = op.ReLU(x)
    alt = pat.Alt(relu, op.Sigmoid(x))
    y = op.Exp(alt, dtype=relu.dtype)
    with fails(AttributeOrderError, "only some branches", at=-1):
        Subst(y, op.Exp(x))


def test_target_attribute_read_before_it_is_built(x):
    y = op.ReLU(x)
    late = op.Sqrt(x)
    early = op.Reshape(op.Tanh(x), shape=late.shape)
    with fails(AttributeOrderError, "before it is built", at=-1):
        Subst(y, op.Add(early, late))


def test_unbound_symbol_as_tuple_index(x):
    i = attr.Symbol()
    split = op.Split(x, indices_or_sections=2)
    y = op.ReLU(split[i])
    with fails(UnboundSymbolError, "nothing binds it", f"{FILE}:{sys._getframe().f_lineno - 3}", at=-1):
        Subst(y, op.Sigmoid(x))


def test_unbound_symbol_in_attribute(x):
    i = attr.Symbol()
    y = op.Split(x, indices_or_sections=2,
                 axis=i + 1)
    with fails(UnboundSymbolError, "'axis'", at=-1):
        Subst(y, op.Split(x, indices_or_sections=2, axis=1))


def test_symbol_bound_only_in_the_field_used_in_length(x):
    i = attr.Symbol()
    y = op.Split(x, indices_or_sections=attr.Variadic(i * 2, index=i,
                                                      length=i))
    with fails(UnboundSymbolError, "indices_or_sections", at=-2):
        Subst(y, op.Split(x, indices_or_sections=2))


# --- structure (checked by Subst) ---------------------------------------------------


def test_disconnected_outputs_are_for_saturate_mode_only(x):
    y = pat.Wildcard()
    a = op.ReLU(x)
    b = op.ReLU(y)
    rule = Subst([a, b], [op.Sigmoid(x), op.Sigmoid(y)])
    assert not rule.connected and rule.disconnected_output == 1
    with fails(DisconnectedSourceError, "source output 1", "shares no pattern", "greedy mode", at=-3):
        rule.require_connected()


def test_disconnected_variadic_instances():
    v = pat.Variable()
    relu = op.ReLU(v)
    src = pat.Variadic(relu, templates=[relu, v])
    i = attr.Symbol()
    item = op.Sigmoid(src(v, i))
    with fails(DisconnectedSourceError, "share no pattern", at=-3):
        Subst(src, pat.Variadic(item, templates=[item], index=i))


def test_target_uses_new_wildcard(x):
    other = pat.Wildcard()
    with fails(TargetInputError, "is not part of the source", at=-1):
        Subst(op.ReLU(x), op.Add(x, other))


def test_target_uses_new_variable(x):
    with fails(TargetInputError, "target input <Variable", at=1):
        Subst(op.ReLU(x), op.Add(x, pat.Variable()))


def test_target_uses_source_inner_node(x):
    r1 = op.ReLU(x)
    r2 = op.ReLU(r1)
    with fails(TargetInputError, "as an inner node", at=1):
        Subst(r2, op.Sqrt(r1))


def test_target_uses_source_output(x):
    a = op.ReLU(x)
    b = op.Sigmoid(a)
    with fails(TargetInputError, "as an output", at=1):
        Subst([a, b], [op.Tanh(x), op.Exp(a)])


def test_target_instance_of_inner_template(x, w):
    w1 = pat.Variable()
    conv1 = op.Conv2D(x, w1)
    conv = op.Conv2D(x, w)
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1])
    i = attr.Symbol()
    with fails(TargetInputError, "matches as an inner node", at=1):
        inst = src(conv, i)
        Subst(src, pat.Variadic(inst, templates=[inst], index=i))


def test_target_reads_source_template_directly(x, w):
    w1 = pat.Variable()
    conv = op.Conv2D(x, w)
    src = pat.Variadic(conv, templates=[conv, w], first=[op.Conv2D(x, w1), w1])
    i = attr.Symbol()
    item = op.Split(op.Conv2D(x, w), indices_or_sections=2)[i]
    with fails(VariadicError, "a template of source", "instance access", at=-1):
        Subst(src, pat.Variadic(item, templates=[item], index=i))


def test_target_reads_attribute_of_source_template(x, w):
    w1 = pat.Variable()
    conv1 = op.Conv2D(x, w1)
    conv = op.Conv2D(x, w)
    src = pat.Variadic(conv, templates=[conv, w], first=[conv1, w1])
    i = attr.Symbol()
    item = op.Reshape(src(w, i),
                      shape=conv.shape)
    with fails(VariadicError, "outside its variadic", at=-1):
        Subst(src, pat.Variadic(item, templates=[item], index=i))


def test_template_read_by_non_template(x, w):
    item = op.ReLU(w)
    v = pat.Variadic(item, templates=[item, w])
    y = op.Concatenate(v)
    z = op.Add(y, w)
    with fails(VariadicError, "is not one of its templates", at=-1):
        Subst(z, op.Sigmoid(x))


def test_target_variadic_without_length(x):
    split = op.Split(x, indices_or_sections=2)
    i = attr.Symbol()
    item = split[i]
    y = op.Concatenate(pat.Variadic(item, templates=[item], index=i), axis=split.axis)
    t = op.Sqrt(x)
    tv = op.Concatenate(pat.Variadic(t, templates=[t]), axis=0)
    with fails(VariadicError, "needs a length", at=-1):
        Subst(y, tv)


def test_target_variadic_with_min_len(x):
    y = op.ReLU(x)
    t = op.Sqrt(x)
    tv = op.Concatenate(pat.Variadic(t, templates=[t], length=2, min_len=1), axis=0)
    with fails(VariadicError, "only constrains a source", at=-1):
        Subst(y, tv)


def test_output_count_mismatch(x):
    a, b = op.ReLU(x), op.Sigmoid(x)
    with fails(OutputCountError, "2 outputs but the target has 1", at=1):
        Subst([a, b], [op.Tanh(x)])


def test_variadic_source_fixed_target(x):
    split = op.Split(x, indices_or_sections=2)
    i = attr.Symbol()
    item = split[i]
    src = pat.Variadic(item, templates=[item], index=i)
    with fails(OutputCountError, "the source has variadic outputs but the target has a fixed number", at=1):
        Subst(src, [op.Tanh(x)])


def test_duplicate_source_output(x):
    a = op.ReLU(x)
    with fails(OutputCountError, "listed twice", at=1):
        Subst([a, a], [op.Tanh(x), op.Exp(x)])


def test_no_outputs(x):
    with fails(OutputCountError, "the source has no output", at=1):
        Subst([], [])


def test_variadic_among_several_outputs(x):
    split = op.Split(x, indices_or_sections=2)
    i = attr.Symbol()
    item = split[i]
    src = pat.Variadic(item, templates=[item], index=i)
    with fails(OutputCountError, "must be the only output", at=1):
        Subst([src, op.ReLU(x)], [op.Tanh(x), op.Exp(x)])


def test_target_constant_without_value(x):
    with fails(TargetPatternError, "has no value", at=1):
        Subst(op.ReLU(x), op.Add(x, pat.Const()))


def test_alt_in_target(x):
    with fails(TargetPatternError, "can only be matched", at=1):
        Subst(op.ReLU(x), pat.Alt(op.Tanh(x), op.Exp(x)))


def test_target_trait_op_not_in_source(x):
    unary = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    with fails(TargetPatternError, "no source call matched", at=1):
        Subst(op.ReLU(x), unary(x))


def test_match_in_source(x):
    alt = pat.Alt(op.ReLU(x), op.Sigmoid(x))
    with fails(SourcePatternError, "can only be used in a target", at=1):
        Subst(op.Exp(pat.Match(alt, [op.Tanh(x), op.Exp(x)])), op.Exp(x))


def test_source_output_is_an_input(x):
    with fails(SourcePatternError, "is an input", at=1):
        Subst(x, op.ReLU(x))


def test_target_call_missing_required_attribute(x):
    y = op.Reshape(op.Reshape(x))
    with fails(MissingAttributeError, "'shape'", "relax.reshape", at=1):
        Subst(y, op.Reshape(x))


def test_target_call_sets_type_attribute(x, w):
    y = op.MatMul(x, w)
    with fails(UnknownAttributeError, "'dtype'", "op attributes only", at=1):
        Subst(y, op.MatMul(x, w, dtype="float16"))


def test_subst_of_non_pattern(x):
    with fails(InvalidOperandError, "source output 3 is not a pattern", at=1):
        Subst(3, x)


def test_same_attr_with_unknown_name(x, w):
    conv1 = op.Conv2D(x, w)
    with fails(UnknownAttributeError, "'padding_mode'", at=1):
        op.Conv2D(x, w, **pat.same_attr(conv1, ["strides", "padding_mode"]))


def test_trait_call_with_op_attribute(x):
    unary = pat.OpWithTrait(spec.OpTrait.ELEMENT_WISE)
    with fails(UnknownAttributeError, "'alpha'", "Call <ELEMENT_WISE>", at=1):
        unary(x, alpha=0.1)


def test_cond_condition_reads_its_own_branch(x):
    relu = op.ReLU(x)
    y = op.Exp(pat.Cond(relu.ndim == 4, relu, op.Sigmoid(x)))
    with fails(AttributeOrderError, "in the condition of", "before it is matched", at=-1):
        Subst(y, op.Exp(x))


def test_template_of_two_variadics(x, w):
    relu = op.ReLU(op.Add(x, w))
    first = pat.Variadic(relu, templates=[relu, relu.inputs[0], w])
    second = pat.Variadic(relu, templates=[relu])
    with fails(VariadicError, "is a template of both", at=-1):
        Subst(op.Add(op.Concatenate(first), op.Concatenate(second)), x)


def test_target_match_of_foreign_alt(x):
    alt = pat.Alt(op.ReLU(x), op.Sigmoid(x))
    other = pat.Alt(op.Tanh(x), op.Exp(x))
    with fails(TargetPatternError, "not part of the source", at=1):
        Subst(op.Exp(alt), pat.Match(other, [op.Sqrt(x), op.Sqrt(x)]))


def test_target_instance_of_foreign_variadic(x, w):
    add = op.Add(x, w)
    foreign = pat.Variadic(add, templates=[add, w])
    i = attr.Symbol()
    inst = op.ReLU(foreign(w, i))
    with fails(TargetInputError, "not part of the source", at=-1):
        Subst(op.ReLU(x), op.Concatenate(pat.Variadic(inst, templates=[inst, inst.inputs[0]], index=i, length=2)))

"""Every rule of the library builds (the frontend's semantic checks pass) and the groups hold what they say."""

import inspect

import pytest

from gsl_eq import Subst, rules

GROUPS = ("structure", "fusion", "lowering", "legalize", "cpu", "layouts", "algebraic", "ring", "default", "all", "tvm_equivalents",
          "taso", "tensat")  # the last two are TASO's rules, tested in test_taso.py
LIBRARY = sorted(name for name in rules.__all__ if name not in GROUPS and name != "TVM_PASSES")

# Every rule of GSL's collection that seeds 001/002 show or name, by its name here.
GSL_COLLECTION = {
    "diamond_conv_add", "two_conv_add", "conv_shortcut_add", "conv_mul", "bias_add_add", "split_concat",
    "split_concat_variadic", "transpose_transpose", "lower_batch_norm", "lower_layer_norm", "merge_element_wise",
    "merge_element_wise_variadic", "dispatch_tuple", "parallel_conv", "parallel_conv_variadic",
    "parallel_conv_expand_kernels", "parallel_group_conv_variadic", "parallel_matmul", "parallel_matmul_variadic",
}


@pytest.mark.parametrize("name", LIBRARY)
def test_every_rule_constructs(name):
    make = getattr(rules, name)
    rule = make()
    assert isinstance(rule, Subst)
    assert rule.name == name
    assert make() is not rule  # a fresh rule each call
    doc = inspect.getdoc(make)
    assert doc and "->" in doc.splitlines()[0], f"{name}'s docstring should say what it rewrites"


def test_the_gsl_collection_is_covered():
    assert GSL_COLLECTION <= set(LIBRARY)


def test_groups_are_lists_of_named_rules():
    for group in GROUPS:
        rs = getattr(rules, group)()
        assert rs and all(isinstance(r, Subst) for r in rs)
        names = [r.name for r in rs]
        assert len(names) == len(set(names)), f"{group} lists a rule twice"


def identities():
    return {r.name for r in [*rules.algebraic(), *rules.ring()]} - {r.name for r in rules.fusion()}


def test_all_is_every_rule_once():
    assert sorted(r.name for r in rules.all()) == sorted(set(LIBRARY) - identities())


def test_groups_partition_the_library():
    structure = {r.name for r in rules.structure()}
    fusion = {r.name for r in rules.fusion()}
    lowering = {r.name for r in rules.lowering()}
    legalize = {r.name for r in rules.legalize()}
    cpu = {r.name for r in rules.cpu()} - structure  # layouts() cancels its transposes as structure() does
    algebra = identities()
    groups = [structure, fusion, lowering, legalize, cpu]
    assert not any(a & b for k, a in enumerate(groups) for b in groups[k + 1:]) and not algebra & (structure | lowering)
    assert structure | fusion | lowering | legalize | cpu | algebra == set(LIBRARY)
    assert {r.name for r in rules.default()} <= set(LIBRARY)
    assert lowering == {"lower_batch_norm", "lower_layer_norm"}


def test_variadic_forms_come_before_their_two_output_forms():
    for group in GROUPS:
        names = [r.name for r in getattr(rules, group)()]
        for variadic in (n for n in names if n.endswith("_variadic")):
            two = variadic.removesuffix("_variadic")
            if two in names:
                assert names.index(variadic) < names.index(two), (group, variadic)


def test_tvm_equivalents_mirror_four_passes():
    assert set(rules.TVM_PASSES) == {
        "CombineParallelMatmul", "FoldBatchnormToConv2D", "DecomposeOpsForInference", "RemoveRedundantReshape"}
    expected = [make.__name__ for makers in rules.TVM_PASSES.values() for make in makers]
    assert [r.name for r in rules.tvm_equivalents()] == expected

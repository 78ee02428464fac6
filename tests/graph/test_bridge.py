"""Relax IRModule <-> graph: faithful round trips and clear refusals."""

import numpy as np
import pytest
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from gsl_eq.errors import UnsupportedModuleError
from gsl_eq import from_relax, to_relax
from gsl_eq.graph import Kind
from gsl_eq.models import (
    bert_encoder,
    diamond_conv,
    inception_block,
    inception_network,
    resnet_bottleneck,
    transformer_encoder_layer,
)
from gsl_eq import Workload

MODELS = {
    "diamond_conv": diamond_conv,
    "resnet_bottleneck": resnet_bottleneck,
    "inception_block": inception_block,
    "transformer_encoder_layer": transformer_encoder_layer,
    "bert_encoder": lambda: bert_encoder(layers=2, seq=8, dim=32, heads=2, ffn=64),
    "inception_network": lambda: inception_network(blocks=2, size=8),
}


def round_trip(wl: Workload) -> Workload:
    mod = to_relax(from_relax(wl.mod))
    assert relax.analysis.check_well_formed(mod)
    return Workload(mod, wl.params)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_round_trip_is_numerically_identical(name):
    wl = MODELS[name]()
    back = round_trip(wl)
    assert [p.name for p in back.mod["main"].params] == [p.name for p in wl.mod["main"].params]
    assert back.graph.op_counts() == wl.graph.op_counts()
    assert len(back.graph) == len(wl.graph)
    inputs = wl.random_inputs(seed=1)
    np.testing.assert_array_equal(back(**inputs), wl(**inputs))


def test_bottleneck_graph_has_batch_norm_tuples():
    g = resnet_bottleneck().graph
    bns = [n for n in g.rpo() if n.op == "relax.nn.batch_norm"]
    assert len(bns) == 3
    assert all(len(n.type.fields) == 3 for n in bns)
    items = [n for n in g.rpo() if n.kind is Kind.GETITEM]
    assert {i.inputs[0] for i in items} == set(bns) and all(i.attrs["index"] == 0 for i in items)
    assert bns[0].attrs["training"] is False and bns[0].attrs["axis"] == 1


def test_inception_graph_has_concat_of_a_tuple_and_split():
    g = inception_block().graph
    (concat,) = [n for n in g.rpo() if n.op == "relax.concat"]
    assert concat.inputs[0].kind is Kind.TUPLE and len(concat.inputs[0].inputs) == 4
    (split,) = [n for n in g.rpo() if n.op == "relax.split"]
    assert split.attrs == {"indices_or_sections": 2, "axis": 1}
    assert len(g.successors()[split]) == 2


def test_attributes_are_plain_python_values():
    g = transformer_encoder_layer().graph
    for node in g.rpo():
        for value in node.attrs.values():
            assert _plain(value), (node, value)
    reshape = next(n for n in g.rpo() if n.op == "relax.reshape")
    assert reshape.attrs["shape"] == (1, 16, 4, 16)
    perm = next(n for n in g.rpo() if n.op == "relax.permute_dims")
    assert perm.attrs["axes"] == (0, 2, 1, 3)


def _plain(value):
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def test_several_outputs_round_trip_as_a_tuple():
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(x))
            b = bb.emit(relax.op.exp(a))
            out = bb.emit_output(relax.Tuple([b, a, x]))
        bb.emit_func_output(out)
    g = from_relax(bb.get())
    assert g.returns_tuple and len(g.outputs) == 3 and g.outputs[2] is g.inputs[0]
    wl = Workload(bb.get())
    back = round_trip(wl)
    inputs = wl.random_inputs()
    for u, v in zip(wl(**inputs), back(**inputs)):
        np.testing.assert_array_equal(u, v)


@pytest.mark.slow
def test_pytorch_module_round_trip():
    import torch  # the test extra installs it

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.linear = torch.nn.Linear(8, 16)
            self.norm = torch.nn.LayerNorm(16)

        def forward(self, x):
            h = torch.relu(self.conv(x)).mean(dim=(2, 3))
            return self.norm(self.linear(h))

    net = Net()
    x = torch.randn(2, 3, 8, 8)
    wl = Workload.from_torch(net, (x,))
    assert wl.input_names == ["x"]
    assert set(wl.params) == {p.name for p in wl.mod["main"].params[1:]}
    ops = wl.graph.op_counts()
    assert ops["relax.nn.conv2d"] == 1 and ops["relax.nn.layer_norm"] == 1 and ops["relax.matmul"] == 1
    with torch.no_grad():
        expected = net(x).numpy()
    (out,) = wl(x=x.numpy())
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    back = round_trip(wl)
    np.testing.assert_array_equal(back(x=x.numpy())[0], out)
    assert net.training  # the caller's module was exported from a copy


@I.ir_module
class WithIf:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((2, 3), "float32"):
        if c:
            y = R.nn.relu(x)
        else:
            y = R.negative(x)
        return y


@I.ir_module
class SymbolicShape:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32")) -> R.Tensor(("n", 3), "float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y


@I.ir_module
class SymbolicInside:
    @R.function
    def main(x: R.Tensor((4, 6), "float32"), s: R.Shape(["m"])) -> R.Tensor(ndim=2, dtype="float32"):
        m = T.int64()
        with R.dataflow():
            r = R.reshape(x, R.shape([m, 24 // m]))
            R.output(r)
        return r


@I.ir_module
class CallsHelper:
    @R.function
    def helper(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = CallsHelper
        with R.dataflow():
            y = cls.helper(x)
            R.output(y)
        return y


@I.ir_module
class CallsTIR:
    @T.prim_func
    def relu(a: T.Buffer((2, 3), "float32"), b: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            b[i, j] = T.max(a[i, j], T.float32(0))

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = CallsTIR
        with R.dataflow():
            y = R.call_tir(cls.relu, (x,), out_ty=R.Tensor((2, 3), "float32"))
            R.output(y)
        return y


@I.ir_module
class NotDataflow:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.nn.relu(x)
        return y


@I.ir_module
class LayoutTransform:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((3, 2), "float32"):
        with R.dataflow():
            y = R.layout_transform(x, index_map=lambda i, j: (j, i))
            R.output(y)
        return y


@I.ir_module
class MatchCast:
    @R.function
    def main(x: R.Tensor((4, 6), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        m = T.int64()
        with R.dataflow():
            y = R.match_cast(x, R.Tensor((m, 6), "float32"))
            R.output(y)
        return y


@pytest.mark.parametrize(
    "mod, message",
    [
        (WithIf, r"binding 'y': control flow \(relax.If\)"),
        (SymbolicShape, r"parameter 'x': symbolic shape .*dimension n"),
        (SymbolicInside, r"parameter 's'.*not a tensor"),
        (CallsHelper, r"binding 'y': call to another function \(helper\)"),
        (CallsTIR, r"binding 'y': call to another function \(relax.call_tir of relu\)"),
        (NotDataflow, r"binding 'y': non-dataflow code"),
        (LayoutTransform, r"binding 'y': .*IndexMap is not a constant"),
        (MatchCast, r"binding 'y': match_cast"),
    ],
)
def test_unsupported_constructs_are_named(mod, message):
    with pytest.raises(UnsupportedModuleError, match=message):
        from_relax(mod)
    with pytest.raises(UnsupportedModuleError, match=message):
        Workload(mod)


def test_a_symbolic_dimension_bound_as_the_error_says_loads():
    with pytest.raises(UnsupportedModuleError, match=r"BindSymbolicVars\(\{'n': 1\}\)\(mod\)"):
        from_relax(SymbolicShape)
    bound = relax.transform.BindSymbolicVars({"n": 4})(SymbolicShape)
    assert [v.type.shape for v in from_relax(bound).inputs] == [(4, 3)]

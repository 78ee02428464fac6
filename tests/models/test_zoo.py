"""The model zoo: published-size graphs load with the expected ops; small versions and the
Hugging Face transformers build and run with TVM."""

import sys

import numpy as np
import pytest
import tvm

from gsl_eq.errors import WorkloadError
from gsl_eq import models
from gsl_eq.graph import Kind, from_relax
from gsl_eq.models.hf import hf_bert, hf_bert_module, hf_gpt2, hf_gpt2_module
from gsl_eq.models.zoo import ZOO, zoo_model

CONV, MATMUL, CONCAT = "relax.nn.conv2d", "relax.matmul", "relax.concat"

# Published-size models: output shape and op counts that identify the architecture.
DEFAULT = {
    "bert": ((1, 64, 1024), {MATMUL: 8 * 8, "relax.nn.softmax": 8, "relax.nn.layer_norm": 16, "relax.nn.gelu": 8}),
    "nasrnn": ((1, 512), {MATMUL: 5 * 16, "relax.tanh": 5 * 8, "relax.sigmoid": 5 * 5, "relax.split": 1}),
    "resnext50": ((1, 1000), {CONV: 53, "relax.nn.batch_norm": 0, "relax.nn.max_pool2d": 1}),
    "nasnet_a": ((1, 1000), {CONCAT: 16, CONV: 353, "relax.nn.max_pool2d": 4}),
    "inception_v3": ((1, 1000), {CONV: 94, CONCAT: 11, "relax.nn.max_pool2d": 4, "relax.nn.avg_pool2d": 9}),
    "squeezenet": ((1, 1000), {CONV: 26, CONCAT: 8, "relax.nn.max_pool2d": 3}),
    "vgg19": ((1, 1000), {CONV: 16, MATMUL: 3, "relax.nn.max_pool2d": 5}),
    "resnet50": ((1, 1000), {CONV: 53, "relax.nn.batch_norm": 53, MATMUL: 1}),
    "mobilenet_v2": ((1, 1000), {CONV: 52, "relax.nn.batch_norm": 52, "relax.clip": 35, "relax.add": 10 + 1, MATMUL: 1}),
}

# Small versions through the size knobs, and their output shapes.
SMALL = {
    "bert": (dict(layers=1, seq=16, hidden=64, heads=4, ffn=128), (1, 16, 64)),
    "nasrnn": (dict(steps=2, hidden=32), (1, 32)),
    "resnext50": (dict(image_size=32, layers=(1, 1, 1, 1), classes=10), (1, 10)),
    "nasnet_a": (dict(image_size=32, cells=1, filters=8, classes=10), (1, 10)),
    "inception_v3": (dict(image_size=75, modules=(1, 1, 1), classes=10), (1, 10)),
    "squeezenet": (dict(image_size=64, classes=10), (1, 10)),
    "vgg19": (dict(image_size=32, fc=64, classes=10), (1, 10)),
    "resnet50": (dict(image_size=32, layers=(1, 1, 1, 1), classes=10), (1, 10)),
    "mobilenet_v2": (dict(image_size=32, blocks=(1, 1, 2, 1, 1, 1, 1), classes=10), (1, 10)),
}


def test_zoo_names():
    assert set(ZOO) == set(DEFAULT) == set(SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DEFAULT))
def test_published_size_loads(name):
    wl = ZOO[name]()
    assert tvm.relax.analysis.check_well_formed(wl.mod)
    graph = from_relax(wl.mod)
    shape, expected = DEFAULT[name]
    assert graph.outputs[0].type.shape == shape
    counts = graph.op_counts()
    assert {op: counts[op] for op in expected} == expected
    assert wl.input_names == ["x"]
    # Every parameter has its own, plain name and a value.
    assert len(wl.params) == len(graph.inputs) - 1
    assert all(name.isidentifier() for name in wl.params)


def convs(wl):
    return [n for n in wl.graph.rpo() if n.kind is Kind.CALL and n.op == CONV]


def test_resnext50_3x3_convs_are_grouped():
    grouped = [n for n in convs(zoo_model("resnext50")) if n.attrs["groups"] != 1]
    assert len(grouped) == 16
    assert all(n.attrs["groups"] == 32 and n.inputs[1].type.shape[2:] == (3, 3) for n in grouped)
    assert {n.inputs[1].type.shape[0] for n in grouped} == {128, 256, 512, 1024}


def test_inception_v3_factorizes_7x7_convs():
    kernels = [n.inputs[1].type.shape[2:] for n in convs(zoo_model("inception_v3"))]
    assert kernels.count((1, 7)) == kernels.count((7, 1)) == 4 * 3 + 1
    assert kernels.count((1, 3)) == kernels.count((3, 1)) == 2 * 2


def test_nasnet_a_separable_convs_are_depthwise():
    depthwise = [n for n in convs(zoo_model("nasnet_a")) if n.attrs["groups"] > 1]
    assert depthwise and all(n.attrs["groups"] == n.inputs[1].type.shape[0] for n in depthwise)


def test_mobilenet_v2_has_depthwise_3x3_convs_between_1x1s():
    kernels = [(n.attrs["groups"], n.inputs[1].type.shape[2:]) for n in convs(zoo_model("mobilenet_v2"))]
    depthwise = [k for k in kernels if k[0] > 1]
    assert len(depthwise) == 17 and all(shape == (3, 3) for _, shape in depthwise)
    assert sum(shape == (1, 1) for _, shape in kernels) == 52 - 17 - 1  # all but the depthwise ones and the stem
    with pytest.raises(WorkloadError, match="7 stages"):
        zoo_model("mobilenet_v2", blocks=(1, 1))


def test_batch_norm_knob():
    counts = zoo_model("resnext50", image_size=32, layers=(1, 1, 1, 1), batch_norm=True).graph.op_counts()
    assert counts["relax.nn.batch_norm"] == counts[CONV] == 1 + 4 * 4


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_version_runs(name):
    kwargs, shape = SMALL[name]
    wl = zoo_model(name, **kwargs)
    a, b = wl(**wl.random_inputs(0)), wl(**wl.random_inputs(1))
    assert a.shape == shape and a.dtype == np.float32
    assert np.isfinite(a).all()
    assert not np.allclose(a, b, rtol=0, atol=1e-5)  # the output depends on the input


def test_unknown_model_names_the_zoo():
    with pytest.raises(WorkloadError, match=r"unknown model 'resnet18'") as err:
        zoo_model("resnet18")
    assert all(name in str(err.value) for name in ZOO)
    assert zoo_model("NasRNN", steps=1, hidden=8).input_names == ["x"]


@pytest.mark.slow
@pytest.mark.parametrize("build, module", [(hf_bert, hf_bert_module), (hf_gpt2, hf_gpt2_module)])
def test_hf_model_matches_torch(build, module):
    import torch

    kwargs = dict(layers=2, hidden=64, heads=4, seq=16)
    wl = build(**kwargs)
    assert wl.input_names == ["input_ids"]
    assert MATMUL in wl.graph.op_counts() and "relax.nn.softmax" in wl.graph.op_counts()
    model, (input_ids,) = module(**kwargs)
    with torch.no_grad():
        expected = model(input_ids).numpy()
    out = wl(input_ids=input_ids.numpy())
    assert out.shape == (1, 16, 64)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_hf_without_torch_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(WorkloadError, match=r"gsl_eq\[torch\]"):
        hf_bert()


@pytest.mark.parametrize("build, message", [
    (lambda: models.bert_encoder(layers=1, dim=30, heads=4), "bert_encoder: dim 30 must be a multiple of heads 4"),
    (lambda: models.bert_encoder(layers=0), "bert_encoder: layers must be a positive int; got 0"),
    (lambda: models.nasrnn(steps=0), "nasrnn: steps must be a positive int; got 0"),
    (lambda: models.resnet50(image_size=0), "resnet50: image_size must be a positive int; got 0"),
    (lambda: models.resnet50(layers=3), "resnet50: layers must be a sequence of non-negative ints; got 3"),
    (lambda: models.vgg19(image_size=16), r"vgg19 needs image_size >= 32 \(five 2x2 pools\), got 16"),
    (lambda: models.nasnet_a(filters=3), "nasnet_a needs filters >= 4"),
    (lambda: models.bert(hidden=30, heads=4), "bert: hidden 30 must be a multiple of heads 4"),
    (lambda: models.tensat_bert(hidden=30), "tensat_bert: hidden 30 must be a multiple of heads 16"),
    (lambda: models.ac_sum(terms=0), "ac_sum: terms must be a positive int; got 0"),
    (lambda: models.polynomial(ops=0), "polynomial: ops must be a positive int; got 0"),
    (lambda: models.inception_block(ch=0), "inception_block: ch must be a positive int; got 0"),
    # sizes each valid alone that shrink a layer's output to nothing, named with the layer
    (lambda: models.squeezenet(image_size=10), r"squeezenet\(image_size=10, classes=1000\): the sizes are too small: "
                                               r"relax.nn.max_pool2d gives Tensor\[\(1, 256, 0, 0\), float32\]"),
    (lambda: models.ac_sum(shape=(2, 0)), r"the sizes are too small: a0 gives Tensor\[\(2, 0\), float32\]"),
    (lambda: models.zoo_model("resnet50", bogus=1), "resnet50: got an unexpected keyword argument 'bogus'; "
                                                    "its arguments: image_size, layers, batch_norm, classes"),
    # an error of the graph builder, prefixed with the call
    (lambda: models.tensat_resnext50(groups=3), r"tensat_resnext50\(image_size=224, blocks=\(3, 4, 6, 3\), groups=3\): "
                                                "conv2d: 128 input channels do not divide into groups of 42"),
])
def test_a_model_built_with_a_bad_size_names_the_argument(build, message):
    with pytest.raises(WorkloadError, match=message):
        build()


def test_size_checks_keep_a_model_s_signature_and_small_valid_sizes():
    import inspect

    assert list(inspect.signature(models.resnet50).parameters) == ["image_size", "layers", "batch_norm", "classes"]
    assert models.resnet50.__doc__.startswith("ResNet-50")
    assert len(models.resnet50(image_size=8, layers=(1, 0, 1, 1), classes=10).graph) > 0
    assert len(models.vgg19(image_size=32, fc=8, classes=2).graph) > 0

"""Workload: parameters, running, folding, drawing; never mutating what it was given."""


import numpy as np
import pytest
import tvm_ffi
from tvm import relax

from gsl_eq.errors import WorkloadError
from gsl_eq.graph.drawing import DrawingError
from gsl_eq.graph import Graph, Kind, Node
from gsl_eq.models import diamond_conv, resnet_bottleneck
from gsl_eq.models.blocks import var
from gsl_eq import Workload

R = relax.op


def tvar(name, *shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


def diamond_expr():
    x, w1, w2 = tvar("x", 2, 2, 4, 4), tvar("w1", 4, 2, 1, 1), tvar("w2", 4, 2, 1, 1)
    return R.add(R.nn.conv2d(x, w1), R.nn.conv2d(x, w2))


def test_from_expr_keeps_inputs_and_draws_params_by_seed():
    a = Workload.from_expr(diamond_expr(), {"x"}, seed=3)
    b = Workload.from_expr(diamond_expr(), {"x"}, seed=3)
    c = Workload.from_expr(diamond_expr(), {"x"}, seed=4)
    assert [p.name for p in a.mod["main"].params] == ["x", "w1", "w2"]
    assert a.input_names == ["x"] and list(a.params) == ["w1", "w2"]
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name])
        assert not np.array_equal(a.params[name], c.params[name])
        assert a.params[name].dtype == np.float32 and a.params[name].shape == (4, 2, 1, 1)


def test_from_expr_rejects_unknown_input_names():
    with pytest.raises(WorkloadError, match=r"\['y'\] are not variables"):
        Workload.from_expr(diamond_expr(), {"x", "y"})


def test_run_matches_numpy_reference_and_casts_inputs():
    wl = diamond_conv()
    x = np.random.default_rng(0).random((2, 2, 4, 4))  # float64, as in seed 002
    w = wl.params["w1"][:, :, 0, 0] + wl.params["w2"][:, :, 0, 0]
    expected = np.einsum("oc,nchw->nohw", w, x.astype("float32"))
    np.testing.assert_allclose(wl(x=x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wl(x), expected, rtol=1e-5, atol=1e-6)


def test_bad_params_and_inputs_are_reported():
    mod = diamond_conv().mod
    with pytest.raises(WorkloadError, match="params must map parameter names to arrays .* got a list"):
        Workload(mod, [np.zeros((4, 2, 1, 1), "float32")])
    with pytest.raises(WorkloadError, match="'w3' is not a parameter of main"):
        Workload(mod, {"w3": np.zeros((4, 2, 1, 1), "float32")})
    with pytest.raises(WorkloadError, match=r"'w1': array of shape \(4, 2\)"):
        Workload(mod, {"w1": np.zeros((4, 2), "float32")})
    with pytest.raises(WorkloadError, match="dtype float64"):
        Workload(mod, {"w1": np.zeros((4, 2, 1, 1))})
    wl = diamond_conv()
    with pytest.raises(WorkloadError, match="missing input 'x'"):
        wl()
    with pytest.raises(WorkloadError, match="unknown input 'y'"):
        wl(y=np.zeros(3))
    with pytest.raises(WorkloadError, match=r"input 'x': shape \(2, 2\)"):
        wl(x=np.zeros((2, 2)))


def test_workload_never_mutates_what_it_is_given():
    wl = diamond_conv()
    user = {k: v.copy() for k, v in wl.params.items()}
    snapshot = {k: v.copy() for k, v in user.items()}
    mod = wl.mod
    other = Workload(mod, user)
    user["w1"][...] = 0  # the workload holds its own copy
    np.testing.assert_array_equal(other.params["w1"], snapshot["w1"])
    with pytest.raises(ValueError):
        other.params["w1"][...] = 1  # and does not let it be changed in place
    with pytest.raises(TypeError):
        other.params["w9"] = np.zeros(1)
    script = mod.script()
    other.fold_params()
    other.build()
    other(**other.random_inputs())
    assert mod.script() == script
    assert tvm_ffi.structural_equal(other.mod, mod)


def test_workloads_share_their_read_only_parameters_and_key_them_by_content():
    """A workload made from another's parameters (a rewrite's result) shares the read-only copies
    rather than copying them; a caller's array, even one made read-only, is copied; the content
    key is equal for equal content and differs on one changed element."""
    wl = diamond_conv()
    again = Workload(wl.mod, wl.params)
    assert all(again.params[k] is wl.params[k] for k in wl.params)
    mine = wl.params["w1"].copy()
    mine.flags.writeable = False
    theirs = Workload(wl.mod, {**wl.params, "w1": mine})
    assert theirs.params["w1"] is not mine and theirs.params["w2"] is wl.params["w2"]
    assert wl.content_key() == again.content_key() == theirs.content_key()
    changed = {k: v.copy() for k, v in wl.params.items()}
    changed["w1"][0, 0, 0, 0] += 1
    assert Workload(wl.mod, changed).content_key() != wl.content_key()
    inputs_only = Workload(wl.mod, {})
    assert inputs_only.content_key() != wl.content_key() and len(inputs_only.input_names) == 3


def test_a_build_that_runs_once_is_optimized_where_its_run_would_cost_more():
    """Folding or checking builds without LLVM's optimizations, except where the roofline cost per call
    says unoptimized code would run longer than optimizing takes: a product of two weight matrices."""
    from gsl_eq.workload.build_time import OPTIMIZED_ONCE_ABOVE

    x, w1, w2 = tvar("x", 4, 512), tvar("w1", 512, 512), tvar("w2", 512, 512)
    heavy = Workload.from_expr(R.matmul(x, R.matmul(w1, w2)), ["x"])
    params = heavy.params
    assert heavy.optimized_once() and "opt-level" not in heavy.once_target()
    light = diamond_conv()
    assert not light.optimized_once() and light.once_target()["opt-level"] == 0
    assert OPTIMIZED_ONCE_ABOVE > 0
    folded = heavy.fold_params()
    assert [n.op for n in folded.graph.rpo() if n.kind is Kind.CALL] == ["relax.matmul"]
    inputs = folded.random_inputs(seed=0)
    np.testing.assert_allclose(folded(**inputs), inputs["x"] @ (params["w1"] @ params["w2"]), rtol=1e-4, atol=1e-5)


def rewritten_diamond(wl: Workload) -> Workload:
    """The diamond after its substitution, before folding: conv2d(x, w1 + w2)."""
    x, w1, w2 = wl.graph.inputs
    conv = Node.call("relax.nn.conv2d", [x, Node.call("relax.add", [w1, w2])])
    return Workload.from_graph(Graph([x, w1, w2], [conv]), wl.params)


def test_fold_params_precomputes_parameter_only_subgraphs():
    wl = diamond_conv()
    unfolded = rewritten_diamond(wl)
    folded = unfolded.fold_params()
    assert [p.name for p in folded.mod["main"].params] == ["x", "v_param_1"]
    assert list(folded.params) == ["v_param_1"]
    np.testing.assert_allclose(folded.params["v_param_1"], wl.params["w1"] + wl.params["w2"], rtol=1e-6)
    assert folded.graph.op_counts() == {"relax.nn.conv2d": 1}
    inputs = wl.random_inputs()
    np.testing.assert_allclose(folded(**inputs), wl(**inputs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(folded(**inputs), unfolded(**inputs), rtol=1e-6, atol=1e-7)


def test_fold_params_folds_chains_constants_and_tuples():
    x, w, b = tvar("x", 1, 8), tvar("w", 8, 8), tvar("b", 8)
    parts = R.split(R.multiply(w, relax.const(2.0, "float32")), 2, axis=0)
    weight = R.concat([relax.TupleGetItem(parts, 1), relax.TupleGetItem(parts, 0)], axis=0)
    scaled_bias = R.exp(R.reshape(b, (1, 8)))
    y = R.add(R.matmul(x, R.permute_dims(weight, [1, 0])), scaled_bias)
    wl = Workload.from_expr(y, {"x"})
    folded = wl.fold_params()
    g = folded.graph
    assert set(folded.params) == {"v_param_1", "v_param_2"}
    assert g.op_counts() == {"relax.matmul": 1, "relax.add": 1}
    for node in g.rpo():  # no computation reads only parameters and constants
        if node.kind is Kind.CALL:
            assert any(i.kind is Kind.VAR and i.name in folded.input_names for i in _leaves(node))
    inputs = wl.random_inputs()
    np.testing.assert_allclose(folded(**inputs), wl(**inputs), rtol=1e-5, atol=1e-6)
    assert folded.fold_params() is folded


def test_fold_params_folds_what_a_foldable_tuple_holds():
    # GPT-2's position ids: a tuple of index tensors computed from constants, read by index_tensor.
    x = tvar("x", 4, 6)
    rows = R.expand_dims(R.arange(0, 4, 1, "int64"), axis=[1])
    cols = R.add(R.arange(0, 3, 1, "int64"), relax.const(2, "int64"))
    y = R.index_tensor(x, relax.Tuple([rows, R.expand_dims(cols, axis=[0])]))
    wl = Workload.from_expr(y, {"x"})
    folded = wl.fold_params()
    assert folded.graph.op_counts() == {"relax.index_tensor": 1}
    assert len(folded.params) == 2
    inputs = wl.random_inputs()
    np.testing.assert_array_equal(folded(**inputs), wl(**inputs))
    np.testing.assert_array_equal(folded(**inputs), inputs["x"][:, 2:5])


def _leaves(node):
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if not n.inputs:
            yield n
        stack.extend(n.inputs)


def test_fold_params_on_a_real_block_keeps_outputs():
    wl = resnet_bottleneck()
    folded = wl.fold_params()  # nothing is parameter-only here
    assert folded is wl


def test_visualize_draws_by_the_suffix_with_no_system_program(tmp_path, monkeypatch):
    wl = diamond_conv()
    dot = wl.visualize(tmp_path / "diamond.dot").read_text()
    assert dot.count("conv2d") == 2 and "add" in dot and "input x" in dot and "param w1" in dot
    assert dot.count("->") == 7  # 6 graph edges and one to the output
    monkeypatch.setenv("PATH", "")  # no system graphviz: the one installed with gsl_eq lays it out
    svg = wl.visualize(tmp_path / "diamond.svg").read_text()
    assert svg.count('class="node"') == 7 and "<title>relax.nn.conv2d" in svg  # 6 nodes and the output
    png = wl.visualize(tmp_path / "diamond.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    with pytest.raises(DrawingError, match=r"\.svg, \.png, \.dot"):
        wl.visualize(tmp_path / "diamond.pdf")


def test_scalar_parameters_run():
    x, s = tvar("x", 2, 3), relax.Var("s", relax.TensorType((), "float32"))
    wl = Workload.from_expr(R.multiply(x, s), {"x"})
    assert wl.params["s"].shape == ()
    inputs = wl.random_inputs()
    np.testing.assert_allclose(wl(**inputs), inputs["x"] * wl.params["s"], rtol=1e-6)


def test_duplicate_parameter_names_are_refused():
    x1 = var("x", 2, 3)
    x2 = var("x", 4)
    bb = relax.BlockBuilder()
    with bb.function("main", [x1, x2]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.sum(x1) + relax.op.sum(x2))
        bb.emit_func_output(out)
    with pytest.raises(WorkloadError, match=r"several parameters with one name \('x' at positions \[0, 1\]\)"):
        Workload(bb.get())


def test_input_names_must_not_be_a_string():
    x1 = var("x1", 2, 3)
    with pytest.raises(WorkloadError, match=r"not the string 'x1' \(for one input: \['x1'\]\)"):
        Workload.from_expr(relax.op.nn.relu(x1), input_names="x1")
    assert Workload.from_expr(relax.op.nn.relu(x1), input_names=["x1"]).input_names == ["x1"]


def test_random_integer_inputs_stay_in_range_for_what_they_index():
    x = var("x", 5, 4)
    ids = var("ids", 1, 300, dtype="int64")  # token ids for a 5-row embedding, through a reshape
    where = var("where", 5, 40, dtype="int32")  # gather along an axis of 4, through a take
    flat = var("flat", 50, dtype="int64")  # take without an axis, from a vector of 20
    other = var("other", 6, dtype="int64")  # indexes nothing: 0-7
    bb = relax.BlockBuilder()
    with bb.function("main", [x, ids, where, flat, other]):
        with bb.dataflow():
            rows = bb.emit(relax.op.take(x, relax.op.reshape(ids, (300,)), axis=0))
            picked = bb.emit(relax.op.take(where, relax.const(np.arange(4, dtype="int64")), axis=1))
            gathered = bb.emit(relax.op.gather_elements(x, picked, axis=1))
            out = bb.emit_output(relax.Tuple([rows, gathered, relax.op.take(relax.op.reshape(x, (20,)), flat), other + other]))
        bb.emit_func_output(out)
    wl = Workload(bb.get())
    inputs = wl.random_inputs(seed=1)
    assert inputs["ids"].max() == 4 and inputs["ids"].min() == 0 and inputs["ids"].dtype == np.int64
    assert inputs["where"].max() == 3 and inputs["flat"].max() >= 5 and inputs["flat"].max() <= 19
    assert inputs["other"].max() <= 7
    rows, gathered, flat_taken, _ = wl(**inputs)
    x_value = inputs["x"]
    np.testing.assert_array_equal(rows, x_value[inputs["ids"].reshape(-1)])  # in range: numpy agrees
    np.testing.assert_array_equal(gathered, np.take_along_axis(x_value, inputs["where"][:, :4], axis=1))
    np.testing.assert_array_equal(flat_taken, x_value.reshape(-1)[inputs["flat"]])


def test_random_integers_never_divide_by_zero():
    """An integer division by zero in compiled code ends the process (SIGFPE): random integer
    inputs and parameters are drawn from 1 to 7, never 0."""
    a, b = var("a", 64, dtype="int32"), var("b", 64, dtype="int32")
    wl = Workload.from_expr(relax.Tuple([R.floor_divide(a, b), R.floor_mod(a, b)]), {"a"})
    inputs = wl.random_inputs(seed=0)
    assert inputs["a"].min() >= 1 and wl.params["b"].min() >= 1 and inputs["a"].max() <= 7
    quotient, remainder = wl(**inputs)
    np.testing.assert_array_equal(quotient, inputs["a"] // wl.params["b"])
    np.testing.assert_array_equal(remainder, inputs["a"] % wl.params["b"])


@pytest.mark.slow
def test_a_workload_pickles_through_its_graph_however_deep():
    import pickle

    from gsl_eq.graph import TensorType
    from gsl_eq.models import bert_encoder

    wl = bert_encoder(layers=12).fold_params()
    back = pickle.loads(pickle.dumps(wl))
    assert [(n.kind, n.op, n.type, n.name) for n in back.graph.rpo()] == \
        [(n.kind, n.op, n.type, n.name) for n in wl.graph.rpo()]
    assert back.input_names == wl.input_names and back.unfolded == wl.unfolded
    assert all(np.array_equal(back.params[k], wl.params[k]) for k in wl.params) and set(back.params) == set(wl.params)
    inputs = wl.random_inputs(0)
    np.testing.assert_array_equal(back(**inputs), wl(**inputs))
    consts = Workload.from_expr(R.add(tvar("x", 2, 2), relax.const(np.ones((2, 2), "float32"))), {"x"})
    again = pickle.loads(pickle.dumps(consts))
    assert [n.kind for n in again.graph.rpo()] == [n.kind for n in consts.graph.rpo()]
    np.testing.assert_array_equal(again(x=np.ones((2, 2), "float32")), consts(x=np.ones((2, 2), "float32")))
    ty = TensorType((4,), "float32")  # a chain of 20,000 calls: node by node, pickling would recurse too deep
    x = Node.var("x", ty)
    node = x
    for _ in range(20_000):
        node = Node(Kind.CALL, ty, [node], op="relax.nn.relu")
    with pytest.raises(RecursionError):
        pickle.dumps(node)
    chain = pickle.loads(pickle.dumps(Graph([x], [node])))
    assert len(chain) == 20_001 and chain.inputs[0].name == "x" and chain.outputs[0].op == "relax.nn.relu"


def test_save_and_load_give_back_the_workload_constants_included(tmp_path):
    """TVMScript keeps a non-scalar or non-finite constant in metadata it does not write: save
    makes such constants parameters, so the file computes the same."""
    x = tvar("x", 2, 3)
    ids = relax.const(np.arange(6, dtype="float32").reshape(2, 3))
    masked = R.where(R.less(x, ids), relax.const(float("-inf"), "float32"), R.multiply(x, relax.const(0.5, "float32")))
    wl = Workload.from_expr(R.add(masked, tvar("b", 3)), {"x"})
    text_before = wl.mod.script()
    module, params = wl.save(tmp_path / "m.opt.py")
    assert params == tmp_path / "m.opt.params.npz" and params.exists()
    back = Workload.load(module)
    assert wl.mod.script() == text_before  # the saved workload is unchanged
    assert back.input_names == ["x"] and len(back.params) == len(wl.params) + 2  # ids and -inf; 0.5 stays inline
    assert "0.5" in module.read_text() and "metadata" not in module.read_text()
    inputs = wl.random_inputs(0)
    np.testing.assert_array_equal(back(**inputs), wl(**inputs))
    assert np.isneginf(wl(x=np.full((2, 3), -1.0, "float32"))).all()


def test_load_without_parameters_keeps_them_inputs_and_names_a_bad_file(tmp_path):
    x, w = tvar("x", 2, 3), tvar("file", 3)  # np.savez's own first argument's name
    wl = Workload.from_expr(R.add(x, w), {"x"})
    assert np.array_equal(Workload.load(wl.save(tmp_path / "f.py")[0]).params["file"], wl.params["file"])
    wl = Workload.from_expr(diamond_expr(), {"x"})
    module, params = wl.save(tmp_path / "d.py")
    params.unlink()
    assert Workload.load(module).input_names == ["x", "w1", "w2"]
    bad = tmp_path / "bad.py"
    bad.write_text("print('not a module')\n")
    with pytest.raises(WorkloadError, match="bad.py is not TVMScript"):
        Workload.load(bad)
    with pytest.raises(WorkloadError, match="cannot read .*nowhere.py"):
        Workload.load(tmp_path / "nowhere.py")

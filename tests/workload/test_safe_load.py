"""Loading a saved workload runs no code (issue 77): TVM's TVMScript parser evaluates the text's
expressions as Python, so Workload.load (and gsl-eq optimize on a saved file) checks the text first
(gsl_eq.workload.script_safety) and parses it with no Python builtins; what TVM's printer writes still loads."""

import os
import re

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax

from gsl_eq import Workload, cli
from gsl_eq.errors import WorkloadError
from gsl_eq.workload import script_safety
from gsl_eq.models import diamond_conv
from gsl_eq.models.registry import QUICK, model_registry


def _base(tmp_path) -> str:
    """The text Workload.save writes for a conv2d + add model (a Relax module, as gsl-eq optimize saves)."""
    x = relax.Var("x", relax.TensorType((1, 2, 4, 4), "float32"))
    w = relax.Var("w", relax.TensorType((2, 2, 1, 1), "float32"))
    y = relax.op.add(relax.op.nn.conv2d(x, w, strides=[1, 1]), x)
    path, _ = Workload.from_expr(y, {"x"}).save(tmp_path / "base.opt.py")
    return path.read_text()


X = 'x: R.Tensor((1, 2, 4, 4), dtype="float32")'


def _shape(code: str) -> str:
    return f'x: R.Tensor((1, 2, 4, 4 + {code}), dtype="float32")'


#: One way in per place TVM's parser evaluates an expression: name -> (the saved text's fragment, what replaces
#: it ({run}: Python that runs a command, {run_text}: that as a string, {cmd}: the command), the refusal's
#: words, whether TVM, unchecked, runs it). The command touches ``pwned`` in the test's folder.
ATTACKS = {
    "the first example": (X, 'x: R.Tensor((2, {run} + 2), dtype="float32")', "a call of __import__", True),
    "a parameter annotation": (X, X + " if {run} == 0 else None", "a call of __import__", True),
    "a shape in R.Tensor": (X, _shape("{run}"), "a call of __import__", True),
    "a call's keyword attribute": ("strides=[1, 1]", "strides=[1, 1 + {run}]", "a call of __import__", True),
    "R.func_attr": ("        with R.dataflow():", '        R.func_attr({{"x": {run}}})\n        with R.dataflow():',
                    "a call of __import__", True),
    "a function's decorator": ("    @R.function\n", "    @({run} or R.function)\n", "a call of __import__", True),
    "a decorator's argument": ("    @R.function\n", "    @R.function(pure={run} == 0)\n", "a call of __import__", True),
    # TVM's parser does not evaluate the class's decorator; it is refused all the same
    "the class's decorator": ("@I.ir_module\n", "@({run} or I.ir_module)\n", "a call of __import__", False),
    "a dunder escape": (X, _shape("().__class__.__base__.__subclasses__()[{wrap_close}].__init__.__globals__"
                                  "['system']({cmd})"), "the attribute __class__", True),
    "an escape from R": (X, _shape("R.builtin.builtin.tvm.os.system({cmd})"),
                         "a call of R.builtin.builtin.tvm.os.system", True),
    "an escape from T": (X, _shape("T.parser.tvm.os.system({cmd})"), "a call of T.parser.tvm.os.system", True),
    "the name tvm": (X, _shape("tvm.os.system({cmd})"), "the name tvm", True),
    "another builtin": (X, _shape("eval({run_text})"), "a call of eval", True),
    "a lambda": (X, _shape("(lambda: {run})()"), "a lambda", True),
    "a comprehension": (X, _shape("[{run} for _ in (1,)][0]"), "a list comprehension", True),
    "an import of os": ("@I.ir_module\n", "from os import system\n@I.ir_module\n", "an import", False),
}


def _attack(tmp_path, name: str) -> tuple[str, int, str, bool]:
    """The saved text with that attack in it, the line the code is on, the refusal's words, whether it is live."""
    fragment, code, what, live = ATTACKS[name]
    text = _base(tmp_path)
    cmd = f'"touch {tmp_path / "pwned"}"'
    wrap_close = next(k for k, c in enumerate(object.__subclasses__()) if c.__name__ == "_wrap_close")
    run = f"__import__('os').system({cmd})"
    code = code.format(run=run, run_text=repr(run), cmd=cmd, wrap_close=wrap_close)
    assert fragment in text, f"the printer no longer writes {fragment!r}"
    attacked = text.replace(fragment, code, 1)
    line = next(k for k, (a, b) in enumerate(zip(attacked.splitlines(), text.splitlines()), start=1) if a != b)
    return attacked, line, what, live


@pytest.mark.parametrize("name", ATTACKS)
def test_a_saved_file_carrying_code_is_refused_and_nothing_runs(tmp_path, name):
    text, line, what, _ = _attack(tmp_path, name)
    path = tmp_path / "attack.opt.py"
    path.write_text(text)
    try:
        Workload.load(path)
        message = "loaded"
    except WorkloadError as error:
        message = str(error)
    assert not (tmp_path / "pwned").exists()
    assert f"{path} is not TVMScript as TVM's printer writes it: it carries code that loading it would run" in message
    assert f"{what}" in message and f"at line {line}, column " in message and "Nothing in it was run" in message


@pytest.mark.parametrize("name", [name for name, attack in ATTACKS.items() if attack[-1]])
def test_each_attack_runs_its_command_when_tvm_parses_it_unchecked(tmp_path, name):
    """The attacks above are live: TVM's own parser, unchecked and with its builtins, runs each one's command."""
    text, _, _, _ = _attack(tmp_path, name)
    try:
        tvm.script.from_source(text)
    except Exception:  # noqa: BLE001 - the command ran while TVM evaluated; what it returned may not type-check
        pass
    assert (tmp_path / "pwned").exists()


def test_gsl_eq_optimize_on_a_saved_file_carrying_code_runs_none(tmp_path, capsys):
    text, _, _, _ = _attack(tmp_path, "the first example")
    path = tmp_path / "model.opt.py"
    path.write_text(text)
    assert cli.main(["optimize", str(path), "-o", str(tmp_path / "out.py")]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "carries code that loading it would run, a call of __import__" in out
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "out.py").exists()


def test_parsing_an_accepted_text_finds_no_python_builtins(tmp_path):
    """The second guard, apart from the check: TVM's parser evaluates with no builtins but range, whether
    called (eval's globals) or named bare (the parser's own look-up), and names the script binds still work."""
    text, _, _, _ = _attack(tmp_path, "another builtin")
    with pytest.raises(Exception, match="name 'eval' is not defined"):
        script_safety.parsed(text)
    annotated = _base(tmp_path).replace(X, "x: breakpoint")
    with pytest.raises(Exception, match="name 'breakpoint' is not defined"):
        script_safety.parsed(annotated)
    assert not (tmp_path / "pwned").exists()
    names = re.sub(r"\bx\b", "input", _base(tmp_path))  # a builtin's name, bound by the script
    assert "input: R.Tensor" in names
    assert script_safety.code_in(names) is None
    assert isinstance(script_safety.parsed(names), tvm.IRModule)


def test_a_builtins_name_counts_only_where_the_script_binds_it(tmp_path):
    """TVM's parser drops a block's names after it (but R.output's): a builtin's name used there is Python's."""
    text = _base(tmp_path)
    assert "R.output(gv)" in text and "        return gv" in text
    inside = text.replace("R.output(gv)", 'eval = R.add(gv, gv)\n            R.output(gv)')
    after = inside.replace("        return gv", '        y = R.add(gv, R.const(eval("1"), "float32"))\n        return y')
    assert script_safety.code_in(inside) is None
    finding = script_safety.code_in(after)
    assert finding is not None and finding.what.startswith("a call of eval")
    elsewhere = text.replace("@R.function\n", '@R.function\n    def f(eval: R.Tensor((2,), dtype="float32")):\n'
                             "        return eval\n\n    @R.function\n", 1)
    assert script_safety.code_in(elsewhere) is None
    finding = script_safety.code_in(elsewhere.replace("(1, 2, 4, 4), dtype", '(1, 2, 4, eval("4")), dtype', 1))
    assert finding is not None and finding.what.startswith("a call of eval")


@pytest.mark.parametrize("code, what", [
    ("getattr(R, 'nn')", "a call of getattr"),
    ("open('/etc/passwd')", "a call of open"),
    ("R.entry.parse('x')", "a call of R.entry.parse"),
    ("R.nn", "R.nn (a namespace, used as a value)"),
    ("T.Cast.mro()", "a call of T.Cast.mro"),
    ("T.register_script_namespace('prim_func', R.add)", "a call of T.register_script_namespace"),
    ("R.emit_te(R.add)", "a call of R.emit_te"),
    ("TypeVar(str(1))", "a call of str"),
    ("{**cls}", "a dict unpacking"),
    ("R.add(*cls)", "a starred argument"),
    ('f"{cls}"', "an f-string"),
    ("(y := 4)", "an assignment expression"),
    ("cls.__dict__", "the attribute __dict__"),
    ("__builtins__", "the name __builtins__"),
    ("[4][0].real", "an attribute (real) of a subscript"),
])
def test_what_else_the_check_refuses(tmp_path, code, what):
    text = _base(tmp_path).replace("(1, 2, 4, 4), dtype", f"(1, 2, 4, {code}), dtype", 1)
    finding = script_safety.code_in(text)
    assert finding is not None and finding.what.startswith(what), finding


@pytest.mark.parametrize("statement, what", [
    ("global x", "a global statement"), ("try:\n            pass\n        except Exception:\n            pass",
                                         "a try statement"),
    ("raise ValueError", "a raise statement"), ("del x", "a del statement"), ("import os", "an import"),
    ("class C:\n            pass", "a class"), ("x.y = x", "an assignment to an attribute"),
    ("def g(x):\n            return x", "no decorator on g"),
])
def test_statements_the_printer_never_writes_are_refused(tmp_path, statement, what):
    text = _base(tmp_path)
    signature = next(line for line in text.splitlines() if line.lstrip().startswith("def main("))
    finding = script_safety.code_in(text.replace(signature, f"{signature}\n        {statement}"))
    assert finding is not None and finding.what.startswith(what), finding


#: A sample of the zoo, of every kind: gsl_eq's blocks, the published models' small versions, TASO's graphs,
#: Hugging Face imports (hf_bert's constants save writes as parameters). The whole zoo passes too, in 40 s more.
SAMPLE = ["ac_sum", "diamond_conv", "inception_block", "inception_network", "resnet_bottleneck",
          "transformer_encoder_layer", "polynomial", "bert", "nasrnn", "squeezenet", "mobilenet_v2", "resnet50",
          "resnext50", "tensat_squeezenet", "tensat_nasrnn", "hf_bert", "hf_gpt2"]
#: Those whose outputs are compared too (built and run).
RUN = {"diamond_conv", "nasrnn", "hf_bert"}


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_the_zoo_saves_and_loads_back_equal(tmp_path, name, same_outputs):
    wl = model_registry()[name](**QUICK.get(name, {}))
    path, _ = wl.save(tmp_path / f"{name}.opt.py")
    text = path.read_text()
    assert script_safety.code_in(text) is None
    back = Workload.load(path)
    assert back.mod.script() == text and back.input_names == wl.input_names
    lifted = "v_param_" in text  # constants TVMScript cannot spell, saved as parameters
    assert lifted or tvm_ffi.structural_equal(back.mod, wl.mod)
    assert lifted or set(back.params) == set(wl.params)  # lifting drops a parameter main never reads
    assert all(key.startswith("v_param_") for key in set(back.params) - set(wl.params))
    for key in set(back.params) & set(wl.params):
        np.testing.assert_array_equal(back.params[key], wl.params[key])
    if name in RUN:
        same_outputs(wl, back)


@pytest.mark.slow
@pytest.mark.parametrize("transform", ["legalized", "fused"])
def test_tir_functions_pass_the_check(transform):
    """A module of T.prim_func kernels (after LegalizeOps; then fused) passes the check and parses alike."""
    mod = relax.transform.LegalizeOps()(model_registry()["resnet_bottleneck"]().mod)
    if transform == "fused":
        mod = relax.transform.FuseTIR()(relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(mod)))
    text = mod.script()
    assert "@T.prim_func" in text and "T.grid" in text
    assert script_safety.code_in(text) is None
    assert tvm_ffi.structural_equal(script_safety.parsed(text), tvm.script.from_source(text))


def test_symbolic_shapes_branches_and_local_functions_pass_the_check():
    """What the printer writes for dynamic shapes (n = TypeVar("n")), an if and a local function."""
    text = '''# from typing import TypeVar
# from tvm.script import ir as I
# from tvm.script import relax as R

n = TypeVar("n")
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n, 4), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor((n, 4), dtype="float32"):
        @R.function
        def inner(y: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
            gv: R.Tensor((n, 4), dtype="float32") = R.add(y, y)
            return gv

        if c:
            z_then: R.Tensor((n, 4), dtype="float32") = inner(x)
            z: R.Tensor((n, 4), dtype="float32") = z_then
        else:
            z_else: R.Tensor((n, 4), dtype="float32") = R.multiply(x, x)
            z: R.Tensor((n, 4), dtype="float32") = z_else
        return z
'''
    assert script_safety.code_in(text) is None
    mod = script_safety.parsed(text)
    assert tvm_ffi.structural_equal(mod, tvm.script.from_source(mod.script()))


def test_a_module_whose_own_text_the_check_refuses_is_not_saved(tmp_path, monkeypatch):
    """save checks that load reads its text back: a text the check refused would be a file load refuses."""
    monkeypatch.setattr(script_safety, "REFUSED_NAMES", script_safety.REFUSED_NAMES | {"conv2d"})
    with pytest.raises(WorkloadError, match="cannot save .*Workload.load would refuse it .*a call of R.nn.conv2d"):
        diamond_conv().save(tmp_path / "d.py")
    assert not os.path.exists(tmp_path / "d.py")

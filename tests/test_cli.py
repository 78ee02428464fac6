"""The gsl-eq command."""

import json

import tvm

from gsl_eq.cli import main


def test_demo_optimizes_both_models_in_both_modes_with_a_numeric_check(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for name in ("bert_encoder", "inception_network"):
        assert out.count(name) == 2
    assert out.count("greedy") >= 2 and out.count("saturated") == 4  # both modes ran out of rewrites, both models


def test_optimize_writes_a_module_tvm_parses_back_and_a_json_report(tmp_path, capsys):
    module, report = tmp_path / "out.py", tmp_path / "report.json"
    assert main(["optimize", "inception_block", "-o", str(module), "--report", str(report), "--check"]) == 0
    parsed = tvm.script.from_source(module.read_text())
    assert isinstance(parsed, tvm.IRModule) and "main" in [g.name_hint for g in parsed.get_global_vars()]
    data = json.loads(report.read_text())
    assert data["mode"] == "saturate" and data["cost_after"] < data["cost_before"]
    assert "max |diff| = 0.0e+00" in capsys.readouterr().out
    assert (tmp_path / "out.params.npz").exists()


def test_optimize_reads_a_python_file_defining_a_module(tmp_path, capsys):
    source = tmp_path / "model.py"
    source.write_text(
        "from gsl_eq.models import diamond_conv\n"
        "mod = diamond_conv().mod\n")
    assert main(["optimize", str(source), "--mode", "greedy", "--cost", "opcount",
                 "-o", str(tmp_path / "o.py"), "--report", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["calls_after"] == 2


def test_orderings_prints_every_ordering_and_saturation(tmp_path, capsys):
    plot = tmp_path / "orderings.png"
    assert main(["orderings", "diamond_conv", "-n", "3", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert out.count("greedy") == 3 and "saturate" in out and plot.stat().st_size > 0


def test_unknown_models_and_files_are_named(tmp_path, capsys):
    assert main(["optimize", "nosuch"]) == 2
    assert "unknown model 'nosuch'" in capsys.readouterr().out
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["optimize", str(empty)]) == 2
    assert "defines none of: workload" in capsys.readouterr().out

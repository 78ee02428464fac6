"""The README's examples run as written, and the documentation site builds with no warning."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readmes_examples_run(tmp_path, monkeypatch):
    import numpy as np

    from gsl_eq import Workload

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)  # the files the examples write
    scope: dict = {}
    exec(compile("\n".join(blocks), "README.md", "exec"), scope)
    assert len(scope["subst"](scope["wl"]).graph) < len(scope["wl"].graph)  # the diamond folded into one conv
    report = scope["result"].report
    assert report.cost_after <= report.cost_before and not report.fallbacks
    (run,) = scope["runs"]  # Inside TVM: the pass in tvm.compile folded the batch norm, and the build computes as PyTorch
    assert "conv_batch_norm" in run.report.rules_used
    with scope["torch"].no_grad():
        np.testing.assert_allclose(scope["y"].numpy(), scope["net"](scope["x"]).numpy(), rtol=1e-4, atol=1e-5)
    saved, original = Workload.load(tmp_path / "bert.opt.py"), scope["bert_encoder"](layers=4)
    inputs = original.random_inputs(0)
    np.testing.assert_allclose(saved(**inputs), original(**inputs), rtol=1e-4, atol=1e-5)


def test_the_documentation_builds_without_warnings(tmp_path):
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                            "-d", str(tmp_path / "site")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "closing_cycles" in api and "Saturates an e-graph holding" in api  # docstrings reached the reference


def test_the_cost_model_of_your_own_prices_both_modes_and_the_result_computes_the_same():
    import numpy as np

    from gsl_eq import optimize, rules
    from gsl_eq.models import bert_encoder

    doc = (ROOT / "docs" / "cost-models.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", doc.split("## A cost model of your own")[1].split("\n## ")[0], re.S)
    wl = bert_encoder(layers=2, seq=16, dim=48, heads=3)  # merged projections put a split's tuple among the calls
    scope: dict = {"wl": wl}
    exec(compile(block, "docs/cost-models.md", "exec"), scope)
    inputs = wl.random_inputs(0)
    for result in (scope["result"], optimize(wl, rules.default(), mode="greedy", cost=scope["Launches"]())):
        report = result.report
        assert report.cost_model == "launches" and report.cost_after < report.cost_before
        np.testing.assert_allclose(result.workload(**inputs), wl(**inputs), rtol=1e-4, atol=1e-5)

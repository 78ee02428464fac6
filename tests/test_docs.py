"""The README's and the documentation's examples run as written, and the documentation site builds with no
warning."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_blocks(path: Path, text: str | None = None, scope: dict | None = None) -> dict:
    """Runs the ```python blocks of ``path`` (or of ``text``, a part of it) in order, as one program, in
    ``scope``; returns the scope. Tracebacks name the page."""
    blocks = python_blocks(path.read_text() if text is None else text)
    assert blocks, f"{path} has no python block"
    scope = {} if scope is None else scope
    exec(compile("\n".join(blocks), str(path.relative_to(ROOT)), "exec"), scope)
    return scope


def nav_pages(section: str) -> list[Path]:
    """The pages of one section of mkdocs.yml's nav, in its order."""
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    (entries,) = [entry[section] for entry in nav if isinstance(entry, dict) and section in entry]
    return [DOCS / page for entry in entries for page in entry.values()]


@pytest.mark.slow
def test_the_readmes_examples_run(tmp_path, monkeypatch):
    import numpy as np

    from gsl_eq import Workload

    monkeypatch.chdir(tmp_path)  # the files the examples write
    scope = run_blocks(ROOT / "README.md")
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


TUTORIALS = nav_pages("Tutorials")


#: Tutorials too slow for the quick run (``-m "not slow"``).
SLOW_TUTORIALS = {"tensat-table"}


@pytest.mark.parametrize("page", [pytest.param(page, id=page.stem, marks=[pytest.mark.slow] * (page.stem in SLOW_TUTORIALS))
                                  for page in TUTORIALS])
def test_each_tutorial_runs_as_written(page, tmp_path, monkeypatch):
    """A tutorial checks its own numbers (its asserts); here its blocks run in order, in a fresh scope."""
    monkeypatch.chdir(tmp_path)
    run_blocks(page)


def paragraphs(text: str) -> list[str]:
    """The prose of a Markdown page: its paragraphs and list items, without code, tables or headings."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    pieces = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip() and not line.startswith(("#", "|", "    "))]
        item: list[str] = []
        for line in lines:
            if re.match(r"\s*([-*]|\d+\.) ", line) and item:
                pieces.append(" ".join(item))
                item = []
            item.append(line.strip())
        if item:
            pieces.append(" ".join(item))
    return pieces


def test_the_explanations_come_in_short_paragraphs():
    long = [(page.name, len(piece.split()), piece[:60]) for page in nav_pages("Explanations")
            for piece in paragraphs(page.read_text()) if len(piece.split()) > 80]
    assert not long, long


def test_the_documentation_builds_without_warnings(tmp_path):
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                            "-d", str(tmp_path / "site")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "closing_cycles" in api and "Saturates an e-graph holding" in api  # docstrings reached the reference
    for name in ("gsl_eq.optimizer.pipeline.optimize", "gsl_eq.run.limits.Limits", "gsl_eq.optimizer.budget.Budget"):
        assert f'id="{name}"' in api, name


@pytest.mark.slow
def test_the_cost_model_of_your_own_prices_both_modes_and_the_result_computes_the_same():
    import numpy as np

    from gsl_eq import optimize, rules
    from gsl_eq.models import bert_encoder

    page = DOCS / "cost-models.md"
    section = page.read_text().split("## A cost model of your own")[1].split("\n## ")[0]
    wl = bert_encoder(layers=2, seq=16, dim=48, heads=3)  # merged projections put a split's tuple among the calls
    scope = run_blocks(page, section, {"wl": wl})
    inputs = wl.random_inputs(0)
    for result in (scope["result"], optimize(wl, rules.default(), mode="greedy", cost=scope["Launches"]())):
        report = result.report
        assert report.cost_model == "launches" and report.cost_after < report.cost_before
        np.testing.assert_allclose(result.workload(**inputs), wl(**inputs), rtol=1e-4, atol=1e-5)

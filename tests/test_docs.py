"""The README's examples run as written, and the documentation site builds with no warning."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readmes_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    scope: dict = {}
    exec(compile("\n".join(blocks), "README.md", "exec"), scope)
    assert len(scope["subst"](scope["wl"]).graph) < len(scope["wl"].graph)  # the diamond folded into one conv
    report = scope["result"].report
    assert report.cost_after <= report.cost_before and not report.fallbacks


def test_the_documentation_builds_without_warnings(tmp_path):
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                            "-d", str(tmp_path / "site")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "closing_cycles" in api and "Saturates an e-graph holding" in api  # docstrings reached the reference

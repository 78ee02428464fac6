"""Pages of optimizations: self-contained HTML with the input and the result drawn, what changed
marked, and charts; the summary page of many runs; large graphs folded; a real browser opens them."""

import dataclasses
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

from gsl_eq import optimize, rules
from gsl_eq.cli import main
from gsl_eq.graph.drawing import draw
from gsl_eq.graph import Kind
from gsl_eq.graph.diff import compare
from gsl_eq.models import bert_encoder, diamond_conv, polynomial
from gsl_eq.models.registry import load_model
from gsl_eq.pages import orderings_page, result_page, summary_page, summary_row

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def panels(page: str) -> tuple[str, str]:
    """The input's and the result's drawings (SVG) of a result page."""
    start, middle = page.index('id="panel-input"'), page.index('id="panel-result"')
    end = page.index("</div></div>", middle)
    return page[start:middle], page[middle:end]


def marked(svg: str, mark: str) -> int:
    return len(re.findall(rf'class="node {mark}"', svg))


def rows_of(page: str, cls: str) -> int:
    body = re.search(rf'<table class="{cls}">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    return body.count("<tr>")


def self_contained(page: str) -> bool:
    """Nothing is fetched: no script, stylesheet, image or frame from elsewhere, no font or url(); links
    go only to ids of the page."""
    return not re.search(r"<script|<link|<img|<iframe|@import|url\(|\bsrc\s*=|\bhref\s*=\s*(?![\"']?#)", page, re.I)


@pytest.fixture(scope="module")
def diamond(tmp_path_factory):
    """The diamond (two convolutions of one input, added) after greedy mode's one rewrite, and its page."""
    wl = diamond_conv()
    result = optimize(wl, rules.default(), mode="greedy")
    path = result.to_html(tmp_path_factory.mktemp("pages") / "diamond.html")
    return wl, result, path.read_text()


@pytest.fixture(scope="module")
def saturated(tmp_path_factory):
    """One BERT layer after saturate mode, and its page."""
    result = optimize(bert_encoder(layers=1), rules.default() + rules.algebraic(), mode="saturate")
    path = result.to_html(tmp_path_factory.mktemp("pages") / "bert.html")
    return result, path


def test_the_diamond_rewrite_is_drawn_with_its_changes_marked(diamond):
    wl, result, page = diamond
    assert result.input is not None and len(result.input.graph) == len(wl.graph) == 6  # the input is kept, unchanged
    diff = compare(result.input.graph, result.workload.graph)
    # one convolution of x by the summed kernels (a new parameter) instead of two and an add
    assert [n.name for n in diff.new] == ["v_param_1"] and [n.op for n in diff.rewired] == ["relax.nn.conv2d"]
    assert sorted(n.op or n.name for n in diff.removed) == ["relax.add", "relax.nn.conv2d", "w1", "w2"]
    before, after = panels(page)
    assert before.count("<svg") == after.count("<svg") == 1
    assert (marked(after, "new"), marked(after, "rewired"), marked(after, "removed")) == (1, 1, 0)
    assert (marked(before, "removed"), marked(before, "new")) == (4, 0)
    # hover: op, shape and cost of each op; the rule that made the node
    conv = re.search(r"<title>(relax\.nn\.conv2d\n.*?)</title>", after, re.S).group(1)
    assert "shape (2, 4, 4, 4) float32" in conv and re.search(r"cost [0-9.]+ us \(roofline\)", conv)
    assert "made by diamond_conv_add" in conv
    assert re.search(r"<td>diamond_conv_add</td><td>yes</td><td class=num>1</td><td class=num>2</td>", page)
    assert self_contained(page)


@pytest.fixture(scope="module")
def squeezenet(tmp_path_factory):
    """SqueezeNet (quick) after greedy mode with the algebraic rules, and its page."""
    result = optimize(load_model("squeezenet", quick=True), rules.default() + rules.algebraic(), mode="greedy",
                      time_limit=30)
    path = result.to_html(tmp_path_factory.mktemp("pages") / "squeezenet.html")
    return result, path.read_text()


def test_the_proof_lists_each_step_linked_to_the_nodes_it_made_in_the_result(squeezenet):
    result, page = squeezenet
    proof = result.proof
    section = re.search(r"<h2>Proof</h2>(.*?)</section>", page, re.S).group(1)
    assert proof.summary() in section and section.count("<li>") == len(proof.steps) > 2
    rule_steps = {s.name for s in proof.rule_steps}
    assert rule_steps and all(f"<b>{name}</b>" in section for name in rule_steps)
    assert all(s.where in section for s in proof.rule_steps)
    links = re.findall(r'<a href="#([^"]+)">', section)
    _, after = panels(page)
    ids = set(re.findall(r'<g id="([^"]+)" class="node', after))
    assert links and set(links) <= ids  # each link goes to a box of the result's drawing
    assert "rewritten by a later step" in section  # add_commutative's swaps are swapped back
    assert self_contained(page)


def test_the_diamond_proof_links_the_folded_kernel_sum_to_its_parameter(diamond):
    _, result, page = diamond
    section = re.search(r"<h2>Proof</h2>(.*?)</section>", page, re.S).group(1)
    assert section.count("<li>") == len(result.proof.steps) == 2
    item = re.search(r"<li>rule <b>diamond_conv_add</b> \(conv\.py:\d+\), made (.*?)</li>", section).group(1)
    targets = re.findall(r'<a href="#([^"]+)">', item)
    _, after = panels(page)
    boxes = {box: title for box, title in re.findall(r'<g id="([^"]+)" class="node[^"]*">\s*<title>([^<]*)', after)}
    assert len(targets) == 2 and set(targets) <= set(boxes)
    assert sorted(boxes[t].split("\n")[0] for t in targets) == ["parameter v_param_1", "relax.nn.conv2d"]


def test_a_proof_that_cannot_be_made_leaves_its_section_out(diamond):
    _, result, _ = diamond
    page = result_page(dataclasses.replace(result, prove=lambda: 1 / 0)).html()
    assert "<h2>Proof</h2>" not in page and "<h2>Rules</h2>" in page


def test_cost_per_op_kind_has_a_bar_group_per_kind_before_and_after(diamond):
    _, result, page = diamond
    chart = re.search(r'<svg class="chart op-costs".*?</svg>', page, re.S).group(0)
    groups = re.findall(r'<g class="bar-group" data-label="([^"]+)">(.*?)</g>', chart, re.S)
    assert sorted(label for label, _ in groups) == ["add", "nn.conv2d"]
    assert all(g.count('class="bar"') == 2 for _, g in groups)  # before and after
    widths = {label: [float(w) for w in re.findall(r'class="bar" x="\d+" y="\d+" width="([0-9.]+)"', g)]
              for label, g in groups}
    assert widths["add"][0] > 0 == widths["add"][1]  # the add is gone
    assert widths["nn.conv2d"][1] < widths["nn.conv2d"][0]  # one convolution instead of two


def test_saturate_mode_shows_the_growth_per_iteration_the_stop_reason_and_the_extraction(saturated):
    result, path = saturated
    report, page = result.report, path.read_text()
    assert rows_of(page, "iterations") == len(report.iterations) >= 2
    growth = re.search(r'<svg class="chart growth".*?</svg>', page, re.S).group(0)
    assert growth.count('class="bar-group"') == len(report.iterations)
    first = report.iterations[0]
    assert f"<td class=num>1</td><td class=num>{first['enodes']}</td><td class=num>{sum(first['matches'].values())}" \
        in page
    assert f"stopped by <b>{report.stop_reason}</b>" in page
    assert f"<td>status</td><td>{report.extraction_status}</td>" in page and "<td>gap</td>" in page
    assert rows_of(page, "timings") == len(report.timings)
    assert "not which node each rule built" in page  # saturate mode says what it does not know
    assert self_contained(page)


def test_summary_page_of_sweep_rows(saturated):
    result, _ = saturated
    rows = [summary_row("bert_encoder", "default+algebraic", result.report),
            {"model": "resnet50", "rules": "default", "mode": "greedy", "cost_before": 2e-3, "cost_after": 1e-3,
             "stop_reason": "saturated", "seconds": 4.0},
            {"model": "vgg19", "rules": "default", "mode": "saturate", "cost_before": 1.0, "cost_after": 1.0,
             "enodes": 900, "speedup": 1.0}]
    page = summary_page(rows, title="sweep").html()
    assert rows_of(page, "summary") == 3
    assert re.search(r'<svg class="chart speedups".*?</svg>', page, re.S).group(0).count('class="bar-group"') == 3
    assert "<td>resnet50</td><td>default</td><td>greedy</td><td class=num>2000</td><td class=num>1000</td>" \
           "<td class=num>2.000×</td><td class=num>-</td><td>saturated</td><td class=num>4.00</td>" in page
    assert f"<td class=num>{result.report.enodes}</td>" in page and "costs in us" in page
    assert self_contained(page)


@pytest.mark.slow
def test_large_graphs_fold_repeated_blocks_and_draw_in_seconds(tmp_path):
    wl = bert_encoder(layers=22)
    assert len(wl.graph) > 1000
    result = optimize(wl, rules.default(), mode="greedy")
    start = time.perf_counter()
    page = result.to_html(tmp_path / "big.html").read_text()
    seconds = time.perf_counter() - start
    before, after = panels(page)
    for svg, total in ((before, len(wl.graph)), (after, len(result.workload.graph))):
        assert f"{total} nodes, a block of" in svg and "repeated 22 times, 21 copies folded" in svg
        assert svg.count('class="node') < 60  # one layer, the box of the 21 others, the input and the output
    assert marked(after, "new") == 10  # the layer drawn: its fused projections (the others are in the box)
    assert 'class="node folded"' in after
    assert seconds < 20, seconds  # about 1 s on 2 cores
    start = time.perf_counter()
    full = draw(wl.graph, wl.params)  # every node, for a file: Graphviz lays out 1,035 nodes quickly too
    assert full.svg().count('class="node"') == len(wl.graph) + 1 and time.perf_counter() - start < 20


def test_past_the_limit_only_changed_neighbourhoods_are_drawn():
    wl = polynomial(ops=400)  # random: no repeated blocks to fold
    graph = wl.graph
    calls = [n for n in graph.rpo() if n.kind is Kind.CALL]
    changed = {calls[100]: "new", calls[300]: "rewired"}
    drawing = draw(graph, wl.params, marks=changed, max_nodes=40, hops=2)
    assert not drawing.folds and drawing.hidden > 0 and len(graph) > 400
    drawn = {k for k, attrs in drawing.boxes.items() if "class" in attrs}
    assert len(drawn) == 2 and drawing.drawn <= 40
    assert "far from any change left out" in drawing.caption()
    assert any(k.endswith("_hidden") for k in drawing.boxes)  # the inputs left out have a stub
    index = {n: i for i, n in enumerate(graph.rpo())}
    near = {index[calls[100]], index[calls[300]]} | {index[i] for n in (calls[100], calls[300]) for i in n.inputs}
    assert {f"n{i}" for i in near} <= set(drawing.boxes)


def test_optimize_and_orderings_write_pages_from_the_command_line(tmp_path, capsys):
    page = tmp_path / "diamond.html"
    assert main(["optimize", "diamond_conv", "--mode", "greedy", "-o", str(tmp_path / "o.py"),
                 "--report", str(tmp_path / "r.json"), "--html", str(page)]) == 0
    assert "(page)" in capsys.readouterr().out
    before, after = panels(page.read_text())
    assert marked(after, "new") == 1 and marked(before, "removed") == 4
    orderings = tmp_path / "orderings.html"
    assert main(["orderings", "diamond_conv", "-n", "2", "--html", str(orderings)]) == 0
    text = orderings.read_text()
    assert rows_of(text, "summary") == 3 and text.count("<td>greedy</td>") == 2 and "<td>saturate</td>" in text
    assert 'class="chart speedups"' in text and self_contained(text)


def test_orderings_page_uses_the_summary_machinery():
    from gsl_eq.orderings import compare_orderings

    comparison = compare_orderings(diamond_conv(), rules.default()[:3], orderings=[[0, 1, 2]], cost="opcount")
    page = orderings_page(comparison, model="diamond_conv", rules="first three").html()
    assert rows_of(page, "summary") == 2 and "op calls" in page


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's)")
def test_a_browser_renders_the_page_with_no_console_errors(saturated, tmp_path):
    _, path = saturated
    shot = tmp_path / "page.png"
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", "--window-size=1400,1000",
                          path.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console  # the page has no script: nothing may reach the console
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=float)
    assert pixels.shape[:2] == (1000, 1400)
    assert pixels.std() > 20  # not blank: text, boxes and colours
    # the marked nodes' colours are on screen (the fill of a new node)
    assert np.any(np.all(np.abs(pixels - [0xff, 0xd8, 0xa8]) < 3, axis=-1))
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert dom.count('<svg width="') == 2 and 'id="panel-result"' in dom  # both drawings are in the DOM


@pytest.mark.browser
@pytest.mark.slow
def test_the_browser_check_sees_console_errors(tmp_path):
    """The check above is not blind: a page with a script error is caught."""
    if CHROMIUM is None:
        pytest.skip("no chromium")
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><p>x</p><script>undefinedFunction();</script></body></html>")
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                          "--v=0", f"--screenshot={tmp_path / 'bad.png'}", bad.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert any("CONSOLE" in line and "Uncaught" in line for line in run.stderr.splitlines())

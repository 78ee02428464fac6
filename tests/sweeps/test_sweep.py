"""Sweeps on Ray: the grid, the results file, and runs on a two-node Ray cluster on this machine
(ray.cluster_utils): the costs of optimize() in this process, cells on both nodes, resume, a worker
killed mid-cell, a cell that raises; compare_orderings and the schedule database on the same engine;
the gsl-eq sweep command end to end on a local Ray instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster as RayCluster
from tvm import relax

from gsl_eq.errors import GslEqError
from gsl_eq import compare_orderings, optimize, rules
from gsl_eq.cli import main
from gsl_eq.run.cluster import Cluster, check_address, next_group
from gsl_eq.models.registry import load_model
from gsl_eq.rules.sets import rule_set
from gsl_eq.measure.schedule_db import ScheduleDatabase
from gsl_eq.sweeps import Cell, ResultsFile, grid, run_cell, sweep

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(models=["diamond_conv", "inception_block"], rules=["default", "tvm"], modes=["greedy", "saturate"],
             costs=["roofline", "opcount"])  # 16 cells of about a second each


@pytest.fixture(scope="module")
def two_nodes():
    """A Ray cluster of two nodes of one CPU each on this machine; its workers import this checkout."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([old] if old else [])])  # the nodes' processes inherit it
    cluster = RayCluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def connected(two_nodes):
    """This process connected to the two-node cluster (kept between tests: their workers stay warm)."""
    if not ray.is_initialized():
        ray.init(address=two_nodes.address, log_to_driver=False)
    return two_nodes


def in_process(cell: Cell):
    """The report of ``cell`` from optimize() called here, not through the sweep's task."""
    wl = load_model(cell.model, quick=cell.quick)
    rule_list = [r for r in rule_set(cell.rules) if cell.mode == "saturate" or r.connected]
    return optimize(wl, rule_list, mode=cell.mode, cost=cell.cost_model, extractor=cell.extractor or "ilp",
                    order=cell.ordering, **dict(cell.options)).report


def model_file(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("from gsl_eq.models import diamond_conv\n" + body)
    return str(path)


# --------------------------------------------------------------------------- no Ray needed


def test_the_grid_expands_every_dimension_with_stable_keys():
    cells = grid(**SMALL, extractors=["ilp", "greedy"])
    assert len(cells) == 2 * 2 * (2 * 1 + 2 * 2)  # greedy cells have no extractor
    assert len({c.key for c in cells}) == len(cells)
    assert [c.key for c in grid(**SMALL, extractors=["ilp", "greedy"])] == [c.key for c in cells]
    ordered = grid(["diamond_conv"], ["default"], ["greedy"], ["opcount"], orderings=3, seed=1)
    assert len(ordered) == 3 and len({c.ordering for c in ordered}) == 3
    assert sorted(ordered[0].ordering) == list(range(len(rule_set("default"))))
    assert grid(["diamond_conv"], ["default"], time_limit=5)[0].key != grid(["diamond_conv"], ["default"])[0].key


def test_each_ordering_is_told_apart_in_the_table_the_page_and_the_chart(tmp_path, monkeypatch):
    from gsl_eq.sweeps.cells import Cell
    from gsl_eq.sweeps.summary import SweepResult

    cells = grid(["diamond_conv"], ["default"], ["greedy"], ["opcount"], orderings=3, seed=1, time_limit=5)
    lines = [{"key": cell.key, **cell.identity(), "cost_before": 10.0, "cost_after": 8.0 + k, "speedup": 10 / (8 + k)}
             for k, cell in enumerate(cells)]
    assert [Cell.of_line(line) for line in lines] == cells  # the key, hence a long ordering's label, too
    result = SweepResult(lines)
    table = str(result)
    page = result.page().html()
    modes = [cell.mode_label() for cell in cells]
    assert len(set(modes)) == 3 and all(mode.startswith("greedy, order #") for mode in modes)  # 20-odd rules: a key
    assert all(mode in table and mode in page for mode in modes)
    assert Cell("m", "r", "greedy", "opcount", ordering=(2, 0, 1)).mode_label() == "greedy, order 2-0-1"
    labels = []
    import matplotlib.axes

    set_yticks = matplotlib.axes.Axes.set_yticks
    monkeypatch.setattr(matplotlib.axes.Axes, "set_yticks",
                        lambda ax, ticks, names=None, **kw: labels.extend(names or []) or set_yticks(ax, ticks, names, **kw))
    result.plot(tmp_path / "s.png")
    assert labels == [cell.label() for cell in cells] and len(set(labels)) == 3


@pytest.mark.parametrize("bad, message", [
    (dict(models=["nosuch"]), "unknown model 'nosuch'"),
    (dict(models=["missing.py"]), "missing.py: no such file"),
    (dict(models=["diamond_conv"], rules=["tensat+nosuch"]), "unknown rule set 'nosuch' in 'tensat+nosuch'"),
    (dict(models=["diamond_conv"], modes=["fast"]), "unknown mode 'fast'"),
    (dict(models=["diamond_conv"], costs=["flops"]), "unknown cost model 'flops'"),
    (dict(models=["diamond_conv"], extractors=["best"]), "unknown extractor 'best'"),
    (dict(models=["diamond_conv"], node_limt=5), "unknown option node_limt"),
    (dict(models=["diamond_conv"], time_limit=0), "time_limit must be a positive"),
])
def test_the_grid_names_what_is_wrong_before_anything_runs(bad, message):
    with pytest.raises(GslEqError, match=message.replace("(", r"\(").replace("+", r"\+")):
        grid(**bad)


def test_rule_sets_are_named_and_summed():
    tensat, default = rule_set("tensat"), rule_set("default")
    both = rule_set("tensat+default")
    assert [r.name for r in both] == [r.name for r in tensat] + [r.name for r in default]
    assert [r.name for r in rule_set("default+default")] == [r.name for r in default]  # each rule once


def test_a_bad_address_or_a_missing_ray_is_named(monkeypatch):
    assert check_address(None) is None and check_address("local") is None
    assert check_address("auto") == "auto" and check_address("ray://10.0.0.5:10001") == "ray://10.0.0.5:10001"
    assert check_address("head:6379") == "head:6379"
    for bad, why in (("head", "expected HOST:PORT"), ("head:99999", "expected HOST:PORT"),
                     ("http://head:6379", "the only scheme Ray takes is ray://"), ("", "bad Ray address")):
        with pytest.raises(GslEqError, match=why):
            Cluster(bad)
    with pytest.raises(GslEqError, match="could not join the Ray cluster at 127.0.0.1:1: nothing answers"):
        with Cluster("127.0.0.1:1"):  # Ray itself would wait minutes
            pass
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(GslEqError, match=r'pip install "gsl_eq\[ray\]"'):
        with Cluster():
            pass


def test_a_free_worker_takes_the_jobs_sharing_most_with_its_last_and_least_with_the_others():
    groups = {("a", "x"): [0, 1], ("a", "y"): [2], ("b", "x"): [3], ("b", "y"): [4]}
    assert next_group(groups, ("a", "x"), set()) == ("a", "x")  # more jobs of its own key
    assert next_group(groups, None, {("a", "x")}) == ("b", "x")  # another model than the other worker's
    assert next_group(groups, ("b", "z"), {("a", "x")}) == ("b", "x")  # its own model again
    assert next_group(groups, ("a", "z"), {("b", "x")}) == ("a", "x")
    assert next_group({("a", "x"): [5]}, ("b", "y"), {("a", "x")}) == ("a", "x")  # only a held key is left


def test_the_results_file_keeps_whole_lines_and_drops_a_cut_one(tmp_path):
    store = ResultsFile(tmp_path / "sub" / "r.jsonl")
    assert store.read() == [] and store.repair() == 0
    store.append({"key": "a", "x": 1})
    store.append({"key": "b", "x": 2})
    with open(store.path, "ab") as f:
        f.write(b'{"key": "c", "x"')  # a write cut short
    assert [line["key"] for line in store.read()] == ["a", "b"]
    assert store.repair() == len(b'{"key": "c", "x"')
    store.append({"key": "a", "x": 3})  # a cell run again: its last line counts
    assert store.path.read_text().count("\n") == 3 and store.latest()["a"]["x"] == 3
    assert all(json.loads(line) for line in store.path.read_text().splitlines())


@pytest.mark.slow
def test_a_cell_in_this_process_has_optimizes_costs_and_says_which_rules_greedy_mode_runs():
    line = run_cell(Cell("diamond_conv", "taso", "greedy", "opcount", options=(("iter_limit", 2),)))
    assert line["error"] is None and line["cost_before"] == 3 and line["cost_after"] == 1 and line["speedup"] == 3
    assert "with a connected source" in line["note"] and line["rules_run"] == sum(r.connected for r in rules.taso())


# --------------------------------------------------------------------------- on a two-node Ray cluster


@pytest.mark.ray
@pytest.mark.slow
def test_cells_spread_over_both_nodes_with_the_costs_of_optimize_in_process(two_nodes, tmp_path):
    out = tmp_path / "sweep.jsonl"
    result = sweep(**SMALL, output=out, address=two_nodes.address, spread=True)  # joins the cluster by address
    cells = grid(**SMALL)
    assert result.ran == len(cells) == 16 and not result.failed
    assert len(result.nodes()) == 2  # both nodes ran cells
    written = ResultsFile(out).read()
    assert sorted(line["key"] for line in written) == sorted(c.key for c in cells)
    for cell, line in zip(cells, result.lines):
        report = in_process(cell)
        assert line["key"] == cell.key and line["cost_model"] == cell.cost_model
        assert (line["cost_before"], line["cost_after"]) == pytest.approx((report.cost_before, report.cost_after),
                                                                          rel=1e-12)
        assert line["stop_reason"] == report.stop_reason and line["enodes"] == report.enodes
    assert any(line["speedup"] > 1 for line in result.lines)


@pytest.mark.ray
@pytest.mark.slow
def test_workers_import_this_checkout(connected):
    def where() -> str:  # defined here: Ray ships it by value
        import gsl_eq

        return gsl_eq.__file__

    with Cluster() as cluster:  # this process is connected already: the cluster is used as it is
        assert not cluster.started and len(cluster.nodes()) == 2
        files = {done.value for done in cluster.run(where, [()] * 4, spread=True)}
    assert files == {str(ROOT / "gsl_eq" / "__init__.py")}


@pytest.mark.ray
@pytest.mark.slow
def test_max_calls_gives_each_task_a_fresh_worker_process(connected):
    # gsl-eq bench --address runs each model this way, as benchmarks/run.py runs each in a child
    def pid() -> int:
        return os.getpid()

    with Cluster() as cluster:
        reused = [done.value for done in cluster.run(pid, [()] * 4, num_cpus=1)]
        fresh = [done.value for done in cluster.run(pid, [()] * 4, num_cpus=1, max_calls=1)]
    assert len(set(fresh)) == 4 and len(set(reused)) < 4


@pytest.mark.ray
@pytest.mark.slow
def test_a_rerun_skips_the_cells_already_in_the_file(connected, tmp_path):
    out = tmp_path / "sweep.jsonl"
    args = dict(models=["diamond_conv"], rules=["default"], modes=["greedy", "saturate"], costs=["roofline", "opcount"])
    first = sweep(**args, output=out)
    assert first.ran == 4 and first.resumed == 0
    text = out.read_text()
    again = sweep(**args, output=out)
    assert again.ran == 0 and again.resumed == 4 and out.read_text() == text
    assert again.lines == first.lines
    lines = text.splitlines(keepends=True)
    out.write_text("".join(lines[:-1]) + lines[-1][:20])  # the last line cut short, as by a crash mid-write
    third = sweep(**args, output=out)
    assert third.ran == 1 and third.resumed == 3
    assert [json.loads(line)["key"] for line in out.read_text().splitlines()] == [json.loads(line)["key"]
                                                                                for line in lines]
    cut = json.loads(lines[-1])
    rerun = next(line for line in third.lines if line["key"] == cut["key"])
    varying = ("seconds", "cell_seconds", "pid", "node", "node_ip")  # where and how fast it ran
    assert {k: v for k, v in rerun.items() if k not in varying} == {k: v for k, v in cut.items() if k not in varying}


@pytest.mark.ray
@pytest.mark.slow
def test_a_worker_killed_mid_cell_is_retried_and_its_cell_recorded_once(connected, tmp_path):
    marker = tmp_path / "started"
    model = model_file(tmp_path, "dies_once.py", (
        "import os, pathlib\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if not marker.exists():\n"
        "    marker.write_text(str(os.getpid()))\n"
        "    os._exit(1)  # the worker process dies in the middle of its cell\n"
        "workload = diamond_conv()\n"))
    out = tmp_path / "sweep.jsonl"
    result = sweep([model], ["default"], ["saturate"], ["opcount"], output=out)
    (line,) = ResultsFile(out).read()
    assert line == result.lines[0] and line["error"] is None
    assert (line["cost_before"], line["cost_after"]) == (3, 1)
    assert int(marker.read_text()) != line["pid"]  # the first worker died; another ran the cell


@pytest.mark.ray
@pytest.mark.slow
def test_a_cell_that_raises_is_recorded_with_its_error_and_the_sweep_goes_on(connected, tmp_path):
    bad = model_file(tmp_path, "bad.py", "raise RuntimeError('this model cannot be built')\n")
    out = tmp_path / "sweep.jsonl"
    result = sweep(["diamond_conv", bad], ["default"], ["greedy", "saturate"], ["opcount"], output=out)
    assert result.ran == 4 and len(ResultsFile(out).read()) == 4
    failed = result.failed
    assert len(failed) == 2 and all(line["model"] == bad for line in failed)
    assert all(line["error"] == "RuntimeError: this model cannot be built" for line in failed)
    assert all(line["cost_after"] == 1 for line in result.lines if line["model"] == "diamond_conv")
    assert "RuntimeError" in str(result)  # the summary table shows the error
    again = sweep(["diamond_conv", bad], ["default"], ["greedy", "saturate"], ["opcount"], output=out,
                  retry_failed=True)
    assert again.ran == 2 and len(ResultsFile(out).read()) == 6


@pytest.mark.ray
@pytest.mark.slow
def test_compare_orderings_on_ray_gives_the_serial_costs(connected):
    wl = load_model("inception_block")
    rule_list = rules.default()
    serial = compare_orderings(wl, rule_list, orderings=4, cost="opcount", seed=3)
    spread = compare_orderings(wl, rule_list, orderings=4, cost="opcount", seed=3, address="auto")
    assert [order for order, _ in spread.greedy] == [order for order, _ in serial.greedy]
    assert [r.cost_after for _, r in spread.greedy] == [r.cost_after for _, r in serial.greedy]
    assert spread.saturate.cost_after == serial.saturate.cost_after < serial.cost_before == spread.cost_before


@pytest.mark.ray
@pytest.mark.slow
def test_the_schedule_database_is_filled_by_ray_tasks_into_one_cache(connected, tmp_path, monkeypatch):
    """The kernels go to the tasks as TVMScript, each task keys its kernel as the driver does, and the
    winning draws come back into the one cache file. The tasks' draws are not timed here: a worker's
    first draw imports TVM's tensor intrinsics (25 s on 2 cores); tests/measure/test_schedule_db.py times them."""
    from gsl_eq.measure import schedule_db

    def measure(settings: dict, script: str) -> tuple[str, list]:  # by value to the workers: a draw, untimed
        import os

        import tvm

        from gsl_eq.measure.schedule_db import ScheduleDatabase

        kernel = tvm.script.from_source(script)
        kernel = kernel if isinstance(kernel, tvm.IRModule) else tvm.IRModule({"main": kernel})
        return ScheduleDatabase(**settings).key(kernel), [1, 0, float(os.getpid())]

    monkeypatch.setattr(schedule_db, "measure_kernel", measure)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((8, 16), "float32"))
    w = relax.Var("w", relax.TensorType((16, 16), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, w)))
            out = bb.emit_output(relax.op.add(relax.op.matmul(h, w), x))
        bb.emit_func_output(out)
    mod = bb.get()
    db = ScheduleDatabase(samples=1, cache_dir=tmp_path, number=1, repeat=1)
    kernels = db.kernels(mod)
    assert len(kernels) == 2 and not any(db.cached(k) for k in kernels)
    assert db.fill([mod, mod], num_cpus=1) == 2 and db.measurements == 0  # each distinct kernel once, by the tasks
    entries = json.loads((tmp_path / "schedules.json").read_text())["entries"]
    assert set(entries) == {db.key(k) for k in kernels}
    assert all(seed == 1 and sketch == 0 and pid != os.getpid() for seed, sketch, pid in entries.values())
    assert db.fill([mod]) == 0  # nothing left to time
    assert all(ScheduleDatabase(samples=1, cache_dir=tmp_path).cached(k) for k in kernels)


# --------------------------------------------------------------------------- the command


@pytest.mark.ray
@pytest.mark.slow
def test_the_sweep_command_end_to_end_on_a_local_ray_instance(tmp_path):
    out, plot, page = tmp_path / "sweep.jsonl", tmp_path / "sweep.png", tmp_path / "sweep.html"
    argv = [sys.executable, "-m", "gsl_eq.cli", "sweep", "--models", "diamond_conv", "--rules", "default,taso",
            "--modes", "greedy,saturate", "--costs", "opcount", "--iter-limit", "2", "--time-limit", "2",
            "--cpus", "2", "-o", "sweep.jsonl", "--plot", "sweep.png", "--html", "sweep.html"]  # in tmp_path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = ResultsFile(out).read()
    assert len(lines) == 4 and not any(line["error"] for line in lines)
    assert {(line["rules"], line["mode"]) for line in lines} == {(r, m) for r in ("default", "taso")
                                                                 for m in ("greedy", "saturate")}
    taso_greedy = next(line for line in lines if line["rules"] == "taso" and line["mode"] == "greedy")
    assert "connected source" in taso_greedy["note"]
    assert done.stdout.count("diamond_conv · ") == 4 and "gsl_eq sweep: 4 cells" in done.stdout
    assert "wrote sweep.jsonl: 4 cells, 4 run now on 1 Ray node(s)" in done.stdout and "\x1b[" not in done.stdout
    assert plot.stat().st_size > 0 and page.read_text().count("<tr>") >= 5
    rerun = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert rerun.returncode == 0 and len(ResultsFile(out).read()) == 4
    assert "none run now" in rerun.stdout and "Ray node" not in rerun.stdout  # the nodes of lines read back: not now


def test_the_sweep_command_names_a_bad_address(tmp_path, capsys):
    assert main(["sweep", "--models", "diamond_conv", "-o", str(tmp_path / "s.jsonl"), "--address", "nohost"]) == 2
    assert "bad Ray address 'nohost'" in capsys.readouterr().out
    assert not (tmp_path / "s.jsonl").exists()

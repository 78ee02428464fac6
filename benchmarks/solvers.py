"""The exact extractor's solvers side by side: HiGHS alone, CP-SAT alone, and ``solver="auto"``
(HiGHS, but CP-SAT where HiGHS cannot presolve the program within ``gsl_eq.extract.ilp.HIGHS_SHARE``
of the time), each given
the same time on the same e-graph.

E-graphs: TENSAT's seven graphs under ``rules.tensat()`` with TENSAT's settings (multi-pattern
rules in the first iteration, and in every one), gpu model, as ``benchmarks/extraction.py
--cases tensat-gpu`` builds them; and two Hugging Face models under TASO's rules as a user
optimizes them (the e-graph ``optimize()`` hands its exact extractor): a ViT encoder under
``tensat() + default()`` and a 3-layer GPT-2 under ``tensat()``. Each is built in its own process;
each solve runs in its own process too (as ``ilp_extract`` always does).

    python benchmarks/solvers.py [--ilp-time S]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import sys

from extraction import TENSAT_GPU, _saturated_gpu
from report import machine, table, write_section

from gsl_eq.extract import greedy_dag_extract, ilp_extract

#: Hugging Face models under TASO's rules: (label, model, its arguments, rule set, optimize's settings).
USERS = [
    ("hf ViT encoder, tensat+default", "hf_encoder", {"name": "vit"}, "tensat+default",
     {"cost": "gpu", "multi_iterations": 2}),
    ("hf GPT-2 (3 layers, hidden 48), tensat", "hf_gpt2", {"layers": 3, "hidden": 48, "heads": 4, "seq": 10},
     "tensat", {"cost": "gpu", "multi_iterations": 1, "cycles": "filter"}),
]
SOLVERS = ("highs", "cp-sat", "auto")


class _Captured(Exception):
    pass


def _user_egraph(model: str, kwargs: dict, rule_set: str, settings: dict) -> tuple[dict, list, dict]:
    """The priced e-graph ``optimize()`` hands its exact extractor, with class positions for ids."""
    from gsl_eq import models, optimize
    from gsl_eq.rules.sets import rule_set as named

    optimize_module = sys.modules["gsl_eq.optimizer.saturate"]
    captured = {}

    def capture(egraph, roots, *args, **kwargs):
        captured["egraph"], captured["roots"] = egraph, roots
        raise _Captured

    optimize_module.ilp_candidates = capture
    try:
        optimize(getattr(models, model)(**kwargs), named(rule_set), time_limit=300, **settings)
    except _Captured:
        pass
    egraph, roots = captured["egraph"], captured["roots"]
    position = {cls: k for k, cls in enumerate(egraph)}
    plain = {position[cls]: [dataclasses.replace(n, children=tuple(position[c] for c in n.children),
                                                 fusible=tuple((position[c], saving) for c, saving in n.fusible))
                             for n in nodes] for cls, nodes in egraph.items()}
    return plain, [position[r] for r in roots], {}


def egraphs():
    context = multiprocessing.get_context("spawn")
    for name in TENSAT_GPU:
        for every in (False, True):
            with context.Pool(1) as pool:
                egraph, roots, _ = pool.apply(_saturated_gpu, (name, every))
            yield f"tensat-gpu/{name}" + (" (every)" if every else ""), egraph, roots
    for label, model, kwargs, rule_set, settings in USERS:
        with context.Pool(1) as pool:
            egraph, roots, _ = pool.apply(_user_egraph, (model, kwargs, rule_set, settings))
        yield label, egraph, roots


def run(ilp_time: float) -> str:
    rows = []
    for name, egraph, roots in egraphs():
        greedy = greedy_dag_extract(egraph, roots)
        found = {solver: ilp_extract(egraph, roots, time_limit=ilp_time, warm_start=greedy, solver=solver)
                 for solver in SOLVERS}
        best = min(extraction.cost for extraction in found.values())
        row = [name, f"{sum(map(len, egraph.values())):,}"]
        for solver in SOLVERS:
            extraction = found[solver]
            row += [f"{extraction.time:.2f}", extraction.status.split(",")[0], f"{extraction.cost / best:.4f}"]
        row.append(found["auto"].solver or "-")
        rows.append(row)
        print(name, [(s, round(found[s].time, 2), found[s].status) for s in SOLVERS], found["auto"].solver, flush=True)
    head = (f"`python benchmarks/solvers.py --ilp-time {ilp_time:g}` on {machine()}. Each solver given "
            f"{ilp_time:g} s on the same e-graph, warm-started from the greedy DAG choice: HiGHS alone (the program "
            "with lazy cycle cuts), CP-SAT alone, and auto (CP-SAT where the e-graph has cycles; otherwise HiGHS, "
            "but CP-SAT, from the greedy choice, where HiGHS cannot presolve the program within HIGHS_SHARE (20 %) "
            "of the time; solved region by region "
            "where the e-graph has regions, each region so). Seconds, "
            "status (optimal: proved), cost over the least of the three; auto's solvers: those that ran in any of "
            "its programs. E-graphs: TENSAT's graphs as benchmarks/extraction.py's tensat-gpu case builds them, "
            "then Hugging Face models under TASO's rules as optimize() hands them to its exact extractor (gpu "
            "model).")
    return head + "\n\n" + table(
        ["e-graph", "e-nodes", "HiGHS (s)", "HiGHS status", "HiGHS cost", "CP-SAT (s)", "CP-SAT status",
         "CP-SAT cost", "auto (s)", "auto status", "auto cost", "auto's solvers"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ilp-time", type=float, default=60.0)
    args = parser.parse_args()
    write_section("extraction-solvers", "## The exact extractor's solvers (benchmarks/solvers.py)\n\n"
                  + run(args.ilp_time))


if __name__ == "__main__":
    main()

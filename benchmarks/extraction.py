"""Extraction at scale: every extractor on the same e-graphs, side by side.

E-graphs: the saturated e-graphs of the zoo models under ``default() + algebraic()``
(``node_limit=50_000``, as ``optimize()``), bigger ones (full-size Hugging Face GPT-2
and ViT-B/16, AC sums under ``rules.algebraic()``), and extraction-gym's TENSAT
e-graphs (``benchmarks/data/extraction_gym``). gsl_eq's e-graphs are priced with the
roofline model, as ``optimize()`` prices them; each is built in its own process.
``--cases tensat-gpu`` (its own section): TENSAT's seven graphs under ``rules.tensat()`` with
TENSAT's settings (multi-pattern rules in the first iteration, and in every one), cycles
filtered, priced by the gpu model with its fusion terms, as benchmarks/tensat_table.py extracts them.

Extractors: tree, greedy DAG, the greedy DAG as it was before persistent sets (one
bitset over all e-nodes per candidate; kept here as the reference it must match or
beat), and the ILP (warm-started from the greedy DAG choice, ``--ilp-time`` seconds).
Per e-graph and extractor: time, cost, status, gap, and cost and time relative to
the tree extractor.

    python benchmarks/extraction.py [--cases zoo,big,tensat | tensat-gpu] [--ilp-time S] [--save DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing
import time
from pathlib import Path

import numpy as np
from report import machine, table, write_section

from gsl_eq.extract import ENodeCost, Extraction, greedy_dag_extract, ilp_extract, load_egraph, save_egraph, tree_extract
from gsl_eq.extract.extractors import Indexed, _bottom_up, _extraction, _tree_values, dag_cost, without_gc

DATA = Path(__file__).resolve().parent / "data" / "extraction_gym"
TENSAT = ["vgg_acyclic", "resnet50_acyclic", "vgg", "resnet50", "bert_acyclic", "bert"]
#: The best known DAG costs of extraction-gym's TENSAT e-graphs: CPLEX given 10 hours in the SmoothE
#: artifact (yaohuicai/smoothe-artifact); resnet50's and bert's proved optimal there.
BEST_KNOWN = {"tensat/vgg": 4.8508, "tensat/resnet50": 4.3858, "tensat/bert": 0.7047}
ZOO_MODELS = ["bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19", "resnet50"]
BIG = {  # name -> (description, node limit)
    "hf_gpt2_full": ("Hugging Face GPT-2, 12 layers, hidden 768, default() + algebraic()", 100_000),
    "hf_vit_b16": ("Hugging Face ViT-B/16 (224 x 224), default() + algebraic()", 100_000),
    "ac_sum12": ("a0 + ... + a11 under algebraic()", 50_000),
    "ac_sum16": ("a0 + ... + a15 under algebraic()", 200_000),
}


# --- the e-graphs ----------------------------------------------------------------------------------


def _hf_vit():
    import torch
    import transformers

    from gsl_eq import Workload

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, pixels):
            return self.model(pixel_values=pixels).last_hidden_state

    config = transformers.ViTConfig(attn_implementation="eager")  # ViT-B/16: 12 layers, hidden 768, 224 x 224
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LastHiddenState(transformers.ViTModel(config, add_pooling_layer=False)).eval()
        pixels = torch.randn(1, 3, 224, 224)
    return Workload.from_torch(model, (pixels,))


def _saturated(name: str) -> tuple[dict, list, dict]:
    """Saturate one case (in a worker process) and return its priced e-graph with integer class ids."""
    from gsl_eq import rules
    from gsl_eq.egraph import Runner
    from gsl_eq.cost import get_cost_model
    from gsl_eq.optimizer.choose import priced, roots
    from gsl_eq.models import ac_sum, hf_gpt2, zoo_model

    library = list({r.name: r for r in [*rules.default(), *rules.algebraic()]}.values())
    if name.startswith("ac_sum"):
        wl, chosen, limit = ac_sum(int(name[6:])), rules.algebraic(), BIG[name][1]
    elif name == "hf_gpt2_full":
        wl, chosen, limit = hf_gpt2(layers=12, hidden=768, heads=12), library, BIG[name][1]
    elif name == "hf_vit_b16":
        wl, chosen, limit = _hf_vit(), library, BIG[name][1]
    else:
        wl, chosen, limit = zoo_model(name), library, 50_000
    start = time.perf_counter()
    runner = Runner(wl.graph, chosen, node_limit=limit, time_limit=300, params=wl.params)
    report = runner.run()
    snap = runner.egraph.snapshot()
    egraph = priced(runner.egraph, snap, get_cost_model("roofline"))
    position = {cls: k for k, cls in enumerate(egraph)}
    plain = {position[cls]: [ENodeCost(n.cost, tuple(position[c] for c in n.children), n.op) for n in nodes]
             for cls, nodes in egraph.items()}
    info = {"ops": sum(1 for n in wl.graph.rpo() if n.kind.value == "call"), "stop": report.stop_reason.value,
            "saturate": time.perf_counter() - start}
    return plain, [position[r] for r in roots(runner, snap)], info


#: TENSAT's graphs for ``--cases tensat-gpu`` (gsl_eq.models.tensat).
TENSAT_GPU = ["bert", "nasrnn", "resnext50", "nasnet_a", "inception_v3", "squeezenet", "vgg19"]


def _saturated_gpu(name: str, every: bool) -> tuple[dict, list, dict]:
    """One of TENSAT's graphs saturated under TENSAT's settings (multi-pattern rules in the first
    iteration, or in ``every`` one), cycles filtered, priced by the gpu model with its fusion terms."""
    from gsl_eq import rules
    from gsl_eq.egraph import Runner
    from gsl_eq.egraph.cycles import closing_cycles
    from gsl_eq.cost import get_cost_model
    from gsl_eq.optimizer.choose import priced, roots
    from gsl_eq.models import tensat_model

    wl = tensat_model(name).fold_params()
    start = time.perf_counter()
    runner = Runner(wl.graph, rules.tensat(), node_limit=50_000, iter_limit=15, time_limit=300, params=wl.params,
                    multi_iterations=None if every else 1)
    report = runner.run()
    snap = runner.egraph.snapshot()
    root_classes = roots(runner, snap)
    egraph = priced(runner.egraph, snap, get_cost_model("gpu"), left_out=closing_cycles(snap.classes, root_classes) or set())
    position = {cls: k for k, cls in enumerate(egraph)}
    plain = {position[cls]: [dataclasses.replace(n, children=tuple(position[c] for c in n.children),
                                                 fusible=tuple((position[c], saving) for c, saving in n.fusible))
                             for n in nodes] for cls, nodes in egraph.items()}
    info = {"ops": sum(1 for n in wl.graph.rpo() if n.kind.value == "call"), "stop": report.stop_reason.value,
            "saturate": time.perf_counter() - start}
    return plain, [position[r] for r in root_classes], info


def egraphs(cases: list[str]):
    """(name, description, e-graph, roots) per case, gsl_eq's built each in a fresh process."""
    names = []
    if "zoo" in cases:
        names += ZOO_MODELS
    if "big" in cases:
        names += list(BIG)
    context = multiprocessing.get_context("spawn")
    for name in names:
        with context.Pool(1) as pool:
            egraph, roots, info = pool.apply(_saturated, (name,))
        description = BIG[name][0] if name in BIG else f"zoo {name}, default() + algebraic()"
        yield name, (f"{description}: {info['ops']} ops, saturated to {info['stop']} "
                     f"in {info['saturate']:.1f} s"), egraph, roots
    if "tensat-gpu" in cases:
        for name in TENSAT_GPU:
            for every in (False, True):
                with context.Pool(1) as pool:
                    egraph, roots, info = pool.apply(_saturated_gpu, (name, every))
                when = "every iteration" if every else "the first iteration"
                yield (f"tensat-gpu/{name}" + (" (every)" if every else ""),
                       f"TENSAT's {name}, rules.tensat(), multi-pattern rules in {when}, gpu model: {info['ops']} ops, "
                       f"saturated to {info['stop']} in {info['saturate']:.1f} s", egraph, roots)
    if "tensat" in cases:
        for name in TENSAT:
            egraph, roots = load_egraph(DATA / f"{name}.json.gz")
            yield f"tensat/{name}", "extraction-gym's TENSAT e-graph (costs as in the file)", egraph, roots


# --- the reference greedy DAG ----------------------------------------------------------------------


def _bitset_values(graph: Indexed):
    """The greedy DAG's values before persistent sets: a term is a bitset over all e-nodes,
    its key the sum of their costs, unpacked for every candidate (quadratic)."""
    costs = np.asarray(graph.node_cost)
    n_bytes = (len(costs) + 7) // 8

    def combine(best, node):
        members = 1 << node
        for child in graph.node_children[node]:
            members |= best[child]
        mask = np.unpackbits(np.frombuffer(members.to_bytes(n_bytes, "little"), np.uint8), count=len(costs),
                             bitorder="little")
        return float(costs[mask.view(bool)].sum()), members

    return combine


def bitset_greedy_dag_extract(egraph, roots) -> Extraction:
    start = time.perf_counter()
    with without_gc():
        graph = Indexed(egraph)
        positions = graph.root_positions(roots)
        tree = graph.choice(_bottom_up(graph, positions, _tree_values))
        dag = graph.choice(_bottom_up(graph, positions, _bitset_values))
    choice = min([dag, tree], key=lambda candidate: dag_cost(egraph, roots, candidate))
    return _extraction("bitset greedy DAG", egraph, roots, choice, start, status="heuristic")


# --- the run -----------------------------------------------------------------------------------------


def fmt_gap(gap: float | None) -> str:
    return "-" if gap is None else f"{gap:.2%}"


def run(args) -> str:
    summary, detail = [], []
    for name, description, egraph, roots in egraphs(args.cases.split(",")):
        enodes = sum(map(len, egraph.values()))
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            save_egraph(egraph, roots, Path(args.save) / f"{name.replace('/', '_')}.json.gz")
        tree = tree_extract(egraph, roots)
        greedy = greedy_dag_extract(egraph, roots)
        reference = bitset_greedy_dag_extract(egraph, roots) if enodes <= args.bitset_limit else None
        ilp = ilp_extract(egraph, roots, time_limit=args.ilp_time, warm_start=greedy)
        ilp.extractor = f"ilp ({ilp.solver or 'highs, no answer'})"
        # each solver the exact extractor did not choose alone, on the same e-graph in the same time (both
        # where its regions took different ones)
        chosen = ilp.solver if ilp.solver in ("highs", "cp-sat") else "auto"
        others = []
        for solver in ("highs", "cp-sat"):
            if solver != ilp.solver:
                others.append(ilp_extract(egraph, roots, time_limit=args.ilp_time, warm_start=greedy, solver=solver))
                others[-1].extractor = f"ilp ({solver}{', no answer' if others[-1].solver is None else ''}, not chosen)"
        highs = ilp if ilp.solver == "highs" else others[0]
        cpsat = ilp if ilp.solver == "cp-sat" else others[-1]
        # solved region by region: the same solver on the whole program, side by side
        whole = None
        if (ilp.regions or 1) > 1:
            whole = ilp_extract(egraph, roots, time_limit=args.ilp_time, warm_start=greedy, solver=chosen,
                                regions=False)
            whole.extractor = f"ilp ({ilp.solver}, whole program)"
            ilp.extractor = f"ilp ({ilp.solver}, {ilp.regions} regions)"
        # without the parts rows (gsl_eq.extract.parts): the same solver, side by side
        loose = None
        if Indexed(egraph).parts:
            loose = ilp_extract(egraph, roots, time_limit=args.ilp_time, warm_start=greedy, solver=chosen,
                                parts=False)
            loose.extractor = f"ilp ({ilp.solver}, no parts rows)"
        rows = []
        for extraction in (tree, greedy, reference, ilp, whole, loose, *others):
            if extraction is None and (extraction is whole or extraction is loose):
                continue
            if extraction is None:
                rows.append(["bitset greedy DAG (before)", "-", "-", f"skipped above {args.bitset_limit:,} e-nodes",
                             "-", "-", "-", "-"])
                continue
            rows.append([extraction.extractor, f"{extraction.time:.3f}", f"{extraction.cost:.6g}", extraction.status,
                         fmt_gap(extraction.gap), f"{extraction.cost / tree.cost:.4f}" if tree.cost else "-",
                         f"{extraction.time / max(tree.time, 1e-9):.2f}",
                         f"{extraction.cost / BEST_KNOWN[name]:.4f}" if name in BEST_KNOWN else "-"])
        detail += [f"### {name}", f"{description}; {len(egraph):,} e-classes, {enodes:,} e-nodes.",
                   table(["extractor", "time (s)", "cost", "status", "gap", "cost / tree", "time / tree",
                          "cost / best known"], rows)]
        summary.append([name, f"{enodes:,}", f"{tree.time:.2f}", f"{greedy.time:.2f}",
                        "-" if reference is None else f"{reference.time:.2f}",
                        "-" if reference is None else ("equal" if math.isclose(greedy.cost, reference.cost, rel_tol=1e-9)
                                                       else f"{greedy.cost / reference.cost:.4f}"),
                        f"{ilp.time:.2f}", ilp.solver, ilp.status, fmt_gap(ilp.gap), f"{ilp.cost / greedy.cost:.4f}",
                        f"{BEST_KNOWN[name]:.4f}" if name in BEST_KNOWN else "-",
                        f"{ilp.cost / BEST_KNOWN[name]:.4f}" if name in BEST_KNOWN else "-",
                        f"{highs.cost / cpsat.cost:.4f}", cpsat.status, fmt_gap(cpsat.gap),
                        "-" if whole is None else f"{ilp.regions}",
                        "-" if whole is None else f"{whole.time:.2f}",
                        "-" if whole is None else f"{whole.time / ilp.time:.2f}",
                        "-" if whole is None else f"{whole.cost / ilp.cost:.4f}",
                        "-" if whole is None else whole.status,
                        "-" if loose is None else f"{loose.time:.2f}",
                        "-" if loose is None else f"{loose.time / ilp.time:.2f}",
                        "-" if loose is None else f"{loose.cost / ilp.cost:.4f}",
                        "-" if loose is None else loose.status])
        print(f"{name}: {enodes} e-nodes, greedy {greedy.time:.2f} s, ilp {ilp.status} in {ilp.time:.1f} s", flush=True)
    head = [
        f"`python benchmarks/extraction.py --cases {args.cases} --ilp-time {args.ilp_time:g}` on {machine()}. "
        f"ILP time limit {args.ilp_time:g} s per e-graph (warm start: the greedy DAG choice). "
        "Costs: roofline seconds for gsl_eq's zoo e-graphs, gpu-model seconds with fusion terms for tensat-gpu's, "
        "the file's costs for extraction-gym's TENSAT e-graphs. ILP solver: the exact "
        "extractor's choice (CP-SAT where the e-graph has cycles, HiGHS otherwise; both, named so, where "
        "its regions took different ones); gap: against the solver's "
        "proved lower bound. Best known: CPLEX given 10 h (the SmoothE artifact). HiGHS / CP-SAT: the cost the "
        "HiGHS program (lazy cycle cuts) finds over CP-SAT's, each solver run on every e-graph in the same "
        "time, whichever the exact extractor chose (each solver alone where it took both); CP-SAT's status and gap "
        "beside it. Regions: the programs "
        "the exact extractor solved, one per region (gsl_eq.extract.regions; like regions, one for all), where it "
        "found regions; then the "
        "same solver on the whole program in the same time: its seconds, its time and cost over the regions', "
        "its status. No parts rows: the same solver without the rows that take a used split's parts from it "
        "(gsl_eq.extract.parts), where the e-graph has parts: its seconds, its time and cost over the ILP's, its status.",
        table(["e-graph", "e-nodes", "tree (s)", "greedy DAG (s)", "bitset greedy, before (s)",
               "greedy cost / before", "ILP (s)", "ILP solver", "ILP status", "ILP gap", "ILP cost / greedy",
               "best known", "ILP / best known", "HiGHS / CP-SAT", "CP-SAT status", "CP-SAT gap", "regions",
               "whole (s)", "whole / regions time", "whole / regions cost", "whole status", "no parts rows (s)",
               "no parts / ILP time", "no parts / ILP cost", "no parts status"], summary),
    ]
    return "\n\n".join([*head, *detail])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="zoo,big,tensat")
    parser.add_argument("--ilp-time", type=float, default=30.0)
    parser.add_argument("--bitset-limit", type=int, default=150_000, help="skip the quadratic reference above this")
    parser.add_argument("--save", help="also write every e-graph there as extraction-gym JSON")
    args = parser.parse_args()
    if args.cases == "tensat-gpu":
        write_section("extraction-gpu", "## Extraction on fusing e-graphs (benchmarks/extraction.py --cases tensat-gpu)"
                                        "\n\n" + run(args))
    elif "tensat-gpu" in args.cases.split(","):
        parser.error("--cases tensat-gpu writes a section of its own: run it alone")
    else:
        write_section("extraction", "## Extraction at scale (benchmarks/extraction.py)\n\n" + run(args))


if __name__ == "__main__":
    main()

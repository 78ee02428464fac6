"""Saturate mode: growth and where its time goes, whether its limits hold, and its overhead over
raw egglog.

1. *Growth*: every library rule and the algebraic identities on a 12-layer BERT-style
   encoder and an Inception-style CNN; e-nodes per iteration, time per phase, the
   share of the egglog engine against Python.
2. *Limit adherence*: ``optimize()`` on explosive cases (a 16-term sum under the
   algebraic rules, a 300-op polynomial under the ring rules, NasRNN), on every
   zoo model, and under TASO's rules (MobileNet-V2 with tensat() + default(), TENSAT's
   Inception-v3 with tensat() and with taso() under 2 s): final e-nodes against ``node_limit``, the call's wall time (without
   the final build and the check) against ``time_limit``, peak memory. Each case runs in its own
   process.
3. *Overhead*: the same rules on the same graph, grown by gsl_eq's runner and by an
   egglog program written directly here (the same encoding, every match applied
   every iteration), the same number of iterations; the e-node counts after every
   iteration are asserted equal. Minimum of 3 runs each.

    python benchmarks/saturation.py [--node-limit N] [--iter-limit N] [--time-limit S] [--parts growth,limits,overhead]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time
from pathlib import Path
from typing import Callable

from report import machine, table, write_section

from gsl_eq import optimize, rules
from gsl_eq.egraph import EGraph, Runner
from gsl_eq.graph import Graph, Kind, Node, TensorType
from gsl_eq.models import ac_sum, bert_encoder, hf_bert, hf_gpt2, inception_network, nasrnn, polynomial, tensat_model, zoo_model
from gsl_eq.models.zoo import ZOO

MODELS = {"BERT-style encoder (12 layers)": bert_encoder, "Inception-style CNN (6 blocks)": inception_network}


def unique(rule_list):
    names: set[str] = set()
    return [r for r in rule_list if not (r.name in names or names.add(r.name))]


# --- 1. growth -----------------------------------------------------------------------------------


def growth(args) -> list[str]:
    chosen = unique([*rules.all(), *rules.algebraic()])
    sections = [
        f"Limits: {args.node_limit} e-nodes, {args.iter_limit} iterations, {args.time_limit:.0f} s. "
        f"Rules ({len(chosen)}, all compiled): {', '.join(r.name for r in chosen)}.",
    ]
    summary, details = [], []
    for label, build in MODELS.items():
        graph = build().graph
        start = time.perf_counter()
        runner = Runner(graph, chosen, node_limit=args.node_limit, iter_limit=args.iter_limit, time_limit=args.time_limit)
        load = runner.report.load_time + runner.report.compile_time
        report = runner.run()
        total = time.perf_counter() - start
        rows, elapsed, previous = [], load, len(graph)
        for k, it in enumerate(report.iterations, 1):
            elapsed += it.total_time
            rate = (it.enodes - previous) / it.total_time if it.total_time else 0.0
            rows.append([k, it.enodes, sum(it.matches.values()), sum(it.applied.values()),
                         sum(it.backlog.values()), sum(it.accepted_keys.values()), f"{elapsed:.2f}", f"{rate:,.0f}",
                         f"{it.search_time:.3f}", f"{it.guard_time:.3f}", f"{it.apply_time:.3f}",
                         ", ".join([*it.banned, *(f"{n} (new)" for n in it.new_bans)]) or "-"])
            previous = it.enodes
        engine, python = report.engine_time, report.python_time
        share = engine / (engine + python) if engine + python else 0.0
        grown = report.iterations[-1].enodes - len(graph) if report.iterations else 0
        summary.append([label, len(graph), report.iterations[-1].enodes if report.iterations else len(graph),
                        len(report.iterations), report.stop_reason.value, f"{load:.2f}", f"{total:.2f}",
                        f"{grown / max(total - load, 1e-9):,.0f}", f"{share:.0%}", f"{1 - share:.0%}"])
        details += [f"### {label}", table(
            ["iteration", "e-nodes", "matches found", "applied", "backlog", "keys accepted",
             "time since start (s)", "e-nodes added / s", "search (s)", "Python keys (s)", "apply (s)", "banned"],
            rows)]
        print(*summary[-1], sep="\t", flush=True)
    sections.append(table(["model", "graph nodes", "e-nodes", "iterations", "stop", "compile and load (s)",
                           "total (s)", "e-nodes added / s", "engine share", "Python share"], summary))
    sections += details
    sections.append(
        "Each source is e-matched once per iteration (semi-naively: only matches involving what changed), "
        "into a worklist; Python reads only the distinct keys (each query's key relation, with egglog's "
        "`print-function`) and decides each new one once: the matched subgraph is rebuilt from the key and greedy "
        "mode's matcher and target builder run on it, TVM typing every new node. The apply rules then consume "
        "worklist rows without matching the e-graph again. *apply* includes rebuilding.")
    return sections


# --- 2. limit adherence --------------------------------------------------------------------------

SUITE_RULES = lambda: unique([*rules.default(), *rules.algebraic()])  # noqa: E731  (the suite's saturate rules)
RICH_RULES = lambda: unique([*rules.ring(), *rules.algebraic(), *rules.default()])  # noqa: E731


def limit_cases(node_limit: int, time_limit: float, short_time: float) -> list[tuple[str, Callable, Callable, int, float, str]]:
    """(label, model, rules, node_limit, time_limit, cost model) of every case."""
    cases = []
    for label, model, group in [("16-term sum, algebraic()", lambda: ac_sum(16), rules.algebraic),
                                ("polynomial of 300 ops, ring()", lambda: polynomial(300), rules.ring)]:
        cases.append((label, model, group, node_limit, time_limit, "roofline"))
        cases.append((label, model, group, 10**7, short_time, "roofline"))
    cases.append(("NasRNN (2 steps, hidden 64), ring() + algebraic() + default()",
                  lambda: nasrnn(steps=2, hidden=64), RICH_RULES, node_limit, time_limit, "roofline"))
    models: dict[str, Callable] = {name: (lambda n=name: zoo_model(n)) for name in ZOO}
    models.update(hf_bert=hf_bert, hf_gpt2=hf_gpt2)
    for name, model in models.items():
        cases.append((f"{name}, default() + algebraic()", model, SUITE_RULES, node_limit, time_limit, "roofline"))
    # TASO's rules: a variadic merge finding 21 million matches once its ban lifts (MobileNet-V2), the
    # attribution of a 50k-e-node result (Inception-v3), compiling 620 rules under a short limit
    cases += [
        ("mobilenet_v2 (32 px), tensat() + default()", lambda: zoo_model("mobilenet_v2", image_size=32),
         lambda: [*rules.tensat(), *rules.default()], node_limit, time_limit, "roofline"),
        ("TENSAT's inception_v3, tensat(), gpu", lambda: tensat_model("inception_v3"), rules.tensat, node_limit,
         time_limit, "gpu"),
        ("TENSAT's inception_v3, taso(), gpu", lambda: tensat_model("inception_v3"), rules.taso, node_limit, 2.0, "gpu"),
    ]
    return cases


def _rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize() / 2**20


def _peak_rss_mb() -> float:
    """The process's peak resident memory since the last reset (Linux's VmHWM)."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
    return int(line.split()[1]) / 1024


def _limit_case(index: int, args: tuple[int, float, float], send) -> None:
    _, model, group, node_limit, time_limit, cost = limit_cases(*args)[index]
    wl = model()
    rule_list = group()
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak: building the model is not optimizing it
    before = _rss_mb()
    start = time.perf_counter()
    result = optimize(wl, rule_list, cost=cost, node_limit=node_limit, iter_limit=10**6, time_limit=time_limit)
    timings = result.report.timings
    wall = time.perf_counter() - start - timings["final build"] - timings.get("release", 0.0)
    peak = max(_peak_rss_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    report = result.report
    send.send(dict(nodes=len(wl.graph), enodes=report.enodes, stop=report.stop_reason, wall=wall, before=before,
                   peak=peak, extraction=report.extraction_status))


def limits(args) -> list[str]:
    rows = []
    # A fresh interpreter per case: a fork of a process that imported egglog hangs when it frees an
    # e-graph (egglog's thread pool does not survive the fork).
    context = multiprocessing.get_context("spawn")
    cases = (args.node_limit, args.time_limit, args.short_time)
    for index, (label, _, _, node_limit, time_limit, _) in enumerate(limit_cases(*cases)):
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_limit_case, args=(index, cases, send))
        process.start()
        send.close()
        r = receive.recv()
        process.join()
        rows.append([label, r["nodes"], f"{node_limit:,}", f"{r['enodes']:,}", f"{r['enodes'] / node_limit:.3f}",
                     f"{time_limit:g}", f"{r['wall']:.2f}", f"{r['wall'] / time_limit:.2f}", r["stop"],
                     f"{r['before']:.0f}", f"{r['peak']:.0f}", r["extraction"]])
        print(*rows[-1], sep="\t", flush=True)
    return [
        "`optimize()` (ILP extraction; the roofline cost model unless the case says gpu) per case, in a process "
        "of its own. *wall* is the whole call, the check of the result (building and running it against the "
        "input) included, but the final build (folding the result's parameters) and releasing the e-graph, "
        "which the time limit leaves out. *RSS before* is the process's "
        "memory once the model and its parameters are built, *peak RSS* its high-water mark while optimizing "
        "(Linux's VmHWM, reset after building; the ILP runs in a child process: the larger of the two peaks).",
        table(["case", "graph nodes", "node_limit", "e-nodes", "e-nodes / limit", "time_limit (s)", "wall (s)",
               "wall / limit", "stop", "RSS before (MB)", "peak RSS optimizing (MB)", "extraction"], rows),
    ]


# --- 3. overhead against raw egglog --------------------------------------------------------------

T = TensorType((4, 4), "float32")

# The ring rules written directly in egglog over gsl_eq's encoding (`(Op_add_2 form x y)`, the form
# holding attributes and types). Every operand of the benchmark graphs has one type, so every add
# (multiply) has one form, a new node takes the matched node's, and the distributivity guards ("one
# shape") always hold.
RAW_RULES = {  # (query, the term the matched e is unioned with)
    "add_commutative": ("(= e (ADD a x y))", "(ADD a y x)"),
    "mul_commutative": ("(= e (MUL a x y))", "(MUL a y x)"),
    "add_associative": ("(= e (ADD a i z)) (= i (ADD b x y))", "(ADD a x (ADD a y z))"),
    "add_associative_left": ("(= e (ADD a x i)) (= i (ADD b y z))", "(ADD a (ADD a x y) z)"),
    "mul_associative": ("(= e (MUL a i z)) (= i (MUL b x y))", "(MUL a x (MUL a y z))"),
    "mul_associative_left": ("(= e (MUL a x i)) (= i (MUL b y z))", "(MUL a (MUL a x y) z)"),
    "mul_distributes": ("(= e (MUL a x i)) (= i (ADD b y z))", "(ADD b (MUL a x y) (MUL a x z))"),
    "mul_factors": ("(= e (ADD a m1 m2)) (= m1 (MUL b x y)) (= m2 (MUL c x z))", "(MUL b x (ADD a y z))"),
}


def mixed_chain(ops: int, inputs: int = 6, seed: int = 0) -> Graph:
    """A chain of adds and multiplies of one shape, each reading an input: ring rules everywhere."""
    import random

    rng = random.Random(seed)
    xs = [Node.var(f"x{k}", T) for k in range(inputs)]
    h = xs[0]
    for _ in range(ops):
        h = Node.call(rng.choice(["relax.add", "relax.multiply"]), [h, rng.choice(xs)])
    return Graph(xs, [h])


OVERHEAD_CASES = [
    ("16-term sum, add_commutative + add_associative", lambda: ac_sum(16).graph,
     lambda: [rules.add_commutative(), rules.add_associative()], 5),
    ("mixed add/multiply chain of 40 ops, ring()", lambda: mixed_chain(40), rules.ring, 6),
]


def grow_raw(graph: Graph, names: list[str], iterations: int) -> tuple[float, list[int]]:
    """The rules written directly in egglog over gsl_eq's encoding, one ``run`` per iteration."""
    eg = EGraph()
    eg.add_graph(graph)
    add, mul = eg.declare(Kind.CALL, "relax.add", 2), eg.declare(Kind.CALL, "relax.multiply", 2)
    program = "\n".join(f"(rule ({RAW_RULES[n][0]}) ((union e {RAW_RULES[n][1]})) :ruleset raw)" for n in names)
    eg.run("(ruleset raw)\n" + program.replace("ADD", add).replace("MUL", mul))
    sizes, start = [], time.perf_counter()
    for _ in range(iterations):
        eg.run("(run raw 1)")
        sizes.append(eg.size())
    return time.perf_counter() - start, sizes


def grow_gsl_eq(graph: Graph, rule_list, iterations: int, fast: bool = True) -> tuple[float, list[int], int]:
    """gsl_eq's runner with its limits out of reach; returns the time, the e-nodes after each
    iteration and how many iterations were fast (``fast=False``: every one controlled)."""
    runner = Runner(graph, rule_list, node_limit=10**9, iter_limit=iterations, time_limit=10**6,
                    match_limit=10**9, multi_match_limit=10**9, fast=fast)
    report = runner.run()
    return report.total_time, [it.enodes for it in report.iterations], sum(it.fast for it in report.iterations)


def overhead(args) -> list[str]:
    rows = []
    for label, graph, group, iterations in OVERHEAD_CASES:
        names = [r.name for r in group()]
        raw, fast, controlled = [], [], []
        for _ in range(3):  # interleaved, so that a slow patch of the machine does not fall on one side only
            raw.append(grow_raw(graph(), names, iterations))
            fast.append(grow_gsl_eq(graph(), group(), iterations))
            controlled.append(grow_gsl_eq(graph(), group(), iterations, fast=False))
        sizes = raw[0][1]
        assert all(r[1] == sizes for r in raw + fast + controlled), (label, raw[0][1], fast[0][1], controlled[0][1])
        t_raw = min(t for t, _ in raw)
        t_fast, t_controlled = min(r[0] for r in fast), min(r[0] for r in controlled)
        rows.append([label, len(graph()), iterations, f"{sizes[-1]:,}", f"{t_raw:.3f}", f"{t_fast:.3f}",
                     f"{t_fast / t_raw:.2f}", f"{min(r[2] for r in fast)} of {iterations}", f"{t_controlled:.3f}",
                     f"{t_controlled / t_raw:.2f}"])
        print(*rows[-1], sep="\t", flush=True)
    return [
        "The same rules grow the same graph for the same iterations, applying every match every iteration "
        "(gsl_eq's limits set out of reach), as rules written directly in egglog over the same encoding "
        "(one `run` per iteration) and through gsl_eq's runner, twice: as it runs (its iterations are *fast* while "
        "the limits are far: egglog records the keys of the matches, or nothing when every key a match could have "
        "is decided, Python decides the new ones, and one egglog call applies every match of a decided key; the "
        "e-graph is pushed first, to be popped back should a rule pass its limit or the e-graph the node limit) and "
        "with every iteration *controlled* (`Runner(fast=False)`: what an iteration is once a limit binds: every "
        "source e-matched once into a worklist, the apply rules consuming it within each rule's budget). The e-node "
        "count after every iteration is asserted equal for all three. Times exclude loading; minimum of 3 "
        "interleaved runs.",
        table(["case", "graph nodes", "iterations", "e-nodes", "raw egglog (s)", "gsl_eq (s)", "gsl_eq / egglog",
               "fast iterations", "gsl_eq controlled (s)", "controlled / egglog"], rows),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--node-limit", type=int, default=50_000)
    parser.add_argument("--iter-limit", type=int, default=15)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--short-time", type=float, default=10.0, help="time limit of the time-bound cases")
    parser.add_argument("--parts", default="growth,limits,overhead")
    args = parser.parse_args()
    chosen = args.parts.split(",")
    done = {name: part(args) for name, part in [("limits", limits), ("growth", growth), ("overhead", overhead)]
            if name in chosen}
    for name, section in (("growth", "saturation"), ("limits", "saturation-limits"), ("overhead", "saturation-overhead")):
        if name in done:
            write_section(section, "\n\n".join([f"## Saturation: {name} (benchmarks/saturation.py)",
                                                 f"Machine: {machine()}.", *done[name]]))


if __name__ == "__main__":
    main()

"""The ``gsl-eq`` command."""

from __future__ import annotations

import argparse
import time
from typing import Callable, Sequence

import numpy as np
from rich.console import Console
from rich.table import Table

from . import models
from .graph import from_relax, to_relax
from .workload import Workload

DEFAULT_MODELS: dict[str, Callable[[], Workload]] = {
    "transformer-encoder": models.transformer_encoder_layer,
    "inception-block": models.inception_block,
    "resnet-bottleneck": models.resnet_bottleneck,
}


def demo(console: Console) -> int:
    """Load each embedded model through the graph bridge and check it numerically."""
    table = Table(title="gsl_eq: Relax -> graph -> Relax on the embedded models")
    table.add_column("model", no_wrap=True)
    for column in ("nodes", "calls", "most frequent op", "round trip", "max |diff|", "time"):
        table.add_column(column, justify="right" if column in ("nodes", "calls", "time") else "left")
    failures = 0
    for name, build in DEFAULT_MODELS.items():
        start = time.perf_counter()
        wl = build()
        back = Workload(to_relax(from_relax(wl.mod)), wl.params).fold_params()
        inputs = wl.random_inputs()
        diff = float(np.max(np.abs(np.asarray(back(**inputs)) - np.asarray(wl(**inputs)))))
        ok = diff <= 1e-5
        failures += not ok
        counts = wl.graph.op_counts()
        top = ", ".join(f"{op.removeprefix('relax.')} ×{n}" for op, n in counts.most_common(1))
        table.add_row(
            name, str(len(wl.graph)), str(sum(counts.values())), top,
            "[green]equal[/]" if ok else "[red]DIFFERS[/]", f"{diff:.1e}", f"{time.perf_counter() - start:.2f}s",
        )
    console.print(table)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gsl-eq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run gsl_eq on the embedded default models with a numeric check")
    args = parser.parse_args(argv)
    console = Console()
    if args.command == "demo":
        return demo(console)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

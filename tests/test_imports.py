"""Data flows one way: each package of gsl_eq imports only the packages before it in the pipeline,
and no two modules import each other, for type checking either."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import gsl_eq

ROOT = Path(gsl_eq.__file__).parent
#: The pipeline, first to last, in ten layers: a package may import the ones before it (within a layer
#: too, in the order listed). The language (frontend) comes before every executor; saturate mode
#: (egraph) reuses greedy mode's matcher and builder. The Ray engine (run.cluster) knows nothing of
#: gsl_eq: the schedule database, compare_orderings, sweeps and the benchmark suite run their tasks on it.
LAYERED = [
    ("errors", "run"),                       # what every layer shares: errors, limits, processes, Ray
    ("graph",),                              # the computation graph and its bridge to Relax
    ("measure", "workload", "models"),       # kernels timed, the workload built and run, models to try
    ("frontend", "rules"),                   # the GSL language and the rule library
    ("greedy", "soundness"),                 # greedy mode, and rules checked numerically
    ("proof",),                              # the steps from input to result, replayed and checked
    ("egraph",),                             # saturate mode
    ("extract", "cost"),                     # extraction and the cost models that price it
    ("pages",),                              # reports
    ("optimizer", "transform", "orderings"),  # what users call
    ("sweeps", "cli"),                       # many calls at once, and the command line
]
LAYERS = [package for layer in LAYERED for package in layer]


def module_name(path: Path) -> tuple[str, ...]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports(path: Path) -> set[tuple[str, ...]]:
    """The gsl_eq modules (dotted parts below gsl_eq) ``path`` imports, wherever in it: at run time, in a
    function, or for type checking only (a type names its module as much as a call does)."""
    tree = ast.parse(path.read_text())
    type_only: set[int] = set()
    here = module_name(path)
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            target = base + tuple(node.module.split(".")) if node.module else base
            found |= {target + (alias.name,) for alias in node.names} if not node.module else {target}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
            found |= {tuple(name.split(".")[1:]) for name in names if name and name.split(".")[0] == "gsl_eq"}
    return {target for target in found if target and target != here}


MODULES = {module_name(path): imports(path) for path in ROOT.rglob("*.py") if path.name != "__init__.py"
           or path.parent != ROOT}


def test_every_package_is_in_the_pipeline():
    top = {name[0] for name in MODULES}
    assert top <= set(LAYERS), f"place {sorted(top - set(LAYERS))} in LAYERS"


def test_each_package_imports_only_packages_before_it():
    wrong = sorted(f"{'.'.join(module)} imports gsl_eq.{'.'.join(target)}"
                   for module, targets in MODULES.items() for target in targets
                   if target[0] in LAYERS and LAYERS.index(target[0]) > LAYERS.index(module[0]))
    assert not wrong, "\n".join(wrong)


def test_the_language_imports_no_executor():
    frontend = {target for module, targets in MODULES.items() if module[0] == "frontend" for target in targets}
    assert not {target[0] for target in frontend} & {"greedy", "egraph", "extract", "optimizer", "sweeps"}
    assert ("run", "cluster") not in frontend


def test_the_language_names_no_executor_even_to_import_it_later():
    for path in (ROOT / "frontend").rglob("*.py"):
        text = path.read_text()
        assert "importlib" not in text and "gsl_eq.greedy" not in text, path


@pytest.mark.slow
@pytest.mark.parametrize("imports", ["from gsl_eq import Subst, Workload, op, pat",
                                     "from gsl_eq.frontend import Subst, op, pat; from gsl_eq.workload import Workload"])
def test_calling_a_rule_runs_greedy_mode_however_the_language_was_imported(imports):
    """Greedy mode is the default executor the package wires in, loaded on a rule's first call."""
    script = f"""{imports}
import sys
from tvm import relax
assert "gsl_eq.greedy" not in sys.modules
x = pat.Wildcard()
v = relax.Var("x", relax.TensorType((2, 3), "float32"))
wl = Workload.from_expr(relax.op.nn.relu(relax.op.nn.relu(v)), {{"x"}})
print(dict(Subst(op.ReLU(op.ReLU(x)), op.ReLU(x))(wl).graph.op_counts()))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{'relax.nn.relu': 1}"


def test_only_the_engine_imports_ray():
    """Ray is an extra: only gsl_eq.run.cluster imports it, and only inside its functions (import gsl_eq stays light)."""
    importers = set()
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(name.split(".")[0] == "ray" for name in names):
                importers.add(module_name(path))
                assert not any(node is top for top in tree.body), f"{path} imports ray at module level"
    assert importers == {("run", "cluster")}


def test_no_two_modules_import_each_other():
    def resolve(target: tuple[str, ...]) -> tuple[str, ...]:  # "from . import attr" names a module; a class is in one
        while target and target not in MODULES:
            target = target[:-1]
        return target

    edges = {module: {resolve(t) for t in targets} - {()} for module, targets in MODULES.items()}
    cycles = []
    state: dict = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(".".join(m) for m in path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)


SHADOWING = """
import functools, importlib, sys
import gsl_eq
modules = {modules!r}
def touch_exports():
    for name in gsl_eq.__all__:
        getattr(gsl_eq, name)
def import_modules(order):
    for dotted in order:
        exec(f"import {{dotted}}")
        reached = functools.reduce(getattr, dotted.split(".")[1:], gsl_eq)
        assert reached is sys.modules[dotted], f"{{dotted}} is {{reached!r}}, not the module"
{steps}
print("ok")
"""


@pytest.mark.slow
@pytest.mark.parametrize("steps", ["touch_exports(); import_modules(modules)",
                                   "import_modules(modules[::-1]); touch_exports(); import_modules(modules)"])
def test_no_exported_name_shadows_a_module(steps):
    """No import trap: with every exported name touched, before or after, every module of the package
    imports with ``import gsl_eq.a.b`` and ``gsl_eq.a.b`` reached by attributes is that module."""
    modules = sorted("gsl_eq." + ".".join(module) for module in MODULES)
    script = SHADOWING.format(modules=modules, steps=steps)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]

"""Models by name or file, as the command line, the benchmark suite and sweeps take them.

    model_names()                       # every model built by name from its defaults
    load_model("nasrnn", quick=True)    # the benchmark suite's small NasRNN (QUICK)
    load_model("my_model.py")           # a file defining workload, mod, or model + example_inputs
    load_model("bert.opt.py")           # a module gsl-eq optimize wrote (Workload.save), parameters beside it
    load_model("resnet.onnx", bind={"batch": 1})   # an ONNX file, its symbolic dimensions bound
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable

from ..errors import GslEqError
from ..workload import Workload

#: The benchmark suite's small versions (``gsl-eq bench --quick``, ``gsl-eq sweep --quick``): the
#: same structure as the published models, fewer layers, smaller images. Models not listed are
#: small at their defaults.
QUICK: dict[str, dict[str, Any]] = {
    "bert": dict(layers=2, seq=32, hidden=256, heads=4, ffn=1024),
    "nasrnn": dict(steps=2, hidden=128),
    "resnext50": dict(image_size=64, layers=(1, 1, 1, 1)),
    "nasnet_a": dict(image_size=64, cells=1),
    "inception_v3": dict(image_size=139, modules=(1, 1, 1)),
    "squeezenet": dict(image_size=64),
    "vgg19": dict(image_size=32, fc=256),
    "resnet50": dict(image_size=64, layers=(1, 1, 1, 1)),
    "mobilenet_v2": dict(image_size=64, blocks=(1, 1, 2, 1, 1, 1, 1)),
    "hf_bert": dict(layers=2, hidden=128, heads=2, seq=32),
    "hf_gpt2": dict(layers=2, hidden=128, heads=2, seq=32),
}


def model_registry() -> dict[str, Callable[..., Workload]]:
    """Every model built by name: each function of :mod:`gsl_eq.models` that builds a workload from
    its default arguments, and the small Hugging Face encoders; sorted by name."""
    from .. import models

    known: dict[str, Callable[..., Workload]] = {}
    for name in models.__all__:
        build = getattr(models, name)
        if (inspect.isfunction(build) and not name.endswith("_module")
                and all(p.default is not p.empty for p in inspect.signature(build).parameters.values())):
            known[name] = build
    known.update({name: functools.partial(models.hf_encoder, name) for name in models.HF_ENCODERS})
    return dict(sorted(known.items()))


def model_names() -> tuple[str, ...]:
    """The names :func:`load_model` builds."""
    return tuple(model_registry())


#: How TVMScript's printer begins a module's text (its imports, commented out).
SCRIPT_HEADER = "# from tvm.script import"


#: The suffixes of the model files :func:`load_model` reads: Python (a model, or a saved module) and ONNX.
MODEL_SUFFIXES = (".py", ".onnx")


def is_model_file(spec: str) -> bool:
    """Whether ``spec`` names a model file (a ``.py`` or ``.onnx`` suffix) rather than a model."""
    return Path(spec).suffix in MODEL_SUFFIXES


def check_model(spec: str) -> str:
    """``spec`` checked to be a model name or an existing ``.py`` or ``.onnx`` file, with nothing built: a
    :class:`~gsl_eq.errors.GslEqError` names an unknown model or a missing file."""
    if is_model_file(spec):
        if not Path(spec).is_file():
            raise GslEqError(f"{spec}: no such file")
        return spec
    names = model_names()
    if spec not in names:
        raise GslEqError(f"unknown model {spec!r}; choose one of {', '.join(names)} or give a .py or .onnx file")
    return spec


def load_model(spec: str, quick: bool = False, bind: dict[str, int] | None = None) -> Workload:
    """A model by name (``quick``: the small version of :data:`QUICK`, where there is one), an ONNX
    file (``.onnx``), or a Python file: TVMScript as :meth:`Workload.save` (and ``gsl-eq optimize -o``)
    writes it, with its parameters beside it, or a file defining ``workload`` (a Workload), ``mod`` (an
    IRModule, its parameters kept as runtime inputs; a file defining one IRModule under another name
    too), or ``model`` (a torch module) with ``example_inputs``. ``bind`` sets the symbolic dimensions
    of an imported model (an ONNX file, a file's ``mod`` or ``model``) to sizes."""
    import runpy

    import tvm

    if Path(spec).suffix == ".onnx":
        check_model(spec)
        return Workload.from_onnx(spec, bind=bind)
    if is_model_file(spec):
        check_model(spec)
        if Path(spec).read_text().startswith(SCRIPT_HEADER):
            return Workload.load(spec)
        scope = runpy.run_path(str(spec))
        modules = [v for k, v in scope.items() if isinstance(v, tvm.IRModule) and not k.startswith("_")]
        if isinstance(scope.get("workload"), Workload):
            return scope["workload"]
        if isinstance(scope.get("mod"), tvm.IRModule):
            return Workload.from_module(scope["mod"], bind=bind)
        if scope.get("model") is not None and "example_inputs" in scope:
            return Workload.from_torch(scope["model"], scope["example_inputs"], bind=bind)
        if len(modules) == 1:
            return Workload.from_module(modules[0], bind=bind)
        raise GslEqError(f"{spec} defines none of: workload (a gsl_eq.Workload), mod (a tvm.IRModule, or "
                         "one IRModule by another name), model (a torch.nn.Module) with example_inputs")
    check_model(spec)
    return model_registry()[spec](**(QUICK.get(spec, {}) if quick else {}))

"""The workload: a Relax module together with its parameters, and everything that reads, builds or
writes one.

- :mod:`.workload`: :class:`Workload` itself (folding parameter computations, building, running);
- :mod:`.importers`: models from PyTorch, ``torch.export`` and ONNX as a module and its weights;
- :mod:`.buildable`, :mod:`.build_time`, :mod:`.cpu_build`: what TVM can build, how long a build
  takes, how a workload is built for the CPU;
- :mod:`.script_safety`: TVMScript files read without running code written in them;
- :mod:`.portable`, :mod:`.torch_runner`, :mod:`.torch_ops`: a workload as a JSON graph and its
  arrays, run op by op with PyTorch (the runner needs neither gsl_eq nor TVM).

Example::

    from gsl_eq import Workload
    wl = Workload.from_torch(model, (torch.randn(1, 3, 224, 224),))
"""

from .workload import Derived, FoldWarning, Unfolded, Workload, params_path, random_array, write_arrays

__all__ = ["Derived", "FoldWarning", "Unfolded", "Workload", "params_path", "random_array", "write_arrays"]

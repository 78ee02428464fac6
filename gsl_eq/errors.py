"""Exceptions raised by gsl_eq.

Every error names what is wrong and where: the binding of a module, the
parameter of a workload, or the line of a rule.
"""


class GslEqError(Exception):
    """Base class of every error gsl_eq raises on purpose."""


class UnsupportedModuleError(GslEqError):
    """A Relax module holds a construct the graph bridge does not handle."""


class WorkloadError(GslEqError, ValueError):
    """A workload's parameters or inputs do not fit its module."""


class ArgumentError(GslEqError, TypeError):
    """A function of gsl_eq was given a value of a kind it does not take."""

"""How long building a module and running it once takes (a fold of parameter computations), predicted
before it is done so that it can be kept within a time limit.

It grows with the module's op calls (building) and with their roofline seconds
(:func:`~gsl_eq.graph.work.roofline_seconds`, running). A build that runs once (a fold, a check) gets LLVM's
optimizations only where running unoptimized code would cost more than optimizing it (:func:`optimized`).
:class:`BuildRates` learns from the builds timed in this process:

    rates = BuildRates(once=0.1, per_call={False: 0.002, True: 0.01}, per_roofline_second={False: 50, True: 10})
    seconds = rates.predicted(calls=23, roofline=1.3)
    rates.record(23, 1.3, built=0.13, ran=2.4)
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: A build that runs once gets LLVM's optimizations where its roofline seconds pass this many per call:
#: unoptimized code runs many times slower than optimized code, but optimizing adds building time to every
#: call (convolutions most), so a build whose calls are cheap finishes sooner unoptimized and one whose
#: calls are heavy (large weight products that TASO's rules fold) sooner optimized.
OPTIMIZED_ONCE_ABOVE = 0.00075
#: How many timed rates of each kind are remembered.
REMEMBERED_RATES = 8


def optimized(calls: int, roofline: float) -> bool:
    """Whether a build of ``calls`` op calls taking ``roofline`` seconds by the roofline, to run once,
    gets LLVM's optimizations (:data:`OPTIMIZED_ONCE_ABOVE`)."""
    return roofline > OPTIMIZED_ONCE_ABOVE * calls


@dataclass
class BuildRates:
    """What one kind of build that runs once costs: ``once`` seconds, then per op call (building) and per
    roofline second (running), each by whether it is optimized (:func:`optimized`). A prediction takes the
    slower of each given rate and the rate of the last few builds timed (:meth:`record`), their seconds over
    their work: the given rates are upper ends of what was measured, and a small build, whose fixed cost
    looks like a high rate per call, weighs as little as its work (one of a few calls, weighed as much as
    a large one, predicted the next large fold many times longer than it took)."""

    once: float
    per_call: dict[bool, float]
    per_roofline_second: dict[bool, float]
    timed: dict[tuple[str, bool], list[tuple[float, float]]] = field(default_factory=dict)  # (work, seconds)

    def predicted(self, calls: int, roofline: float) -> float:
        """The seconds building and running once a module of ``calls`` op calls is predicted to take."""
        fast = optimized(calls, roofline)
        build = max(self.per_call[fast], self._rate("build", fast))
        run = max(self.per_roofline_second[fast], self._rate("run", fast))
        return self.once + build * calls + run * roofline

    def record(self, calls: int, roofline: float, built: float, ran: float) -> None:
        """Remember a timed build (``built`` seconds, ``once`` of them its own) and run (``ran``) of such a
        module."""
        fast = optimized(calls, roofline)
        for kind, work, seconds in (("build", calls, max(built - self.once, 0.0)), ("run", roofline, ran)):
            self.timed[kind, fast] = [*self.timed.get((kind, fast), []), (work, seconds)][-REMEMBERED_RATES:]

    def _rate(self, kind: str, fast: bool) -> float:
        """The seconds per unit of work of the remembered timings of ``kind`` (0 with none)."""
        timed = self.timed.get((kind, fast), [])
        work = sum(w for w, _ in timed)
        return sum(s for _, s in timed) / work if work > 0 else 0.0

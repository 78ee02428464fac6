"""Fusion in the exact extractor's programs: an e-node that runs inside its child's kernel.

Under a cost model that fuses (the gpu model's epilogues, :class:`~.extractors.ENodeCost`'s
``opens`` and ``fusible``), what a chosen e-node costs depends on the others: a relu costs
a kernel of its own unless the e-node chosen for its input opens a kernel and the relu is
that input's only reader. Both programs (:mod:`.ilp`, :mod:`.cpsat`) price this exactly
with one variable per :class:`FusionTerm`, ``fused``, whose rows say:

- ``fused <= chosen(e-node)``, summed over the e-node's terms: at most one saving each;
- ``fused <= sum of chosen(producers)``: the input's chosen e-node opens a kernel;
- ``fused + sum of chosen(rivals in one e-class) <= 1``, per e-class of other readers: no
  other chosen e-node reads the input (the e-nodes of one e-class exclude each other, so
  one row per e-class is as tight as one per e-node, and fewer);

and its objective coefficient is minus the saving. An input that is a root (the caller reads
it) gets no term.
"""

from __future__ import annotations

from dataclasses import dataclass

from .extractors import Indexed


@dataclass(frozen=True)
class FusionTerm:
    """E-node ``node`` saves ``saving`` when fused into the kernel of its child class ``child``."""

    node: int
    child: int
    saving: float
    producers: tuple[int, ...]  # the child class's kept e-nodes that open a kernel
    rivals: tuple[tuple[int, ...], ...]  # the child's other kept readers, grouped by e-class


def fusion_terms(graph: Indexed, nodes: list[int], roots: list[int]) -> list[FusionTerm]:
    """The fusion terms among the kept e-nodes ``nodes``, in e-node order."""
    if not graph.fusible:
        return []
    kept = set(nodes)
    root_set = set(roots)
    terms = []
    for node in nodes:
        for child, saving in graph.fusible.get(node, ()):
            if saving <= 0 or child in root_set:
                continue
            producers = tuple(n for n in graph.class_nodes[child] if n in kept and n in graph.opens)
            if not producers:
                continue
            own = graph.node_class[node]
            by_class: dict[int, list[int]] = {}
            for reader in graph.parents[child]:
                if reader in kept and graph.node_class[reader] != own:
                    by_class.setdefault(graph.node_class[reader], []).append(reader)
            terms.append(FusionTerm(node, child, saving, producers, tuple(tuple(r) for r in by_class.values())))
    return terms


def max_saving(graph: Indexed, node: int) -> float:
    """The largest saving e-node ``node`` may take: its cost can be that much lower."""
    return max((saving for _, saving in graph.fusible.get(node, ())), default=0.0)


def taken(graph: Indexed, terms: list[FusionTerm], chosen: set[int], roots: list[int]) -> list[bool]:
    """Per term, whether a solution choosing the e-nodes ``chosen`` (one per used e-class) takes
    it: the largest valid saving of each e-node, as :func:`~.extractors.dag_cost` prices it."""
    readers: dict[int, int] = dict.fromkeys(roots, 1)
    for node in chosen:
        for child in graph.node_children[node]:
            readers[child] = readers.get(child, 0) + 1
    best: dict[int, int] = {}
    for k, term in enumerate(terms):
        if (term.node in chosen and readers.get(term.child) == 1 and any(p in chosen for p in term.producers)
                and (term.node not in best or terms[best[term.node]].saving < term.saving)):
            best[term.node] = k
    on = set(best.values())
    return [k in on for k in range(len(terms))]

"""Models whose parameter-only graph TVM cannot build: folding leaves that part and says so,
optimize() works in both modes, and the legalizing rule makes them buildable (with the library's
rule sets, which legalize, the results build as returned: tests/models/test_ids_only.py)."""

import numpy as np
import pytest
import tvm

from gsl_eq import FoldWarning, Workload, optimize, rules
from gsl_eq.errors import WorkloadError
from gsl_eq.greedy import greedy
from gsl_eq.models import hf_gpt2, hf_llama

pytestmark = pytest.mark.slow

MODELS = {
    "gpt2_ids_only": lambda: hf_gpt2(layers=1, hidden=64, heads=2, seq=16, ids_only=True),
    "llama": lambda: hf_llama(layers=1, hidden=64, heads=2, seq=16),
}


def legalized(wl: Workload) -> Workload:
    """The workload with rules.legalize() applied: TVM can build it."""
    return greedy(wl, rules.legalize(), fold_params=False).workload.fold_params()


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    return MODELS[request.param]()


def test_folding_leaves_the_boolean_scan_and_says_so(model, monkeypatch):
    builds = []
    build = Workload.build
    monkeypatch.setattr(Workload, "build", lambda self, *a, **k: builds.append(self) or build(self, *a, **k))
    with pytest.warns(FoldWarning, match="relax.cumsum .* not folded"):
        folded = model.fold_params()
    assert len(builds) == 1  # TVM's verdict per kind of call, probed apart: the rest folds in one build
    # the scan and the comparison of its values: booleans TVM's code generator rejects
    assert [u.op for u in folded.unfolded] == ["relax.cumsum", "relax.equal"]
    assert all("bool" in u.output and u.reason for u in folded.unfolded)
    assert len(folded.params) >= 1 and len(folded.graph) < len(model.graph)  # the rest was folded
    # the index arrays the scan's values are gathered by (a tuple of them) fold too
    assert "relax.arange" in {n.op for n in model.graph.rpo()} - {n.op for n in folded.graph.rpo()}
    assert model.unfolded == ()  # the input is untouched
    with pytest.raises(WorkloadError, match=r"TVM cannot build this module: .* rules\.legalize\(\)"):
        model.build()  # as it is, TVM cannot compile the model: said clearly, TVM's error chained
    with pytest.raises(WorkloadError, match=r"TVM cannot build this module \(relax\.cumsum -> .* not folded"):
        folded.build()


def test_the_legalizing_rules_make_it_buildable(model):
    legal = legalized(model)
    assert legal.unfolded == ()
    assert np.all(np.isfinite(legal(**model.random_inputs(seed=3))))


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_optimize_works_in_both_modes_and_reports_what_was_not_folded(model, mode):
    before = model.mod.script()
    legalizing = {r.name for r in rules.legalize()}
    without_legalizing = [r for r in rules.default() if r.name not in legalizing]
    result = optimize(model, without_legalizing, mode=mode, time_limit=60)
    assert any("relax.cumsum" in note and "not folded" in note for note in result.report.notes)
    assert tvm.relax.analysis.check_well_formed(result.mod)
    assert model.mod.script() == before
    # evaluated the same way as the original: both made buildable by the legalizing rules
    inputs = model.random_inputs(seed=5)
    expected = legalized(model)(**inputs)
    got = legalized(result.workload)(**inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)

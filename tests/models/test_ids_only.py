"""GPT-2 and Llama called the usual way, with ids only, as a new user imports them: at sizes no
other test uses, in both modes, with the README's rule combinations, the optimized workload
builds as returned and computes what PyTorch computes."""

import numpy as np
import pytest
import tvm

from gsl_eq import optimize, rules
from gsl_eq.models.hf import _import, hf_gpt2_module, hf_llama_module

pytestmark = pytest.mark.slow

MODELS = {
    "gpt2": lambda: hf_gpt2_module(layers=2, hidden=24, heads=2, seq=9, seed=3, ids_only=True),
    "llama": lambda: hf_llama_module(layers=1, hidden=40, heads=5, seq=7, seed=4),
}
RULE_SETS = {
    "default+algebraic": lambda: [*rules.default(), *rules.algebraic()],
    "tensat+default": lambda: [*rules.tensat(), *rules.default()],
}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    """(workload, input_ids, PyTorch's output)."""
    import torch

    module, (ids,) = MODELS[request.param]()
    with torch.no_grad():
        expected = module(ids).numpy()
    return _import(module, (ids,)), ids.numpy(), expected


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
@pytest.mark.parametrize("rule_set", list(RULE_SETS))
def test_the_result_builds_as_returned_and_equals_pytorch(model, rule_set, mode):
    wl, ids, expected = model
    chosen = RULE_SETS[rule_set]()
    if mode == "greedy":  # greedy matching needs connected sources: TASO's disconnected pairs are for saturation
        chosen = [rule for rule in chosen if rule.connected]
    before = wl.mod.script()
    result = optimize(wl, chosen, mode=mode, node_limit=10_000, time_limit=60)
    assert result.report.fallbacks == []  # extraction chose a buildable form by itself
    assert result.workload.unfolded == ()  # the boolean scan was legalized and folded
    assert result.report.calls_after < result.report.calls_before
    assert tvm.relax.analysis.check_well_formed(result.mod)
    np.testing.assert_allclose(result.workload(input_ids=ids), expected, rtol=1e-4, atol=1e-4)
    assert wl.mod.script() == before

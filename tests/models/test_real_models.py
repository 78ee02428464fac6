"""Real architectures nobody here wrote (small Hugging Face models from configurations, random
weights) and the zoo at small sizes: each imports, matches PyTorch where it comes from it, and
optimizes in both modes with equal outputs. GPT-2 and Llama with ids only: test_unfoldable.py."""

import numpy as np
import pytest
import tvm

from gsl_eq import optimize, rules
from gsl_eq.models import HF_ENCODERS, hf_bert, hf_encoder, hf_encoder_module, hf_gpt2, zoo_model
from tests.models.test_zoo import SMALL
from tests.conftest import assert_same_outputs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=HF_ENCODERS)
def encoder(request):
    return request.param, hf_encoder(request.param)


def test_it_imports_and_matches_pytorch(encoder):
    import torch

    name, wl = encoder
    model, (example,) = hf_encoder_module(name)
    with torch.no_grad():
        expected = model(example).numpy()
    np.testing.assert_allclose(wl(inputs=example.numpy()), expected, rtol=1e-4, atol=1e-4)


def check_optimizes(wl, mode: str) -> None:
    """optimize() in ``mode`` gives a well-formed module, no costlier, with the same outputs; wl unchanged."""
    before = wl.mod.script()
    chosen = rules.default() if mode == "greedy" else [*rules.default(), *rules.algebraic()]
    result = optimize(wl, chosen, mode=mode, node_limit=20_000, time_limit=60)
    assert tvm.relax.analysis.check_well_formed(result.mod)
    assert result.report.cost_after <= result.report.cost_before
    assert_same_outputs(wl, result.workload, rtol=1e-4, atol=1e-4)
    assert wl.mod.script() == before


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
def test_it_optimizes_with_equal_outputs(encoder, mode):
    check_optimizes(encoder[1], mode)


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_zoo_model_optimizes_with_equal_outputs(name, mode):
    check_optimizes(zoo_model(name, **SMALL[name][0]), mode)


@pytest.mark.parametrize("mode", ["greedy", "saturate"])
@pytest.mark.parametrize("build", [hf_bert, hf_gpt2], ids=["bert", "gpt2"])
def test_hf_bert_and_gpt2_optimize_with_equal_outputs(build, mode):
    check_optimizes(build(layers=2, hidden=64, heads=4, seq=16), mode)

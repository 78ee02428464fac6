"""The schedule database: each kernel scheduled by the best of its samples, measured once, reused
from disk; what it builds computes what TVM's default build computes."""

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from gsl_eq.measure.schedule_db import ScheduleDatabase


def module() -> tvm.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((32, 64), "float32"))
    w = relax.Var("w", relax.TensorType((64, 64), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, w)))
            out = bb.emit_output(relax.op.add(relax.op.matmul(h, w), x))
        bb.emit_func_output(out)
    return bb.get()


def run(executable, inputs):
    return relax.VirtualMachine(executable, tvm.cpu())["main"](*inputs).numpy()


def inputs_and_expected(mod: tvm.IRModule, seed: int):
    """Random inputs of ``module()`` and its outputs on them under TVM's default build."""
    rng = np.random.default_rng(seed)
    inputs = [tvm.runtime.tensor(rng.uniform(-1, 1, s).astype("float32")) for s in ((32, 64), (64, 64))]
    return inputs, run(relax.build(mod, target="llvm"), inputs)


@pytest.mark.slow
def test_kernels_are_measured_once_then_reused_from_disk(tmp_path):
    mod = module()
    inputs, expected = inputs_and_expected(mod, seed=0)

    first = ScheduleDatabase(samples=2, cache_dir=tmp_path, number=2, repeat=1)
    np.testing.assert_allclose(run(first.build(mod), inputs), expected, rtol=1e-5, atol=1e-5)
    kernels = [t.dispatched[0] for t in ms.relax_integration.extract_tasks(first.fuse(mod), first.target)]
    assert len(kernels) == 2  # matmul+relu, matmul+add: two distinct kernels
    assert first.measurements >= 2 * len(kernels)  # every sample of every kernel timed

    second = ScheduleDatabase(samples=2, cache_dir=tmp_path, number=2, repeat=1)
    np.testing.assert_allclose(run(second.build(mod), inputs), expected, rtol=1e-5, atol=1e-5)
    assert second.measurements == 0
    assert [second.choice(k) for k in kernels] == [first.choice(k) for k in kernels]
    assert second.measurements == 0


def test_samples_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="samples"):
        ScheduleDatabase(samples=0, cache_dir=tmp_path)


@pytest.mark.slow
def test_tuned_kernels_keep_their_trace_on_disk_and_compute_the_same(tmp_path, capfd):
    # MetaSchedule's own tuner (evolutionary search, builder and runner in worker processes): a
    # few trials per kernel; the winner's trace is cached as JSON and replayed with nothing measured
    mod = module()
    inputs, expected = inputs_and_expected(mod, seed=1)

    tuned = ScheduleDatabase(trials=4, cache_dir=tmp_path, number=2, repeat=1)
    np.testing.assert_allclose(run(tuned.build(mod), inputs), expected, rtol=1e-5, atol=1e-5)
    kernels = tuned.kernels(mod)
    choices = [tuned.choice(k) for k in kernels]
    assert tuned.measurements == len(kernels) and all(c.trace and c.sketch == -1 for c in choices)
    assert len(kernels) > 1 and "[INFO]" not in capfd.readouterr().out  # no tuning run prints its rounds

    again = ScheduleDatabase(trials=4, cache_dir=tmp_path, number=2, repeat=1)
    np.testing.assert_allclose(run(again.build(mod), inputs), expected, rtol=1e-5, atol=1e-5)
    assert [again.choice(k) for k in kernels] == choices and again.measurements == 0
    # draws and tuning are kept apart: a database of draws measures its own
    assert not ScheduleDatabase(samples=1, cache_dir=tmp_path).cached(kernels[0])
    with pytest.raises(ValueError, match="trials"):
        ScheduleDatabase(trials=-1, cache_dir=tmp_path)


def test_a_cached_choice_is_read_without_drawing_again(tmp_path, monkeypatch):
    # Pricing a kernel needs its time only: a second database on the same cache neither draws
    # nor measures (drawing the design space again costs more than the time it looks up).
    db = ScheduleDatabase(samples=2, cache_dir=tmp_path, number=2, repeat=1)
    kernel = db.kernels(module())[0]
    first = db.choice(kernel)
    again = ScheduleDatabase(samples=2, cache_dir=tmp_path, number=2, repeat=1)
    monkeypatch.setattr(again, "_draw", lambda *args: pytest.fail("drew a cached kernel's design space"))
    assert again.choice(kernel) == first and again.measurements == 0


@pytest.mark.slow
def test_a_draw_for_this_cpu_imports_the_cpu_tensor_intrinsics_alone(tmp_path):
    # the CUDA intrinsics' module takes 36 s to import; a fresh interpreter shows what a draw imported,
    # and that the package is left for a later import to run in full
    import subprocess
    import sys

    code = ("import sys\n"
            "from tests.measure.test_schedule_db import module\n"
            "from gsl_eq.measure.schedule_db import ScheduleDatabase\n"
            f"db = ScheduleDatabase(samples=1, cache_dir={str(tmp_path)!r})\n"
            "assert db._draw(db.kernels(module())[0], 1)\n"
            "print(sorted(m.rsplit('.', 1)[-1] for m in sys.modules if m.startswith('tvm.s_tir.tensor_intrin')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    imported = out.split("\n")[-2]
    assert "'x86'" in imported and "'cuda'" not in imported
    assert "'tensor_intrin'" not in imported  # the package itself is left for a later import

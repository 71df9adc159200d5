"""Values explained on the "resume-training" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_resume_training(device):
    run = run_example("resume-training", device)
    reference, n, lr = run["reference"], run["n"], run["LR"]
    resumed_lrs = reference.lrs[run["INTERRUPTED_AFTER"] :]
    assert len(reference.losses) == 64 and n == 32
    assert reference.lrs == [lr] * 3 + [lr / 2] * 3 + [lr / 4] * 2
    # weights only: the schedule starts from the top
    weights_only = run["weights_only"]
    assert weights_only.lrs == [lr] * 3 + [lr / 2]
    variants = run["variants"]
    assert variants["all but the RNG states"].lrs == resumed_lrs
    if device != "cuda":
        assert cuda_parts_reported(run.stdout) == 1

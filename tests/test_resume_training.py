"""Values explained on the "resume-training" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_resume_training(device):
    run = run_example("resume-training", device)
    reference, n, lr = run["reference"], run["n"], run["LR"]
    resumed_lrs = reference.lrs[run["INTERRUPTED_AFTER"] :]
    assert len(reference.losses) == 64 and n == 32
    assert reference.lrs == [lr] * 3 + [lr / 2] * 3 + [lr / 4] * 2
    # weights only: the full loss jumps at the restart, the schedule starts from the top
    weights_only = run["weights_only"]
    assert weights_only.full[0] > 1.5 * run["before"].full[-1]
    assert weights_only.lrs == [lr] * 3 + [lr / 2]
    # a fresh Adam: no state, and a first update of the learning rate for nearly every weight
    assert run["adam_state_at_interruption"] == 4
    assert run["at_lr"].float().mean() > 0.9
    # re-seeding replays the first epoch's shuffling
    assert weights_only.first_rows[0] == reference.first_rows[0]
    # the fix: the resumed run is the uninterrupted one, bit for bit
    assert run["restored"].losses == reference.losses[n:]
    assert run["restored"].full == reference.full[n:]
    deviation = run["deviation"]
    assert deviation["everything restored"] == 0
    assert min(v for k, v in deviation.items() if k != "everything restored") > 0
    assert max(deviation, key=deviation.get) == "weights only"
    variants = run["variants"]
    assert variants["all but the optimizer"].lrs[0] == lr
    assert variants["all but the scheduler"].lrs[0] == resumed_lrs[0]
    assert variants["all but the scheduler"].lrs != resumed_lrs
    assert variants["all but the RNG states"].lrs == resumed_lrs
    if device == "cuda":
        assert run["state_device"].type == "cuda"
        assert run["restored_scaler"].get_scale() == run["scaler"].get_scale() < 65536.0
    else:
        assert cuda_parts_reported(run.stdout) == 1

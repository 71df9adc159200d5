"""What the "tf32-matmul" page does not assert itself: the settings it leaves behind, the float32
error, its CUDA part in a CPU build, and the TF32 rounding helper."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_tf32_matmul(device):
    run = run_example("tf32-matmul", device)
    # the page leaves the process as it found it
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.cuda.matmul.allow_tf32 is False
    # the float32 product is exact to about float32's precision (the page asserts only the TF32 one)
    assert run["float32_error"] < 1e-6
    if device != "cuda":
        assert cuda_parts_reported(run.stdout) == 1


def test_round_to_tf32_keeps_ten_mantissa_bits():
    round_to_tf32 = run_example("tf32-matmul", "cpu")["round_to_tf32"]
    exact = torch.tensor([1.0, 1.5, 1 + 2**-10, -3.0, 2.0**100])  # representable in TF32
    torch.testing.assert_close(round_to_tf32(exact.clone()), exact, rtol=0, atol=0)
    # 1 + 2**-11 is a tie between 1 and 1 + 2**-10: ties go to the even mantissa, 1
    tie = torch.tensor([1 + 2**-11, 1 + 3 * 2**-11])
    assert round_to_tf32(tie).tolist() == [1.0, 1 + 2 * 2**-10]
    values = torch.randn(1000)
    error = ((round_to_tf32(values.clone()) - values).abs() / values.abs()).max()
    assert 0 < error <= 2**-11

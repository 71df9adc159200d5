"""Values explained on the "tf32-matmul" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_tf32_matmul(device):
    run = run_example("tf32-matmul", device)
    # the defaults: matmul in full float32, cuDNN convolutions allowed TF32
    assert run["defaults"] == {
        "torch.backends.cuda.matmul.allow_tf32": False,
        "torch.get_float32_matmul_precision()": "highest",
        "torch.backends.cudnn.allow_tf32": True,
    }
    assert run["after_high"] == ("high", True) and run["after_highest"] == ("highest", False)
    # the page leaves the process as it found it
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.cuda.matmul.allow_tf32 is False
    # TF32 rounding: about float16's precision; a product ~1000 times less exact than float32
    assert run["relative"] <= torch.finfo(torch.float16).eps / 2
    assert run["tf32_error"] > 100 * run["float32_error"]
    assert 1e-4 < run["tf32_error"] < 1e-3 and run["float32_error"] < 1e-6
    assert not run["agree"]
    # the fix: "highest" inside the block, the caller's setting restored
    assert run["restored"] == "high"
    assert run["relative_error"](run["exact"], run["reference"]) < 1e-5
    if device == "cuda":
        assert run["gpu_float32_error"] < 1e-5
    else:
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

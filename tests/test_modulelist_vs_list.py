"""Values explained on the "modulelist-vs-list" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import run_example


def test_modulelist_vs_list(device):
    run = run_example("modulelist-vs-list", device)
    # a plain list: only the head is registered, saved and trained
    assert run["tensor_count"] == 2
    assert run["children"] == ["head"]
    assert run["blocks_trained"] == [False, False, False] and run["head_trained"]
    assert all(run["grads_filled"])  # autograd still fills .grad: the optimizer never reads it
    assert "ValueError: optimizer got an empty parameter list" in run.stdout
    # .to(), eval() and requires_grad_(False) skip the listed layers
    assert run["moved"].blocks[0].weight.device.type == "cpu"
    assert run["evaluated"].steps[1].training
    assert run["still_trainable"] == [] and run["listed_trainable"]
    # nn.ModuleList registers, saves and trains every block; it has no forward of its own
    assert run["fixed_tensor_count"] == 8 and len(run["fixed_keys"]) == 8
    assert run["fixed_blocks_trained"] == [True, True, True]
    assert 'missing the required "forward" function' in run.stdout
    assert run["counts"] == {"plain dict and list": 0, "ModuleDict and ParameterList": 6}
    assert run["reported"] == {"list": 5, "ModuleList": run["expected"]} and run["expected"] == 65


def test_static_checker_flags_the_wrong_code_and_not_its_fix():
    static = run_example("modulelist-vs-list", "cpu")["static"]
    assert [finding.rule for finding in static["wrong"]] == ["TP105"]
    assert static["fixed"] == []

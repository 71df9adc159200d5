"""Values explained on the "pack-padded-sequence" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_pack_padded_sequence(device):
    run = run_example("pack-padded-sequence", device)
    # padded: only the longest sequence gets its own final state
    assert run["last_step_right"] == [False, True, False]
    assert run["h_n_right"] == [False, True, False]
    assert run["drift"][1] < 1e-4 and (run["drift"][2:] > 0.1).all()
    # packed: every sequence does, in the original order; unpacking pads with zeros
    assert run["packed_right"] == [True, True, True]
    assert run["unpacked_lengths"].tolist() == run["lengths"]
    # enforce_sorted=True refuses an unsorted batch; the manual recipe gives the same h_n
    assert "must be sorted in decreasing order" in run.stdout
    assert run["packed"].sorted_indices.tolist() == [1, 2, 0]
    assert run["same_as_manual"]
    # batch_sizes (and so lengths) live on the CPU
    assert run["packed"].batch_sizes.device.type == "cpu"
    if device == "cuda":
        assert "'lengths' argument should be a 1D CPU int64 tensor" in run.stdout
    else:
        assert cuda_parts_reported(run.stdout) == 1
    # bidirectional: padding corrupts even the outputs inside short sequences
    assert run["inside_right"] == [False, True, False]
    assert run["packed_inside_right"] == [True, True, True]

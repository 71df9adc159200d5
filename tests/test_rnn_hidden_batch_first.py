"""Values explained on the "rnn-hidden-batch-first" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import run_example


def test_rnn_hidden_batch_first(device):
    run = run_example("rnn-hidden-batch-first", device)
    n, h = run["N"], run["H"]
    # batch_first applies to the output, not to h_n
    assert run["output"].shape == (n, run["L"], 2 * h) and run["h_n"].shape == (2, n, h)
    # h_n.view(N, -1) mixes samples: sample 1's input changes rows 0 and 2, not its own
    assert run["wrong_rows"] == [0, 2]
    assert run["owner_after_view"][:, ::h].tolist() == [[0, 1], [2, 0], [1, 2]]
    # h_n[0] ends at the last step, h_n[1] (backward) at the first; output[:, -1] is not h_n
    assert run["forward_is_last_step"] and run["backward_is_first_step"]
    assert not run["last_step_is_h_n"]
    # a batch-first h_0 is refused, or accepted silently when N == layers * directions
    assert "Expected hidden size (2, 3, 4), got [3, 2, 4]" in run.stdout
    assert run["sample0_changed"]
    # the fix keeps samples apart, for one layer and for two
    assert run["fixed_rows"] == [1]
    assert run["lstm_features"].shape == (n, 2 * h)

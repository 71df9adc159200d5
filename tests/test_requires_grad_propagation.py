"""What the "requires-grad-propagation" page prints but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_requires_grad_on_the_data_saves_much_more(device):
    run = run_example("requires-grad-propagation", device)
    # the page asserts "more bytes" and prints the ratio; it is more than twice as many, in more
    # tensors
    assert run["saved_rg"].nbytes > 2 * run["saved_plain"].nbytes
    assert run["saved_rg"].count > run["saved_plain"].count

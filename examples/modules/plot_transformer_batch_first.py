"""
.. _transformer-batch-first:

Transformer batch first
=======================

One paragraph: what the reader sees go wrong, in the words of the report that shows it.

.. admonition:: What you will learn

   * the cause, in one line;
   * the fix, in one line.

.. admonition:: Prerequisites

   :ref:`train-eval-mode`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# Reproduce the failure: print every value the prose explains and assert it; show an expected
# error or warning with :func:`~torch_pitfalls.expect_raises` or
# :func:`~torch_pitfalls.expect_warns`.
import torch

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

# %%
# Why
# ---
#
# What PyTorch does, with a link to its documentation (:func:`torch.nn.functional.cross_entropy`).

# %%
# The fix
# -------
#
# The corrected code, asserted.

# %%
# Takeaway
# --------
#
# **The one sentence to remember.**

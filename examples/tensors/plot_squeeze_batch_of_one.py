"""
.. _squeeze-batch-of-one:

A bare ``squeeze()`` also removes a batch of one
================================================

``features.squeeze()`` is a common way to drop the ``1 × 1`` left by a global pooling, or the
trailing 1 of a model with one output.
Without a dimension, :meth:`~torch.Tensor.squeeze` removes *every* dimension of size 1, and the
batch dimension has size 1 whenever a batch holds a single sample: the last batch of an epoch,
or a single image at inference.
Training runs for hours, then fails on the last batch of the evaluation with an
``IndexError`` or a shape error in code far from the ``squeeze``; a loss computes anyway,
through broadcasting, and per-sample values become 0-d tensors.

.. admonition:: What you will learn

   * why the shape after ``squeeze()`` depends on the batch size;
   * where a batch of one then fails, and where it does not;
   * how ``squeeze(dim)`` and ``flatten(1)`` keep the batch dimension.

.. admonition:: Prerequisites

   :ref:`mse-broadcasting` (how a loss broadcasts a prediction against a target of another
   shape).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A small classifier: convolutions, a global average pooling that leaves ``(N, C, 1, 1)``,
# ``squeeze()`` to get ``(N, C)``, and a linear layer.
# The evaluation set holds 17 images and the :class:`~torch.utils.data.DataLoader` makes batches
# of 8, so the last batch holds one image.
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

C, K = 6, 3  # channels after the convolutions, classes


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, C, 3, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(C, K)

    def forward(self, x):
        pooled = self.pool(self.features(x))  # (N, C, 1, 1)
        return self.head(pooled.squeeze())  # meant: (N, C)


model = Classifier().to(device).eval()
images, labels = torch.randn(17, 1, 8, 8), torch.randint(0, K, (17,))
loader = DataLoader(TensorDataset(images, labels), batch_size=8)
print("batch sizes:", [len(x) for x, _ in loader])

shapes = []
with torch.no_grad():
    for x, _ in loader:
        shapes.append(tuple(model(x.to(device)).shape))
print("logits per batch:", shapes)
assert shapes == [(8, K), (8, K), (K,)]

# %%
# **The last batch's logits have no batch dimension.**
# The linear layer accepts a 1-D input, so the model does not fail; the code that reads its
# output does. Taking the predicted class per sample:

with torch.no_grad(), expect_raises(IndexError, r"Dimension out of range \(expected to be in"):
    for x, _ in loader:
        predicted = model(x.to(device)).argmax(dim=1)

# %%
# Collecting the features of every batch for a retrieval index, the failure comes even later,
# when the batches are concatenated at the end of the epoch:

with torch.no_grad():
    collected = [model.pool(model.features(x.to(device))).squeeze() for x, _ in loader]
print("feature batches:", [tuple(f.shape) for f in collected])
with expect_raises(RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"):
    torch.cat(collected)

# %%
# Why
# ---
#
# :func:`torch.squeeze` without ``dim`` removes every dimension of size 1, whatever it means.
# For a batch of one, that includes the batch dimension, so **the shape of the result depends on
# the batch size**: the same line gives ``(8, C)`` for 8 samples and ``(C,)`` for one.
# Its documentation warns about exactly this case.

for n in (8, 1):
    pooled = torch.zeros(n, C, 1, 1, device=device)
    print(f"N={n}: (N, C, 1, 1).squeeze() -> {tuple(pooled.squeeze().shape)}")
assert torch.zeros(1, C, 1, 1).squeeze().shape == (C,)

# %%
# Much of PyTorch then accepts the smaller tensor, which moves the failure away from its cause.
# :class:`~torch.nn.Linear` treats a 1-D input as a single unbatched sample, and so does
# :func:`~torch.nn.functional.cross_entropy`: the training loss of the last batch is even the
# right number.

logits_batched = torch.randn(1, K, device=device)
target = torch.tensor([2], device=device)
if torch.__version__ >= "2.9":
    loss_squeezed = F.cross_entropy(logits_batched.squeeze(), target)
    loss_batched = F.cross_entropy(logits_batched, target)
    print(f"cross-entropy of (K,) logits: {loss_squeezed.item():.4f}", end=", ")
    print(f"of (1, K) logits: {loss_batched.item():.4f}")
    torch.testing.assert_close(loss_squeezed, loss_batched)
else:  # PyTorch 2.8 and older refuse the (1,) target: see "Changed in PyTorch 2.9" below
    with expect_raises(RuntimeError, r"size mismatch \(got input: \[\d+\], target: \[1\]\)"):
        F.cross_entropy(logits_batched.squeeze(), target)

# %%
# A model with one output per sample, ``(N, 1)``, is squeezed to ``(N,)`` to meet a target of
# shape ``(N,)``. For a batch of one, the prediction becomes a 0-d tensor. The loss broadcasts it
# against the ``(1,)`` target, with only a warning (:ref:`mse-broadcasting`); the code that
# collects the predictions fails, because ``tolist()`` of a 0-d tensor is a number, not a list:

regressor = nn.Linear(4, 1).to(device)
inputs, targets = torch.randn(1, 4, device=device), torch.randn(1, device=device)
prediction = regressor(inputs).squeeze()
print("prediction:", tuple(prediction.shape), "| target:", tuple(targets.shape))
with expect_warns(UserWarning, r"Using a target size \(torch.Size\(\[1\]\)\) that is different"):
    per_sample = F.mse_loss(prediction, targets, reduction="none")
print("per-sample losses:", tuple(per_sample.shape), "| prediction.tolist():", prediction.tolist())
assert prediction.shape == () and per_sample.shape == (1,)
assert isinstance(prediction.tolist(), float)
all_predictions = []
with expect_raises(TypeError, "'float' object is not iterable"):
    all_predictions.extend(prediction.tolist())

# %%
# A binary classifier whose ``(N, 1)`` logits are squeezed fails at once, because
# :func:`~torch.nn.functional.binary_cross_entropy_with_logits` does not broadcast:

with expect_raises(ValueError, r"Target size \(torch.Size\(\[1\]\)\) must be the same as input"):
    F.binary_cross_entropy_with_logits(prediction, targets)

# %%
# With ``drop_last=True`` the training loader drops its last, smaller batch, which is why the
# error often appears first in evaluation, or when the model serves a single request.
#
# The fix
# -------
#
# **Name the dimensions to remove:** ``squeeze((2, 3))`` after a global pooling, ``squeeze(1)``
# or ``[:, 0]`` for one output per sample, or ``flatten(1)`` (:meth:`~torch.Tensor.flatten`;
# :class:`~torch.nn.Flatten` in a :class:`~torch.nn.Sequential`), which keeps dimension 0
# whatever its size.

for n in (8, 1):
    pooled = torch.zeros(n, C, 1, 1, device=device)
    named, flat = pooled.squeeze((2, 3)), pooled.flatten(1)
    print(f"N={n}: squeeze((2, 3)) -> {tuple(named.shape)}, flatten(1) -> {tuple(flat.shape)}")
    assert named.shape == flat.shape == (n, C)


class FixedClassifier(Classifier):
    def forward(self, x):
        return self.head(self.pool(self.features(x)).flatten(1))  # (N, C) for every N


fixed = FixedClassifier().to(device).eval()
fixed.load_state_dict(model.state_dict())
with torch.no_grad():
    predicted = torch.cat([fixed(x.to(device)).argmax(dim=1) for x, _ in loader])
    features = torch.cat([fixed.pool(fixed.features(x.to(device))).flatten(1) for x, _ in loader])
print("predictions:", tuple(predicted.shape), "| features:", tuple(features.shape))
assert predicted.shape == (17,) and features.shape == (17, C)

prediction = regressor(inputs).squeeze(1)
print("prediction of a batch of one:", tuple(prediction.shape), "| tolist():", prediction.tolist())
assert prediction.shape == targets.shape == (1,) and len(prediction.tolist()) == 1

# %%
# ``squeeze(dim)`` removes only that dimension, and only if its size is 1: name a dimension that
# is never the batch (``squeeze(0)`` is the batch dimension).
# A named dimension of another size is left alone without an error, so ``squeeze(1)`` does not
# check that the dimension it was meant for was there: on ``(N, K)`` logits it changes nothing.

logits = torch.randn(8, K, device=device)
print("(8, K).squeeze(1):", tuple(logits.squeeze(1).shape))
assert logits.squeeze(1).shape == (8, K)

# %%
# To run the model on one sample, give it a batch of one with ``unsqueeze(0)`` and take the
# first row of the result: the model's code then never sees a special shape.

image = images[0].to(device)  # (1, 8, 8): one image, no batch dimension
with torch.no_grad():
    single = fixed(image.unsqueeze(0))[0]
print("one image -> logits:", tuple(single.shape))
assert single.shape == (K,)

# %%
# Changed in PyTorch 2.9: ``cross_entropy`` takes a target of shape ``(1,)`` for ``(C,)`` logits
# ----------------------------------------------------------------------------------------------
#
# Up to PyTorch 2.8, :func:`~torch.nn.functional.cross_entropy` given the squeezed logits of a
# batch of one, shape ``(C,)``, and the batch's target, shape ``(1,)``, raised
# ``RuntimeError: size mismatch (got input: [3], target: [1])``: an unbatched input needed a 0-d
# target.
# `PyTorch 2.9 <https://github.com/pytorch/pytorch/releases/tag/v2.9.0>`_ accepts that pair
# and returns the loss of the batch of one, as measured above on each release.
# **On 2.8 and older, a bare squeeze() before cross_entropy fails on the last batch of one; on
# 2.9 and newer it trains silently, and the failure moves to code that expects a batch
# dimension.**
#
# A real-world report: re-identification features
# -----------------------------------------------
#
# In a widely used person re-identification baseline, the model squeezed its pooled
# ``(N, 2048, 1, 1)`` features with a bare ``squeeze()``. A user pointed out that the last batch
# of a data loader sometimes holds one sample, which the squeeze then turns into a 1-D tensor,
# and suggested reshaping with the batch size kept as the first dimension instead; the
# maintainer agreed (`Person_reID_baseline_pytorch issue 77
# <https://github.com/layumi/Person_reID_baseline_pytorch/issues/77>`_).
# In a popular sentiment-analysis tutorial, a user's last batch held one example and the
# ``squeeze(1)`` applied to the model's output failed with a dimension-out-of-range error
# (`pytorch-sentiment-analysis issue 17
# <https://github.com/bentrevett/pytorch-sentiment-analysis/issues/17>`_); in another issue on
# the same tutorial, a user found a ``squeeze(0)`` in the model's ``forward`` that removes the
# batch dimension whenever a batch holds one example, and the author removed it
# (`pytorch-sentiment-analysis issue 41
# <https://github.com/bentrevett/pytorch-sentiment-analysis/issues/41>`_).
#
# Takeaway
# --------
#
# **squeeze() removes every dimension of size 1, the batch dimension of a batch of one
# included: name the dimension (squeeze(1), squeeze((2, 3))) or use flatten(1).**
# Test a model with a batch of one as well as a full batch; a dataset size that leaves a last
# batch of one sample finds these bugs before the evaluation does.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because most bare ``squeeze()``
# calls are meant, and which dimensions have size 1 is known only at run time, for the last batch.

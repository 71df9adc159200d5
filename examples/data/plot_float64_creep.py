"""
.. _float64-creep:

float64 data meeting float32 weights
====================================

NumPy computes in 64-bit floats by default, Python's ``float`` is 64-bit, and PyTorch's modules
are 32-bit.
Data that goes from NumPy or from Python numbers through a
:class:`~torch.utils.data.DataLoader` keeps its 64 bits, and meets float32 weights in the first
layer, which refuses to mix them.
Where PyTorch does mix them, as most losses do, the result is silently float64; a few losses
refuse the mix, with an error that names neither the loss nor the tensor.

.. admonition:: What you will learn

   * which dtype :func:`torch.from_numpy` and the DataLoader's default collation give NumPy
     arrays and Python floats;
   * why a linear layer refuses a float64 batch while most losses accept a float64 target, and
     which losses refuse it;
   * where to cast, once, and what :func:`torch.from_numpy` versus :func:`torch.tensor` means for
     memory shared with the array.

.. admonition:: Prerequisites

   :ref:`tensor-to-numpy` (arrays and tensors that share memory).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small table of 8 samples with 3 features each, prepared with NumPy, and a regression target
# per sample, kept as Python floats (as ``tolist()`` or a CSV reader gives them).
# The dataset turns each row into a tensor with :func:`torch.from_numpy`.
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

rng = np.random.default_rng(0)
features = rng.normal(size=(8, 3))
targets = [float(v) for v in features.sum(axis=1)]
print("features:", features.dtype, "| targets:", type(targets[0]).__name__)
assert features.dtype == np.float64


class TableDataset(Dataset):
    def __init__(self, features, targets):
        self.features = features
        self.targets = targets

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return torch.from_numpy(self.features[index]), self.targets[index]


loader = DataLoader(TableDataset(features, targets), batch_size=4)
x, y = next(iter(loader))
print("batch:", x.dtype, tuple(x.shape), "| targets:", y.dtype, tuple(y.shape))
assert x.dtype == y.dtype == torch.float64

# %%
# The model's parameters are float32, and its first layer refuses the batch:

model = nn.Linear(3, 1).to(device)
print("weight:", model.weight.dtype)
with expect_raises(RuntimeError, "mat1 and mat2 (must|to) have the same dtype"):
    model(x.to(device))

# %%
# Other layers refuse a float64 batch too, each in words of its own (shown on the CPU): a
# convolution names its bias, a recurrent layer its weights, a batched matrix product the
# scalar types.

sequences = torch.from_numpy(rng.normal(size=(2, 3, 4)))  # float64, (N, C, L)
with expect_raises(RuntimeError, r"Input type \(double\) and bias type \(float\)"):
    nn.Conv1d(3, 2, kernel_size=3)(sequences)
with expect_raises(ValueError, r"RNN input dtype \(torch\.float64\) does not match weight dtype"):
    nn.LSTM(4, 2, batch_first=True)(sequences)
with expect_raises(RuntimeError, "expected scalar type Float but found Double"):
    torch.bmm(torch.ones(2, 1, 3), sequences)  # float32 attention weights, float64 values

# %%
# Casting the features, a common first fix, makes the forward pass work.
# The targets are still float64, and the loss takes them without a word: it is computed in
# float64, and so is its backward pass down to the prediction.
# Before PyTorch 2.12 that backward pass refused the mix with an error instead (see
# "Changed in PyTorch 2.12" below).

pred = model(x.to(device).float()).squeeze(1)
loss = F.mse_loss(pred, y.to(device))
if torch.__version__ >= "2.12":
    loss.backward()
    assert model.weight.grad.dtype == torch.float32
else:  # PyTorch 2.11 and older: see "Changed in PyTorch 2.12" below
    with expect_raises(RuntimeError, "Found dtype Double but expected Float"):
        loss.backward()
print("prediction:", pred.dtype, "| target:", y.dtype, "| loss:", loss.dtype)
print("bytes per target element:", y.element_size())
assert pred.dtype == torch.float32 and loss.dtype == torch.float64 and y.element_size() == 8

# %%
# Why
# ---
#
# **Nothing on the way from NumPy to the model converts to float32: each step keeps or picks
# float64.**
#
# * NumPy's default floating dtype is float64: ``rng.normal``, ``np.array([0.5])`` and
#   ``np.loadtxt`` give it, and so do pandas' columns of floats.
# * :func:`torch.from_numpy` keeps the array's dtype, as it must: the tensor shares the array's
#   memory.
# * The DataLoader's default collation, :func:`~torch.utils.data.default_collate`, keeps the dtype
#   of tensors and arrays, and turns Python floats into float64, whatever
#   :func:`torch.get_default_dtype` says:

print("default dtype:", torch.get_default_dtype())
print("default_collate of Python floats:", default_collate([0.5, 1.5]).dtype)
print("default_collate of float32 arrays:", default_collate([np.ones(2, np.float32)]).dtype)
assert torch.get_default_dtype() == torch.float32
assert default_collate([0.5, 1.5]).dtype == torch.float64
assert default_collate([np.ones(2, np.float32)]).dtype == torch.float32

# %%
# Modules create their parameters in the default dtype, float32.
# A matrix product needs both operands in one dtype and does not convert either, hence the error;
# element-wise operations, losses among them, follow PyTorch's type promotion instead, and
# float32 with float64 gives float64:

print("float32 with float64 gives", torch.promote_types(torch.float32, torch.float64))
assert torch.promote_types(torch.float32, torch.float64) == torch.float64

# %%
# Not every loss promotes
# -----------------------
#
# **Each loss handles a float64 target in its own code, and a few still refuse it.**
# The same float32 prediction, one loss at a time, with float64 targets (or, for the last one,
# class weights computed in float64, as weights from NumPy's class counts are), forward and
# backward, on the CPU:


def loss_cases(dtype):
    """Each loss as a function of a float32 prediction, its other tensors in ``dtype``."""
    values = torch.randn(4, 3, dtype=dtype)
    probabilities = torch.rand(4, 3, dtype=dtype)  # 0 to 1, as binary cross-entropy needs
    distribution = torch.softmax(values, dim=1)  # each row sums to 1
    class_weights = torch.tensor([1.0, 2.0, 0.5], dtype=dtype)
    labels = torch.tensor([0, 1, 2, 0])
    return {
        "mse_loss": lambda p: F.mse_loss(p, values),
        "l1_loss": lambda p: F.l1_loss(p, values),
        "smooth_l1_loss": lambda p: F.smooth_l1_loss(p, values),
        "huber_loss": lambda p: F.huber_loss(p, values),
        "binary_cross_entropy": lambda p: F.binary_cross_entropy(torch.sigmoid(p), probabilities),
        "binary_cross_entropy_with_logits": (
            lambda p: F.binary_cross_entropy_with_logits(p, probabilities)
        ),
        "kl_div": lambda p: F.kl_div(F.log_softmax(p, dim=1), distribution, reduction="batchmean"),
        "cross_entropy, probabilities": lambda p: F.cross_entropy(p, distribution),
        "cross_entropy, class weights": lambda p: F.cross_entropy(p, labels, weight=class_weights),
    }


def try_losses(dtype):
    """For each loss: the dtype of the loss if forward and backward ran, else where it raised."""
    outcomes = {}
    for name, loss_fn in loss_cases(dtype).items():
        prediction = torch.randn(4, 3, requires_grad=True)
        step = "forward"
        try:
            loss = loss_fn(prediction)
            step = "backward"
            loss.backward()
            outcomes[name] = f"runs, loss {loss.dtype}"
        except RuntimeError as error:
            outcomes[name] = f"{step} raises: {str(error).splitlines()[0]}"
    return outcomes


with_float64 = try_losses(torch.float64)
for name, outcome in with_float64.items():
    print(f"{name:33} {outcome}")
refused = {name: outcome for name, outcome in with_float64.items() if "raises" in outcome}
expected = {
    "huber_loss": "backward raises: Found dtype Double but expected Float",
    "binary_cross_entropy": "forward raises: Found dtype Double but expected Float",
    "cross_entropy, class weights": "forward raises: expected scalar type Float but found Double",
}
if torch.__version__ < "2.12":  # see "Changed in PyTorch 2.12" below
    expected["mse_loss"] = "backward raises: Found dtype Double but expected Float"
assert refused == expected, refused
ran = {outcome for outcome in with_float64.values() if "raises" not in outcome}
assert ran == {"runs, loss torch.float64"}, ran

# %%
# The losses that run compute in float64, silently.
# The ones that raise give a message that names neither the loss nor the tensor:
# ``Found dtype Double but expected Float`` (in ``F.huber_loss``'s backward pass, in
# :func:`~torch.nn.functional.binary_cross_entropy`'s forward pass) or
# ``expected scalar type Float but found Double`` (class weights of
# :func:`~torch.nn.functional.cross_entropy`).
# **If a loss raises one of these, look for a float64 tensor among its arguments (the target, the
# weights), and cast it to float32 where it is made, as the fix below does.**

# %%
# The fix
# -------
#
# **Cast once, where the data enters PyTorch: in the dataset, to float32, for features and
# targets alike.**
# Converting the whole table in ``__init__`` costs one copy, and every item is then a float32
# tensor that the default collation stacks as it is.


class Float32TableDataset(Dataset):
    def __init__(self, features, targets):
        self.features = torch.as_tensor(features, dtype=torch.float32)
        self.targets = torch.as_tensor(targets, dtype=torch.float32)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return self.features[index], self.targets[index]


model.zero_grad()
loader = DataLoader(Float32TableDataset(features, targets), batch_size=4)
x, y = next(iter(loader))
pred = model(x.to(device)).squeeze(1)
loss = F.mse_loss(pred, y.to(device))
loss.backward()
print("batch:", x.dtype, "| targets:", y.dtype, "| loss:", loss.dtype)
assert x.dtype == y.dtype == loss.dtype == torch.float32

# %%
# With float32 targets and weights, every loss of the list above runs, in float32:

with_float32 = try_losses(torch.float32)
print(sorted(set(with_float32.values())))
assert set(with_float32.values()) == {"runs, loss torch.float32"}

# %%
# ``features.astype(np.float32)`` before building the dataset works as well.
# Casting each batch in the training loop (``x.float()``) works too, but it is easy to forget for
# one of the tensors, as above.
#
# ``torch.from_numpy`` or ``torch.tensor``?
# -----------------------------------------
#
# **torch.from_numpy() shares the array's memory; torch.tensor() copies it.**
# A dataset built on ``torch.from_numpy(array)`` sees every later in-place change of the array,
# for example a normalisation done in place after the dataset was created:

table = rng.normal(size=(4, 3))
shared = torch.from_numpy(table)
copied = torch.tensor(table)
table -= table.mean(axis=0)  # in place: the same memory
print("column means through from_numpy:", [round(m, 4) + 0.0 for m in shared.mean(dim=0).tolist()])
print("column means through tensor:    ", [round(m, 4) + 0.0 for m in copied.mean(dim=0).tolist()])
assert torch.allclose(shared.mean(dim=0), torch.zeros(3, dtype=torch.float64), atol=1e-12)
assert not torch.allclose(copied.mean(dim=0), torch.zeros(3, dtype=torch.float64), atol=1e-3)

# %%
# The sharing goes both ways, and a cast ends it: ``torch.as_tensor(array, dtype=torch.float32)``
# of a float64 array, like ``.float()`` of a float64 tensor, makes a new float32 copy.
# The fix above therefore also keeps the dataset independent of the NumPy array.

as_float32 = torch.as_tensor(table, dtype=torch.float32)
table[0, 0] = 100.0
print(
    f"after table[0, 0] = 100: {shared[0, 0].item():.4f} through from_numpy, "
    f"{as_float32[0, 0].item():.4f} through the float32 copy"
)
assert shared[0, 0].item() == 100.0 and as_float32[0, 0].item() != 100.0

# %%
# Changed in PyTorch 2.12: the MSE loss's backward pass accepts mixed dtypes
# --------------------------------------------------------------------------
#
# Up to PyTorch 2.11, the forward pass of :func:`~torch.nn.functional.mse_loss` promoted a
# float32 prediction and a float64 target to float64 as it does now, but its backward pass did
# not: ``loss.backward()`` stopped with ``RuntimeError: Found dtype Double but expected Float``,
# an error that named neither the loss nor the target.
# `Pull request #175743 <https://github.com/pytorch/pytorch/pull/175743>`_ (fixing
# `issue #94086 <https://github.com/pytorch/pytorch/issues/94086>`_) made the backward pass
# promote its inputs as well, first released in PyTorch 2.12.
# It changed :func:`~torch.nn.functional.mse_loss` only: the backward pass of ``F.huber_loss``
# still refuses a float64 target (see "Not every loss promotes" above).
# **On older releases the float64 target is not silent: it stops the training step; the cast in
# the dataset is the fix on every release.**

# %%
# A real-world report: "Unexpected Float64 type output for float input to default_collate"
# ----------------------------------------------------------------------------------------
#
# In 2021 a user reported that targets which their dataset returned as Python floats came out of
# the DataLoader as float64 tensors, and that losses then failed with dtype errors
# (`pytorch/pytorch issue #69446 <https://github.com/pytorch/pytorch/issues/69446>`_).
# A maintainer answered that float64 is deliberate: the DataLoader knows nothing about the data,
# and float64 cannot lose precision of a Python float, while a float32 default could silently
# round users' data; a ``collate_fn`` of your own, or a cast, chooses otherwise.
# The behaviour is unchanged today, as ``default_collate`` showed above, and with the PyTorch this
# page was built with, an MSE loss of a float32 prediction and such a target raises nothing: it
# is computed in float64 (before PyTorch 2.12, its backward pass raised).
#
# Takeaway
# --------
#
# **NumPy arrays and Python floats reach the model as float64: a linear layer refuses them, most
# losses silently compute in float64, and a few (huber_loss, binary_cross_entropy, cross_entropy's
# class weights) raise.**
# Cast once where the data enters PyTorch (``torch.as_tensor(x, dtype=torch.float32)`` in the
# dataset), and remember that ``torch.from_numpy`` shares memory with the array while
# ``torch.tensor`` and a cast copy it.

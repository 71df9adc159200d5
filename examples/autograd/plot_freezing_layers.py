"""
.. _freezing-layers:

Freezing part of a network for fine-tuning
==========================================

To fine-tune a pretrained network, you freeze its backbone with
:meth:`~torch.nn.Module.requires_grad_` and train a new classifier head.
Done in the right order, the frozen weights stay exactly as they were.
Freeze *after* a backward pass, though, and the next optimizer step still moves the "frozen"
weights; and even a correctly frozen backbone keeps changing its BatchNorm running statistics
while the model is in training mode.

.. admonition:: What you will learn

   * what ``requires_grad_(False)`` stops, and what it does not;
   * why ``module.requires_grad = False`` (no underscore, no call) freezes nothing;
   * why an optimizer moves a parameter that no longer requires grad;
   * the fine-tuning recipe: freeze, replace the head, optimize only what is trainable;
   * why a frozen backbone with BatchNorm must also be put in evaluation mode.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (which tensors get a gradient).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.make_pretrained_classifier`.
"""

# %%
# The symptom
# -----------
#
# :func:`~torch_pitfalls.make_pretrained_classifier` stands in for a pretrained network: a
# ``backbone`` of two convolutions with BatchNorm, and a linear ``head`` to 10 classes.
# Its weights are seeded, so no download is needed.
# We train as usual: forward, backward.
# Only then do we decide to freeze the backbone, and take the optimizer step.
import torch
import torch.nn.functional as F

from torch_pitfalls import get_device, make_pretrained_classifier, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

images = torch.randn(8, 3, 16, 16, device=device)
labels = torch.randint(0, 10, (8,), device=device)
model = make_pretrained_classifier(10).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
F.cross_entropy(model(images), labels).backward()

model.backbone.requires_grad_(False)  # freeze the backbone, after the backward
backbone_before = {name: p.detach().clone() for name, p in model.backbone.named_parameters()}
optimizer.step()
moved = [n for n, p in model.backbone.named_parameters() if not torch.equal(p, backbone_before[n])]
print("frozen backbone parameters moved by the step:", moved)
assert moved == list(backbone_before)

# %%
# **Every parameter of the "frozen" backbone moved.**
#
# Why
# ---
#
# ``requires_grad_(False)`` tells autograd not to compute *new* gradients for these parameters.
# It does not touch the :attr:`~torch.Tensor.grad` they already have.
# And the optimizer never looks at :attr:`~torch.Tensor.requires_grad`:
# **an optimizer updates every parameter it holds whose** ``.grad`` **is not** ``None``.
# After the late freeze, each backbone parameter has both ``requires_grad=False`` and a gradient:

backbone_state = {
    name: (p.requires_grad, p.grad is not None) for name, p in model.backbone.named_parameters()
}
print("(requires_grad, has .grad) per backbone parameter:", backbone_state)
assert all(state == (False, True) for state in backbone_state.values())

# %%
# The stale gradient is used once, by the step right after the freeze.
# With PyTorch's default ``zero_grad()``, which sets gradients to ``None`` (see
# :ref:`backward-step-zero-grad`), the next steps skip the frozen parameters.
# With ``zero_grad(set_to_none=False)`` they keep a gradient of zeros, which is still a gradient,
# and an optimizer with momentum goes on moving them:

model = make_pretrained_classifier(10).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
F.cross_entropy(model(images), labels).backward()
optimizer.step()
model.backbone.requires_grad_(False)  # freeze between two steps this time
optimizer.zero_grad(set_to_none=False)
backbone_before = {name: p.detach().clone() for name, p in model.backbone.named_parameters()}
F.cross_entropy(model(images), labels).backward()
frozen_grads_zero = all(torch.count_nonzero(p.grad) == 0 for p in model.backbone.parameters())
print("every frozen gradient is zero:", frozen_grads_zero)
assert frozen_grads_zero
optimizer.step()
moved_by_momentum = [
    n for n, p in model.backbone.named_parameters() if not torch.equal(p, backbone_before[n])
]
print("frozen parameters moved by momentum:", moved_by_momentum)
assert moved_by_momentum == list(backbone_before)

# %%
# The fix
# -------
#
# **Freeze before the backward, or clear the gradients of what you freeze.**
# When you freeze in the middle of training, set the frozen parameters' gradients to ``None``;
# :meth:`~torch.nn.Module.zero_grad` on the frozen submodule does that.

model = make_pretrained_classifier(10).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
F.cross_entropy(model(images), labels).backward()
model.backbone.requires_grad_(False)
model.backbone.zero_grad(set_to_none=True)  # drop the stale gradients
backbone_before = {name: p.detach().clone() for name, p in model.backbone.named_parameters()}
optimizer.step()
unchanged = all(torch.equal(p, backbone_before[n]) for n, p in model.backbone.named_parameters())
print("backbone unchanged by the step:", unchanged)
assert unchanged

# %%
# Better still, build the optimizer after freezing and give it only the trainable parameters.
# That is the usual fine-tuning recipe: freeze the backbone, replace the head with a new
# :class:`~torch.nn.Linear` for the new task (here 5 classes), optimize what requires grad.
# A new layer requires grad by default, so only the head is left trainable.
# Like every method that acts on a whole model, ``requires_grad_`` reaches only registered
# submodules: a layer kept in a plain Python list is not frozen (see :ref:`modulelist-vs-list`).
# (With torchvision you would start from a real pretrained network, for example
# ``resnet18(weights="IMAGENET1K_V1")``: the ``weights=`` argument replaced ``pretrained=True``
# in torchvision 0.13, see its
# `release notes <https://github.com/pytorch/vision/releases/tag/v0.13.0>`_.)
#
# Replace the head before building the optimizer: an optimizer built earlier holds the old head's
# parameters and never updates the new one (see :ref:`params-not-in-optimizer`).

model = make_pretrained_classifier(10).to(device)
model.backbone.requires_grad_(False)
model.head = torch.nn.Linear(model.head.in_features, 5).to(device)
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(trainable, lr=0.1)
trainable_names = [name for name, p in model.named_parameters() if p.requires_grad]
print("trainable parameters:", trainable_names)
assert trainable_names == ["head.weight", "head.bias"]

# %%
# One training step, with copies of every parameter and of the BatchNorm running means taken
# before it.
# The frozen weights are unchanged, bit for bit, and only the head has changed.

new_labels = torch.randint(0, 5, (8,), device=device)
params_before = {name: p.detach().clone() for name, p in model.named_parameters()}
bn = model.backbone[1]  # the first BatchNorm2d of the backbone
running_mean_before = bn.running_mean.clone()

optimizer.zero_grad()
F.cross_entropy(model(images), new_labels).backward()
optimizer.step()

changed = [n for n, p in model.named_parameters() if not torch.equal(p, params_before[n])]
print("parameters changed by the step:", changed)
assert changed == ["head.weight", "head.bias"]

# %%
# Freezing does not freeze BatchNorm
# ----------------------------------
#
# The parameters of the :class:`~torch.nn.BatchNorm2d` layers (``weight`` and ``bias``) were
# frozen with the rest.
# Their running means and variances are not parameters but buffers, updated by every forward pass
# in training mode, with no gradient involved.
# **So the same step changed the frozen backbone's running statistics:**

running_mean_moved = not torch.equal(bn.running_mean, running_mean_before)
print("running_mean before the step:", running_mean_before)
print("running_mean after the step: ", bn.running_mean)
assert running_mean_moved

# %%
# To keep them, put the frozen backbone in evaluation mode with :meth:`~torch.nn.Module.eval`.
# Training the head with the backbone in evaluation mode leaves the statistics untouched:

model.backbone.eval()
running_mean_before_eval = bn.running_mean.clone()
optimizer.zero_grad()
F.cross_entropy(model(images), new_labels).backward()
optimizer.step()
running_mean_kept = torch.equal(bn.running_mean, running_mean_before_eval)
print("running_mean unchanged in eval mode:", running_mean_kept)
assert running_mean_kept

# %%
# :meth:`model.train() <torch.nn.Module.train>` puts *every* submodule back in training mode,
# the frozen backbone included, so call ``model.backbone.eval()`` again after each
# ``model.train()``.
# A later page covers BatchNorm running statistics in depth.

model.train()
print("BatchNorm in training mode again after model.train():", bn.training)
assert bn.training

# %%
# ``module.requires_grad = False`` freezes nothing
# ------------------------------------------------
#
# A tensor has a :attr:`~torch.Tensor.requires_grad` attribute; a module does not.
# Assigning ``model.backbone.requires_grad = False`` creates a new Python attribute on the module
# object, which nothing in PyTorch reads.
# There is no error and no warning, **every parameter of the backbone still requires grad, and
# the next step trains it**:

model = make_pretrained_classifier(10).to(device)
model.backbone.requires_grad = False  # an ordinary Python attribute: freezes nothing
print("model.backbone.requires_grad:", model.backbone.requires_grad)
print("nn.Module has a requires_grad attribute:", hasattr(torch.nn.Module, "requires_grad"))
still_trainable = [n for n, p in model.backbone.named_parameters() if p.requires_grad]
print("backbone parameters that still require grad:", still_trainable)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
backbone_before = {name: p.detach().clone() for name, p in model.backbone.named_parameters()}
F.cross_entropy(model(images), labels).backward()
optimizer.step()
moved = [n for n, p in model.backbone.named_parameters() if not torch.equal(p, backbone_before[n])]
print("backbone parameters moved by the step:", moved)
assert not hasattr(torch.nn.Module, "requires_grad")
assert still_trainable == list(backbone_before) and moved == list(backbone_before)

# %%
# **Call the method,** ``requires_grad_(False)`` **(with the trailing underscore): it sets the
# flag on every parameter of the module and its submodules.**
# A loop that assigns ``p.requires_grad = False`` to each of
# :meth:`~torch.nn.Module.parameters` does the same, because there the attribute belongs to a
# tensor.
# Frozen before the backward, the backbone has no gradient and the step leaves it as it was:

model = make_pretrained_classifier(10).to(device)
model.backbone.requires_grad_(False)  # the method: freezes every parameter
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
backbone_before = {name: p.detach().clone() for name, p in model.backbone.named_parameters()}
F.cross_entropy(model(images), labels).backward()
optimizer.step()
frozen = all(not p.requires_grad and p.grad is None for p in model.backbone.parameters())
unchanged = all(torch.equal(p, backbone_before[n]) for n, p in model.backbone.named_parameters())
looped = make_pretrained_classifier(10).backbone
for p in looped.parameters():
    p.requires_grad = False  # on a tensor, the attribute is the flag
print("requires_grad_(False): frozen, no .grad:", frozen, "| unchanged by the step:", unchanged)
print("loop over parameters(): all frozen:", not any(p.requires_grad for p in looped.parameters()))
assert frozen and unchanged and not any(p.requires_grad for p in looped.parameters())

# %%
# The slip was reported in the code of a MICCAI 2023 paper, which meant to freeze its network's
# last layer by assigning ``requires_grad = False`` to the layer's module
# (`ProtoContra-SFDA issue 18 <https://github.com/CSCYQJ/MICCAI23-ProtoContra-SFDA/issues/18>`_):
# the reporter compared the model before and after adaptation and found that the layer had
# changed, and a reply agreed.

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP112`` (see :doc:`/detectors`) finds this pitfall in your own code:
# ``requires_grad`` assigned on a module, ``model.requires_grad = False`` or
# ``self.backbone.requires_grad = False``, where the module is known from its construction, a
# loop over ``.modules()`` or ``.children()``, or a name that reads as a model or one of its
# parts. It is on by default.
#
# Takeaway
# --------
#
# **Freeze with** ``requires_grad_(False)`` **before the backward, give the optimizer only the
# parameters that still require grad, and keep frozen BatchNorm layers in** ``eval()`` **mode.**
# If you freeze in the middle of training, clear the frozen parameters' ``.grad`` to ``None``, or
# the optimizer will still move them.
#
# Under :class:`~torch.nn.parallel.DistributedDataParallel`, freeze before wrapping the model: DDP
# waits for a gradient from every parameter that required one when it was built
# (:ref:`ddp-unused-parameters`).

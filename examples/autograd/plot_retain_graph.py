"""
.. _retain-graph:

Backward twice through one graph
================================

Calling :meth:`~torch.Tensor.backward` a second time on the same graph usually fails,
because autograd frees what it saved for backward as soon as the first pass is done.
``retain_graph=True`` makes the error go away, which is why it is so often suggested,
but it is rarely the right fix: in a GAN it ends in an in-place modification error,
and in a recurrent model it makes the graph grow with every batch.

.. admonition:: What you will learn

   * what backward frees, and which graphs can nevertheless be backwarded twice;
   * why the classic GAN recipe with ``retain_graph=True`` fails today, and the pattern that works;
   * why a recurrent model must detach its hidden state between batches.

.. admonition:: Prerequisites

   :ref:`backward-step-zero-grad` (what backward and ``step()`` do) and :ref:`data-vs-detach`
   (the version counter).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.saved_tensors`,
:func:`~torch_pitfalls.graph_nodes`.
"""

# %%
# The symptom
# -----------
#
# ``x * x`` saves both of its operands, because the gradient of a product needs them.
# We count what autograd saves with :func:`~torch_pitfalls.saved_tensors`, call backward once,
# then call it again on the same ``loss``.
# **By default, a graph can be backwarded only once.**
import torch

from torch_pitfalls import expect_raises, get_device, graph_nodes, saved_tensors, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
with saved_tensors() as saved:
    loss = (x * x).sum()
print("tensors saved for backward:", saved.count)
assert saved.count == 2

loss.backward()
with expect_raises(RuntimeError, "backward through the graph a second time"):
    loss.backward()

# %%
# Why
# ---
#
# To keep memory low, **backward frees the tensors the graph saved as soon as it has used them.**
# The nodes of the graph are still there, but the values they need are gone, so a second pass
# cannot run.
# ``retain_graph=True`` tells the first backward to keep them.
# The second pass then works, and like every backward it *adds* into ``.grad``:
# after two passes ``x.grad`` holds the gradient ``2 * x`` twice.

x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
loss = (x * x).sum()
loss.backward(retain_graph=True)
grad_once = x.grad.clone()
loss.backward()
grad_twice = x.grad.clone()
print("after one backward: ", grad_once)
print("after two backwards:", grad_twice)
torch.testing.assert_close(grad_once, 2 * x.detach())
torch.testing.assert_close(grad_twice, 2 * grad_once)

# %%
# So backwarding one loss ``k`` times gives ``k`` times its gradient, from the same samples: it
# does not emulate a batch ``k`` times larger, as a shortcut for gradient accumulation
# assumes.
# :ref:`gradient-accumulation` shows it on a small network, next to real accumulation over ``k``
# different micro-batches.
#
# Often two backward passes are not needed at all.
# When two losses come from one forward and both gradients go into the same ``.grad``,
# backward their sum once: the gradient is the same, and nothing has to be retained.

x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
squares = x * x
loss_a, loss_b = squares.sum(), squares.mean()
(loss_a + loss_b).backward()
grad_of_sum = x.grad.clone()

x.grad = None
squares = x * x
loss_a, loss_b = squares.sum(), squares.mean()
loss_a.backward(retain_graph=True)
loss_b.backward()
print("one backward of the sum:", grad_of_sum)
print("two backward passes:    ", x.grad)
torch.testing.assert_close(grad_of_sum, x.grad)

# %%
# Graphs that can be backwarded twice anyway
# ------------------------------------------
#
# Adding a constant needs nothing for its gradient, so ``x + 1`` saves no tensor.
# With nothing saved, nothing is freed: a second backward runs without ``retain_graph``,
# and the gradient accumulates just the same.
# **Only a graph that saved tensors can fail on a second backward.**

x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
with saved_tensors() as saved:
    loss = (x + 1).sum()
loss.backward()
loss.backward()
grad_add_twice = x.grad.clone()
print("tensors saved for backward:", saved.count)
print("x.grad after two backwards:", grad_add_twice)
assert saved.count == 0
assert torch.equal(grad_add_twice, torch.full_like(x, 2.0))

# %%
# Multiplying by a Python number looks just as harmless, but on the installed PyTorch it is not:
# the multiplication saves the number as a zero-dimensional tensor (``_saved_other`` on its
# backward node), and that saved value is freed like any other.

x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
doubled = x * 2
print("saved by", doubled.grad_fn.name(), "->", repr(doubled.grad_fn._saved_other))
loss = doubled.sum()
loss.backward()
with expect_raises(RuntimeError, "backward through the graph a second time"):
    loss.backward()

# %%
# Two losses, one forward: a GAN
# ------------------------------
#
# A generator ``G`` turns noise into fake samples; a discriminator ``D`` scores samples.
# The classic recipe computes ``D(fake)`` once and uses it for both losses:
# it backwards the discriminator loss with ``retain_graph=True``, steps ``D``'s optimizer,
# and then backwards the generator loss through the same ``D(fake)``.
from torch import nn

bce = nn.BCEWithLogitsLoss()
G = nn.Linear(2, 3).to(device)  # generator: noise (2 numbers) -> sample (3 numbers)
D = nn.Linear(3, 1).to(device)  # discriminator: sample -> logit "real"
opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
z = torch.randn(4, 2, device=device)
real = torch.randn(4, 3, device=device)
ones = torch.ones(4, 1, device=device)
zeros = torch.zeros(4, 1, device=device)

fake = G(z)
d_fake = D(fake)
d_loss = bce(D(real), ones) + bce(d_fake, zeros)
opt_d.zero_grad()
d_loss.backward(retain_graph=True)
version_before_step = D.weight._version
opt_d.step()
version_after_step = D.weight._version
print(f"version of D.weight: {version_before_step} before opt_d.step(), {version_after_step} after")
assert version_after_step > version_before_step

g_loss = bce(d_fake, ones)
opt_g.zero_grad()
with expect_raises(RuntimeError, "modified by an inplace operation"):
    g_loss.backward()

# %%
# ``D(fake)`` saved ``D``'s weight to compute the gradient with respect to ``fake``.
# :meth:`~torch.optim.Optimizer.step` then changed that weight in place, which bumps its
# version counter; autograd compares versions at backward and refuses.
# **A graph that saw the old weights cannot give correct gradients after the optimizer changed
# them.**
# The retained graph was never the problem: the step between the two passes is.
#
# Changed in PyTorch 1.5
# ----------------------
#
# Releases before 1.5 ran this recipe without an error:
# their optimizers updated the parameters through ``.data``, which the version counter does not
# see (:ref:`data-vs-detach`), and the generator's gradient quietly mixed the new weights of ``D``
# with activations computed from the old ones.
# The `1.5.0 release notes <https://github.com/pytorch/pytorch/releases/tag/v1.5.0>`_ list it
# under "torch.optim optimizers changed to fix in-place checks for the changes made by the
# optimizer".
# The change is `PR 33640 <https://github.com/pytorch/pytorch/pull/33640>`_ ("Remove use of
# .data from optimizers") and its follow-up
# `PR 34211 <https://github.com/pytorch/pytorch/pull/34211>`_ ("End of the .data removal in
# torch/optim"), whose description drafts that release note.

# %%
# The recipe has a second problem.
# Without a detach, the discriminator loss backwards into ``G`` as well:
# ``G``'s parameters receive gradients from a loss that is not theirs.

G.zero_grad()
d_loss = bce(D(real), ones) + bce(D(G(z)), zeros)
d_loss.backward()
g_grads_from_d_loss = [p.grad.clone() for p in G.parameters()]
print("G.weight.grad after d_loss.backward():", g_grads_from_d_loss[0])
assert all(torch.count_nonzero(g) > 0 for g in g_grads_from_d_loss)

# %%
# They are harmless only as long as ``opt_g.zero_grad()`` runs before the generator's own
# backward; forget it, and ``G`` takes a step partly *against* its own goal.
#
# The fix
# -------
#
# **Detach the fake sample for the discriminator loss, step the discriminator, then compute**
# ``D(fake)`` **again for the generator loss.**
# Each network has its own optimizer, each graph is backwarded once, and no ``retain_graph`` is
# needed.
# The discriminator loss no longer reaches ``G``: its gradients stay ``None``.


def gan_step():
    """One training step of the GAN: returns the two losses and G's gradients after D's step."""
    fake = G(z)
    d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    opt_d.zero_grad()
    opt_g.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_grads_after_d = [p.grad for p in G.parameters()]

    g_loss = bce(D(fake), ones)  # D(fake) again, with the updated D
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    return d_loss.item(), g_loss.item(), g_grads_after_d


for i in range(3):
    d_value, g_value, g_grads_after_d = gan_step()
    print(
        f"step {i}: d_loss {d_value:.4f}, g_loss {g_value:.4f}, "
        f"G grads after D's step: {g_grads_after_d}"
    )
    assert all(g is None for g in g_grads_after_d)

# %%
# ``g_loss.backward()`` also fills ``D``'s gradients; they are cleared by ``opt_d.zero_grad()``
# at the start of the next step, before they could be used.
#
# A real-world report: a recurrent model fails on the second batch
# ----------------------------------------------------------------
#
# "My RNN carries its hidden state from one batch to the next, and the second batch fails with
# *Trying to backward through the graph a second time*."
# Here is that loop with a tiny :class:`~torch.nn.RNN`.

rnn = nn.RNN(input_size=2, hidden_size=4, batch_first=True).to(device)
head = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
batches = [
    (torch.randn(3, 5, 2, device=device), torch.randn(3, 1, device=device)) for _ in range(6)
]


def rnn_loss(inputs, targets, h):
    """Run one batch from hidden state ``h``: returns the loss and the new hidden state."""
    out, h = rnn(inputs, h)
    last = out.select(1, -1)  # out[:, -1]; its ":" adds a node of its own on PyTorch 2.8 and older
    return nn.functional.mse_loss(head(last), targets), h


h = torch.zeros(1, 3, 4, device=device)
loss, h = rnn_loss(*batches[0], h)
opt.zero_grad()
loss.backward()
opt.step()

loss, h = rnn_loss(*batches[1], h)
opt.zero_grad()
with expect_raises(RuntimeError, "backward through the graph a second time"):
    loss.backward()

# %%
# The new hidden state is computed from the old one, so the second batch's graph reaches back
# into the first batch's graph, whose saved tensors the first backward freed.
# The usual suggestion is ``retain_graph=True``.
# With the optimizer step in the loop, it only trades one error for another:
# the retained graph of the first batch saved the weights the step has since changed.

h = torch.zeros(1, 3, 4, device=device)
loss, h = rnn_loss(*batches[0], h)
opt.zero_grad()
loss.backward(retain_graph=True)
opt.step()

loss, h = rnn_loss(*batches[1], h)
opt.zero_grad()
with expect_raises(RuntimeError, "modified by an inplace operation"):
    loss.backward(retain_graph=True)

# %%
# Even without the step, the retained graph is wrong: it grows with every batch.
# Each loss reaches back through *all* earlier batches, so the work and memory of every backward
# grow with the number of batches seen, and gradients flow back through batches already trained on.
# We count the graph's nodes with :func:`~torch_pitfalls.graph_nodes`, batch by batch.
from itertools import pairwise

h = torch.zeros(1, 3, 4, device=device)
nodes_retained = []
for inputs, targets in batches:
    loss, h = rnn_loss(inputs, targets, h)
    nodes_retained.append(graph_nodes(loss))
    opt.zero_grad()
    loss.backward(retain_graph=True)
growth = [b - a for a, b in pairwise(nodes_retained)]
print("graph nodes per batch with retain_graph=True:", nodes_retained)
assert len(set(growth)) == 1 and growth[0] > 0  # the same number of nodes added every batch

# %%
# The right fix is to **detach the hidden state at the start of each batch**: its *value* carries
# over, its history does not.
# Each batch then has a graph of the same size, backward frees it, and the step is safe.
# (This is truncated backpropagation through time, with one batch as the window.)

h = torch.zeros(1, 3, 4, device=device)
nodes_detached = []
for inputs, targets in batches:
    h = h.detach()
    loss, h = rnn_loss(inputs, targets, h)
    nodes_detached.append(graph_nodes(loss))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("graph nodes per batch with h.detach():       ", nodes_detached)
assert len(set(nodes_detached)) == 1
assert nodes_detached[0] == nodes_retained[0]

# %%
# Side by side:
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
positions = list(range(1, len(batches) + 1))
width = 0.4
ax.bar([p - width / 2 for p in positions], nodes_retained, width, label="retain_graph=True")
ax.bar([p + width / 2 for p in positions], nodes_detached, width, label="h.detach() each batch")
ax.set_title("Size of the autograd graph behind each batch's loss")
ax.set_xlabel("batch")
ax.set_ylabel("graph nodes")
ax.set_xticks(positions)
_ = ax.legend()

# %%
# Takeaway
# --------
#
# **Backward frees what the graph saved; if you need a second backward, first ask why.**
# Two losses on one forward: add them and backward once, or recompute the forward after an
# optimizer step (detach what one network must not train).
# State carried across batches: ``detach()`` it every batch; ``retain_graph=True`` is almost never
# the fix.

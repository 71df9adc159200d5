"""
.. _call-module-not-forward:

``model.forward(x)`` instead of ``model(x)``: forward hooks do not run
======================================================================

A forward hook that records activations, for a feature extractor or a visualisation, stays
silent: its list of activations is empty, and no error says why.
The model computes the right output all the same.
The cause is one call: ``model.forward(x)`` runs the forward method alone, while ``model(x)``
runs it *and* the hooks registered on the module.

.. admonition:: What you will learn

   * ``model.forward(x)`` skips the module's hooks; ``model(x)`` runs them around ``forward``;
   * under DDP, going around the wrapper (``ddp_model.module(x)``) leaves the gradients of the
     ranks unaveraged, silently;
   * the fix: call the module, ``model(x)``, and its submodules, ``self.block(x)``.

.. admonition:: Prerequisites

   Building a model from :class:`torch.nn.Module` subclasses;
   :ref:`modulelist-vs-list` (what a module registers).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.run_ranks`.
"""

# %%
# The symptom
# -----------
#
# A small network, and a forward hook on it that records each output it sees, as code that
# extracts features does.
# The hook counts its calls.
import torch
from torch import nn

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


model = Net().to(device)
activations = []


def record(module, inputs, output):
    activations.append(output.detach())


handle = model.register_forward_hook(record)
x = torch.randn(3, 4, device=device)
out = model.forward(x)  # the mistake
print("output shape:", tuple(out.shape), "| hook calls:", len(activations))
assert out.shape == (3, 2) and len(activations) == 0

# %%
# **The forward ran and returned its output, but the hook was never called.**
# Calling the module itself runs it:

out = model(x)
print("output shape:", tuple(out.shape), "| hook calls:", len(activations))
assert len(activations) == 1 and torch.equal(activations[0], out.detach())

# %%
# Only the hooks of the module whose ``forward`` is called directly are skipped: its forward calls
# its submodules as ``self.body(x)``, so a hook on ``model.body`` still runs.

inner = []
body_handle = model.body.register_forward_hook(lambda module, inputs, output: inner.append(1))
model.forward(x)
print("hook on model.body, calls after model.forward(x):", len(inner))
assert len(inner) == 1
body_handle.remove()

# %%
# Why
# ---
#
# **nn.Module.__call__ runs the module's hooks around forward; forward is only the computation.**
# ``model(x)`` calls ``nn.Module.__call__``, which runs the forward pre-hooks
# (:meth:`~torch.nn.Module.register_forward_pre_hook`), then ``forward``, then the forward hooks
# (:meth:`~torch.nn.Module.register_forward_hook`), and sets up the backward hooks
# (:meth:`~torch.nn.Module.register_full_backward_hook`).
# ``model.forward(x)`` is an ordinary method call: none of that happens.
# A log of the calls shows the order:

log = []


class LoggedNet(Net):
    def forward(self, x):
        log.append("forward")
        return super().forward(x)


logged = LoggedNet().to(device)
logged.register_forward_pre_hook(lambda module, inputs: log.append("pre-hook"))
logged.register_forward_hook(lambda module, inputs, output: log.append("hook"))
logged(x)
called = list(log)
log.clear()
logged.forward(x)
print("logged(x):        ", called)
print("logged.forward(x):", log)
assert called == ["pre-hook", "forward", "hook"] and log == ["forward"]

# %%
# The fix
# -------
#
# **Call the module, model(x), never model.forward(x).**
# Inside a module's own ``forward``, call the submodules the same way, ``self.body(x)``.
# ``super().forward(x)`` in a subclass's ``forward`` is fine: the hooks already ran around the
# outer call.

activations.clear()
for _ in range(3):
    model(x)
print("hook calls after three model(x):", len(activations))
assert len(activations) == 3
handle.remove()

# %%
# Under DDP: gradients that are never averaged
# --------------------------------------------
#
# :class:`~torch.nn.parallel.DistributedDataParallel` (DDP) averages the gradients of all ranks
# during backward, and its own ``forward`` is what prepares that for the coming backward.
# Code that reaches past the wrapper — ``ddp_model.module(x)``, or a method of the wrapped model
# such as a loss or a generation step — runs the model without it: backward then computes each
# rank's own gradients and averages nothing, and every rank steps with different gradients.
# Two ranks of a gloo process group on this machine, each with its own batch (every input equal
# to its rank + 1), compare the gradient of one weight
# (:func:`~torch_pitfalls.run_ranks` starts the ranks):

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import run_ranks


def gradients_per_call(rank, world_size):
    """One weight's gradient on this rank after a backward through each way of calling."""
    torch.manual_seed(0)
    ddp_model = DDP(nn.Linear(4, 2))  # CPU tensors and gloo, whatever the page's device
    batch = torch.full((3, 4), float(rank + 1))
    calls = {
        "ddp_model.module(x)": lambda: ddp_model.module(batch),
        "ddp_model(x)": lambda: ddp_model(batch),
        "ddp_model.forward(x)": lambda: ddp_model.forward(batch),
    }
    found = {}
    for name, call in calls.items():
        ddp_model.zero_grad()
        call().sum().backward()
        found[name] = ddp_model.module.weight.grad[0, 0].item()
    found["backend"] = dist.get_backend()
    return found


per_rank = run_ranks(gradients_per_call, world_size=2)
print("backend:", per_rank[0]["backend"])
for name in ("ddp_model.module(x)", "ddp_model(x)", "ddp_model.forward(x)"):
    print(f"{name:22} gradient on rank 0, rank 1:", [found[name] for found in per_rank])
assert [found["ddp_model.module(x)"] for found in per_rank] == [3.0, 6.0]  # each rank its own
assert [found["ddp_model(x)"] for found in per_rank] == [4.5, 4.5]  # the average of 3 and 6
assert [found["ddp_model.forward(x)"] for found in per_rank] == [4.5, 4.5]

# %%
# **Bypassing the DDP wrapper gives each rank its own gradient, silently: the replicas drift
# apart, and a checkpoint saved by rank 0 holds a model trained on one rank's data.**
# Calling the wrapper's ``forward`` directly still averages, because DDP does that work inside
# its ``forward`` rather than in a hook; the mistake under DDP is going *around* the wrapper.
# Call ``ddp_model(...)`` for every forward pass that leads to a backward; for a second method
# that needs gradients, make it part of ``forward`` (a mode argument) so that it goes through
# the wrapper.
#
# A real-world report: reinforcement-learning trainers that bypassed DDP
# ----------------------------------------------------------------------
#
# In a popular small-LLM training project, the supervised trainers called the DDP-wrapped model,
# but the reinforcement-learning trainers (GRPO, PPO and an agent trainer) unwrapped it and ran
# their loss's forward pass through ``.module``; a contributor found that the ranks therefore
# never averaged their gradients and diverged without any error, and routed the forward back
# through the wrapper (`minimind pull request 854 <https://github.com/jingyaogong/minimind/pull/854>`_).
#
# Detectors
# ---------
#
# Two rules detect this pitfall in your own code (see :doc:`/detectors`): the runtime guard
# ``TP016`` (the ``forward`` of a module with forward hooks called directly, from outside any
# module call, when that forward calls a submodule) and ``TP110`` of the static checker
# (``.forward(...)`` called on a variable, or a ``self.<attr>``, assigned a module in the same
# scope or in ``__init__``).

from torch_pitfalls.lint import check_source

handle = model.register_forward_hook(record)
with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP016 "):
        model.forward(x)
with guards(language="en") as fixed:
    model(x)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP016"] and fixed.ids == []
handle.remove()

wrong_code = """
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
out = model.forward(x)
"""
fixed_code = wrong_code.replace("model.forward(x)", "model(x)")
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [f.rule for f in static["wrong"]] == ["TP110"] and static["fixed"] == []

# %%
# Takeaway
# --------
#
# **Call a module as model(x): model.forward(x) computes the same output but skips every hook
# registered on the module.**
# When a hook seems never to fire, look for a ``.forward(`` call.

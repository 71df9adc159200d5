"""``TP014``: evaluation that records an unused graph.

.. rubric:: What it does

Warns when a model in eval mode runs with gradients enabled, its output has a graph, and no
backward used that graph (reached its output, or an input that requires grad) before the next
optimizer step or the end of the guards, nor the graph of any other forward from the same line
since the last step. Reported at the line that called the model.

.. rubric:: Why is this bad?

The evaluation records a graph nobody uses: it keeps every intermediate activation alive, which
costs memory and time.

.. rubric:: Example

.. code-block:: python

    model.eval()
    predictions = model(x).argmax(1)

.. rubric:: Use instead

.. code-block:: python

    model.eval()
    with torch.no_grad():
        predictions = model(x).argmax(1)
"""

from __future__ import annotations

from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP014",
    "guard",
    "no-grad-evaluation",
    "evaluation that records an unused graph",
    "评估时记录了无用的计算图",
    "a model in eval mode ran with gradients enabled, and no backward used the graph it "
    "recorded: evaluate under torch.no_grad() (or torch.inference_mode()) to save that memory "
    "and time",
    "评估模式下的模型在启用梯度时运行，而它记录的计算图没有被任何反向传播用到：应在 "
    "torch.no_grad()（或 torch.inference_mode()）下评估，以省下这部分内存和时间",
    on=("evaluation settled",),
)


def settled(guards, records, optimizer) -> None:
    """The eval-mode forwards since the last step: flag those whose graph no backward used."""
    used_places = {record.place for record in records if record.used[0]}
    for record in records:
        if not record.used[0] and record.place not in used_places:
            guards.flag(RULE.id, record.place)

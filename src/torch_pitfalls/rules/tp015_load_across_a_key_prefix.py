"""``TP015``: state dict loaded with strict=False across a key prefix.

.. rubric:: What it does

Warns when ``load_state_dict(strict=False)`` leaves keys missing whose unexpected counterparts
differ only by a wrapper's prefix (``module.`` of ``DataParallel``/DDP, ``_orig_mod.`` of
``torch.compile``), added or removed.

.. rubric:: Why is this bad?

Those weights were not loaded: the model keeps its initial values, and ``strict=False`` hid the
error that would have said so.

.. rubric:: Example

.. code-block:: python

    model.load_state_dict(torch.load("ddp_checkpoint.pt"), strict=False)

.. rubric:: Use instead

.. code-block:: python

    state = torch.load("ddp_checkpoint.pt")
    consume_prefix_in_state_dict_if_present(state, "module.")
    model.load_state_dict(state)
"""

from __future__ import annotations

from torch_pitfalls.rules import Returned, _rule

RULE = _rule(
    "TP015",
    "guard",
    "state-dict-prefix",
    "state dict loaded with strict=False across a key prefix",
    "以 strict=False 加载了只差键前缀的状态字典",
    "load_state_dict(strict=False) left keys missing whose unexpected counterparts differ "
    "only by a wrapper's prefix (module. or _orig_mod.), so those weights were not loaded: "
    "strip the prefix (consume_prefix_in_state_dict_if_present) and load strictly",
    "load_state_dict(strict=False) 留下了缺失的键，而与之对应的多余的键只多了或少了包装器的前缀"
    "（module. 或 _orig_mod.），这些权重并没有被加载：应去掉前缀"
    "（consume_prefix_in_state_dict_if_present）后以严格模式加载",
    on=(Returned("torch.nn.Module.load_state_dict"),),
)


_WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile


def returned(guards, result) -> None:
    """After ``load_state_dict``: missing keys that are unexpected ones with a prefix?"""
    if _prefix_only_difference(result.missing_keys, result.unexpected_keys):
        guards.flag(RULE.id)


def _prefix_only_difference(missing, unexpected) -> bool:
    """Whether some missing key is an unexpected key with a wrapper's prefix added or removed
    (``0.weight`` missing, ``module.0.weight`` unexpected; or the other way round)."""
    if not missing or not unexpected:
        return False
    missing, unexpected = set(missing), set(unexpected)
    for prefix in _WRAPPER_PREFIXES:
        for have, want in ((unexpected, missing), (missing, unexpected)):
            if any(k.startswith(prefix) and k[len(prefix) :] in want for k in have):
                return True
    return False

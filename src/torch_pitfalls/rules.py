"""The detectors' registry: one table of every rule, for the runtime guards and the static checker.

Each :class:`Rule` has a stable id, a kind, a title and a message in English and Simplified
Chinese, and the slug of the page that explains the pitfall. The guards
(:mod:`torch_pitfalls.guards`), the checker (:mod:`torch_pitfalls.lint`), the tests and the
"Detectors" page all read this table; nothing else lists rules.

This module imports only the standard library, so the checker runs without torch.

>>> rule("TP001").slug
'cross-entropy-expects-logits'
>>> page_url("functional-dropout", language="en", base_url="https://example.org/")
'https://example.org/en/auto_examples/modules/plot_functional_dropout.html'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torch_pitfalls.catalog import (  # noqa: F401  (the detectors' URLs, re-exported)
    BASE_URL,
    BASE_URL_ENV,
    LANGUAGE_ENV,
    LANGUAGES,
    page_path,
    resolve_language,
    site_url,
)
from torch_pitfalls.catalog import url as page_url

KINDS = ("guard", "note", "lint")
"""The kinds of rule. ``guard`` is a runtime check that warns with a
:class:`~torch_pitfalls.guards.PitfallWarning`, ``note`` a runtime check that adds a note (PEP 678)
to an error PyTorch raises, ``lint`` a static check of source code (:mod:`torch_pitfalls.lint`)."""


@dataclass(frozen=True)
class Rule:
    """One detector.

    Attributes:
        id: stable id, ``TP`` and three digits (``TP0xx`` runtime, ``TP1xx`` static); flake8
            accepts it as an error code.
        kind: one of :data:`KINDS`.
        slug: the page that explains the pitfall (a page of :mod:`torch_pitfalls.catalog`).
        title: short name, by language (``{"en": ..., "zh_CN": ...}``).
        message: what was found and what to do, by language.
        default: ``False`` for an opt-in rule, which runs only when enabled by id.
    """

    id: str
    kind: str
    slug: str
    title: dict[str, str]
    message: dict[str, str]
    default: bool = True


def _rule(id, kind, slug, title_en, title_zh, message_en, message_zh, default=True) -> Rule:
    return Rule(id, kind, slug, {"en": title_en, "zh_CN": title_zh},
                {"en": message_en, "zh_CN": message_zh}, default)  # fmt: skip


RULES: tuple[Rule, ...] = (
    _rule(
        "TP001",
        "guard",
        "cross-entropy-expects-logits",
        "probabilities fed to cross-entropy",
        "把概率传给交叉熵",
        "cross_entropy received probabilities (every row is non-negative and sums to 1), such as "
        "a softmax output; it applies log-softmax itself, so pass the logits",
        "cross_entropy 收到的是概率（每行非负且和为 1），例如 softmax 的输出；"
        "它内部会先做 log-softmax，因此应直接传入 logits",
    ),
    _rule(
        "TP002",
        "guard",
        "cross-entropy-expects-logits",
        "non-negative input to NLL loss",
        "传给 NLL 损失的输入全部非负",
        "nll_loss received an input with no negative value; it expects log-probabilities "
        "(log_softmax output, all <= 0), not probabilities or logits",
        "nll_loss 收到的输入没有任何负值；它期望的是对数概率（log_softmax 的输出，全部 <= 0），"
        "而不是概率或 logits",
    ),
    _rule(
        "TP003",
        "guard",
        "train-eval-mode",
        "evaluation in train mode",
        "在训练模式下做评估",
        "a BatchNorm or Dropout module ran in train mode while gradients were disabled: call "
        "model.eval() before evaluating (model.train() after)",
        "在禁用梯度时，BatchNorm 或 Dropout 模块仍以训练模式运行：评估前应调用 model.eval()"
        "（评估后再调用 model.train()）",
    ),
    _rule(
        "TP004",
        "guard",
        "functional-dropout",
        "functional dropout active in eval mode",
        "评估模式下函数式 Dropout 仍然生效",
        "F.dropout ran with training=True inside a module in eval mode: pass "
        "training=self.training, or use an nn.Dropout module",
        "F.dropout 在处于评估模式的模块中以 training=True 运行：应传入 "
        "training=self.training，或改用 nn.Dropout 模块",
    ),
    _rule(
        "TP005",
        "guard",
        "backward-step-zero-grad",
        "gradients of the previous step summed into the next",
        "上一步的梯度累加进下一步",
        "backward is adding to gradients left from before the last optimizer step: clear them "
        "once per step, with optimizer.zero_grad()",
        "backward() 正在把梯度累加到上一次优化器更新之前遗留的梯度上：每个训练步都应调用一次 "
        "optimizer.zero_grad() 清空梯度",
    ),
    _rule(
        "TP006",
        "guard",
        "interpolate-batch-dim",
        "unbatched image passed to interpolate",
        "把不带批次维度的图像传给 interpolate",
        "F.interpolate received a 3-D tensor shaped like an image (C, H, W); it reads 3-D input "
        "as (N, C, L) and resizes only the last dimension: add a batch dimension with "
        "unsqueeze(0)",
        "F.interpolate 收到一个形如图像 (C, H, W) 的 3 维张量；它把 3 维输入当作 (N, C, L)，"
        "只缩放最后一维：应先用 unsqueeze(0) 加上批次维度",
    ),
    _rule(
        "TP007",
        "note",
        "tensor-to-numpy",
        "NumPy conversion of a tensor that requires grad",
        "把需要梯度的张量转换为 NumPy 数组",
        "a tensor that requires grad must leave the autograd graph first: use "
        "tensor.detach().cpu().numpy()",
        "需要梯度的张量必须先脱离计算图：应使用 tensor.detach().cpu().numpy()",
    ),
    _rule(
        "TP008",
        "note",
        "tensor-to-numpy",
        "NumPy conversion of a CUDA tensor",
        "把 CUDA 张量转换为 NumPy 数组",
        "NumPy arrays live in CPU memory: copy the tensor first with tensor.cpu() (and "
        "detach() it if it requires grad)",
        "NumPy 数组位于 CPU 内存中：应先用 tensor.cpu() 把张量复制到 CPU"
        "（若它需要梯度，还要 detach()）",
    ),
    _rule(
        "TP009",
        "note",
        "inplace-saved-tensor",
        "in-place modification of a tensor saved for backward",
        "原地修改了为反向传播保存的张量",
        "an operation modified in place a tensor that autograd saved for the backward pass: "
        "use the out-of-place form (x = x * 2, not x.mul_(2)) or clone() first",
        "某个操作原地修改了自动求导为反向传播保存的张量：应改用非原地写法（x = x * 2，而不是 "
        "x.mul_(2)），或先 clone()",
    ),
    _rule(
        "TP010",
        "guard",
        "data-vs-detach",
        "in-place edit behind autograd's back",
        "绕过自动求导的原地修改",
        "a tensor saved for backward was changed through .data or a NumPy view, which autograd "
        "cannot see, so the gradient is computed from the changed values: edit a copy made with "
        "detach().clone(), or do it under torch.no_grad() on the tensor itself",
        "为反向传播保存的张量经由 .data 或 NumPy 视图被修改，自动求导无从察觉，"
        "梯度会按修改后的值计算：应修改 detach().clone() 得到的副本，"
        "或在 torch.no_grad() 下直接修改张量本身",
        default=False,
    ),
    _rule(
        "TP011",
        "guard",
        "bce-with-logits",
        "cross-entropy over a single output unit",
        "对单个输出单元做交叉熵",
        "cross_entropy received one class (C == 1): a softmax over one class is always 1, so the "
        "loss is always 0 and nothing is learned; for two classes use one output with "
        "BCEWithLogitsLoss, or two outputs with cross_entropy",
        "cross_entropy 只收到一个类别（C == 1）：对一个类别做 softmax 恒为 1，损失恒为 0，"
        "模型什么也学不到；二分类应使用单个输出配 BCEWithLogitsLoss，或两个输出配 cross_entropy",
    ),
    _rule(
        "TP012",
        "guard",
        "requires-grad-propagation",
        "optimizer step without any gradient",
        "没有任何梯度的优化器更新",
        "optimizer.step() ran while no parameter it holds had a gradient, so it changed nothing: "
        "the parameters are frozen, or the loss does not depend on them (a loss.requires_grad_() "
        'added to silence "element 0 of tensors does not require grad" hides that)',
        "optimizer.step() 运行时，它持有的参数没有一个有梯度，因此什么也没改变：参数被冻结了，"
        '或者损失与它们无关（为压下 "element 0 of tensors does not require grad" 而加上的 '
        "loss.requires_grad_() 会掩盖这一点）",
    ),
    _rule(
        "TP013",
        "guard",
        "train-eval-mode",
        "training a model left in eval mode",
        "训练仍处于评估模式的模型",
        "an optimizer step used gradients of a forward pass of a model in eval mode whose Dropout "
        "or BatchNorm layers were switched off by eval(): call model.train() after evaluating",
        "优化器更新所用的梯度来自一次评估模式下的前向传播，其中的 Dropout 或 BatchNorm 层已被 "
        "eval() 切换为评估行为：评估结束后应调用 model.train()",
    ),
    _rule(
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
    ),
    _rule(
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
    ),
)
"""The rules, in id order. The runtime ones are listed here; each static one is declared in its
own module of :mod:`torch_pitfalls.checks`, which is its home."""

from torch_pitfalls import checks as _checks  # noqa: E402 (the modules import Rule from here)

for _module in _checks.modules():
    RULES += (_module.RULE,)
RULES = tuple(sorted(RULES, key=lambda r: r.id))

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with this id.

    Raises:
        KeyError: no rule has this id; the message lists the known ids.
    """
    try:
        return _BY_ID[rule_id]
    except (KeyError, TypeError):
        raise KeyError(f"unknown rule id {rule_id!r}; known: {', '.join(_BY_ID)}") from None


def rules_for(slug: str, kind: str | None = None) -> list[Rule]:
    """The rules that point to the page ``slug`` (of one kind, if given), in id order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return [r for r in RULES if r.slug == slug and (kind is None or r.kind == kind)]


def check_ids(ids, *, what: str = "rule id") -> frozenset[str]:
    """Validate an iterable of rule ids (a single string is one id); return them as a set.

    Raises:
        KeyError: an id is unknown.
    """
    if isinstance(ids, str):
        ids = [ids]
    out = frozenset(ids)
    for rule_id in out:
        if rule_id not in _BY_ID:
            raise KeyError(f"unknown {what} {rule_id!r}; known: {', '.join(_BY_ID)}")
    return out


def localize(text: str, language: str) -> str:
    """``text`` with every English finding message (:func:`describe`), and every note on a message
    of PyTorch (:data:`torch_pitfalls.messages.NOTE`), rewritten in ``language``.

    The docs build runs each page once, with English messages, and shows its output in both
    languages; on a Chinese page the messages, and the language of their page URLs, are Chinese.
    Anything else in ``text`` is left as it is.

    Raises:
        ValueError: ``language`` is not a site language.

    >>> english = describe("TP102", language="en", base_url="https://x.org")
    >>> localize(f"PitfallWarning: {english}", "zh_CN")  # doctest: +ELLIPSIS
    'PitfallWarning: TP102 F.dropout 及同类函数默认 training=True...→ https://x.org/zh_CN/auto_examples/...'
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    if language == "en" or " → " not in text:
        return text
    for found in RULES:
        pattern = re.compile(
            re.escape(f"{found.id} {found.message['en']} → ") + r"(\S+?)/en/(auto_examples/\S+)"
        )
        replacement = f"{found.id} {found.message[language]} → \\1/{language}/\\2"
        text = pattern.sub(lambda m, r=replacement: m.expand(r), text)
    from torch_pitfalls.messages import NOTE  # imported here: messages imports this module

    pattern = re.compile(re.escape(f"{NOTE['en']} → ") + r"(\S+?)/en/(auto_examples/\S+)")
    replacement = f"{NOTE[language]} → \\1/{language}/\\2"
    return pattern.sub(lambda m: m.expand(replacement), text)


def describe(rule_id: str, *, language: str | None = None, base_url: str | None = None) -> str:
    """The full message of a finding: ``"ID message → URL"`` in the chosen language.

    >>> describe("TP102", language="en", base_url="https://x.org")  # doctest: +ELLIPSIS
    'TP102 F.dropout and its family default to training=True, ... → https://x.org/en/...html'
    """
    found = rule(rule_id)
    lang = resolve_language(language)
    url = page_url(found.slug, language=lang, base_url=base_url)
    return f"{found.id} {found.message[lang]} → {url}"

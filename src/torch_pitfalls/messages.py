"""PyTorch's own error and warning messages, each mapped to the page of this site that explains it.

One table, :data:`MESSAGES`, lists every error and warning of PyTorch that a page of the site
shows (with :func:`~torch_pitfalls.expect_raises` or :func:`~torch_pitfalls.expect_warns`): the
class of the exception or warning, a regular expression that PyTorch's message matches, and the
page's slug. The runtime guards (:mod:`torch_pitfalls.guards`) add a note with the page's URL
to a matching error (PEP 678), and issue a :class:`~torch_pitfalls.guards.PitfallWarning` with
the URL after a matching warning; an index of errors in the docs can be built from the same table.

This module imports only the standard library and :mod:`torch_pitfalls.rules` (no torch), so that
the docs build and the static checker can read it. ``tests/test_messages.py`` makes PyTorch raise
or warn each message, and checks that every message the pages assert has an entry here.

>>> find("RuntimeError", "element 0 of tensors does not require grad and does not have a grad_fn")
... # doctest: +ELLIPSIS
Message(kind='error', category='RuntimeError', pattern='element 0 of tensors does not ...
>>> find("UserWarning", "something else") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torch_pitfalls import rules as _rules

KINDS = ("error", "warning")
"""An entry is a PyTorch exception (``error``) or a warning (``warning``)."""


@dataclass(frozen=True)
class Message:
    """One of PyTorch's messages and the page that explains it.

    Attributes:
        kind: ``"error"`` or ``"warning"`` (:data:`KINDS`).
        category: the name of the exception or warning class PyTorch raises (``"RuntimeError"``,
            ``"UnpicklingError"``, ``"UserWarning"``), or an alternation of names
            (``"(IndexError|RuntimeError)"``); a subclass's name does not match.
        pattern: a regular expression searched (:func:`re.search`) in the message.
        slug: the page that explains it, ``examples/<topic>/plot_<slug with underscores>.py``.
        topic: the page's gallery folder.
        rule: the id of a runtime rule of kind ``note`` whose message is the note, or ``""`` for
            the generic note (:data:`NOTE`).
    """

    kind: str
    category: str
    pattern: str
    slug: str
    topic: str
    rule: str = ""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "regex", re.compile(self.pattern))

    def url(self, *, language: str | None = None, base_url: str | None = None) -> str:
        """The URL of the page in ``language``, as :func:`torch_pitfalls.rules.page_url` builds
        it (the page need not be one that a rule points to).

        Raises:
            ValueError: ``language`` is not a site language, or the base URL is not a URL.
        """
        name = "plot_" + self.slug.replace("-", "_")
        language = _rules.resolve_language(language)
        return f"{_rules.site_url(base_url)}/{language}/auto_examples/{self.topic}/{name}.html"

    def matches(self, category: str, text: str) -> bool:
        """Whether a message of the class named ``category`` with this ``text`` is this entry."""
        names = self.category.strip("()").split("|")
        return category in names and self.regex.search(text) is not None


def _e(category, pattern, slug, topic, rule=""):
    return Message("error", category, pattern, slug, topic, rule)


def _w(category, pattern, slug, topic):
    return Message("warning", category, pattern, slug, topic)


MESSAGES: tuple[Message, ...] = (
    # autograd
    _e("AttributeError", r"'NoneType' object has no attribute 'zero_'", "backward-step-zero-grad",
       "autograd"),
    _e("RuntimeError", r"a leaf Variable that requires grad is being used in an in-place operation",
       "leaf-inplace-init", "autograd"),
    _e("ValueError", r"can't optimize a non-leaf Tensor", "leaf-inplace-init", "autograd"),
    _e("RuntimeError", r"modified by an inplace operation", "inplace-saved-tensor", "autograd",
       "TP009"),
    _e("RuntimeError", r"Trying to backward through the graph a second time", "retain-graph",
       "autograd"),
    _e("RuntimeError", r"element 0 of tensors does not require grad and does not have a grad_fn",
       "requires-grad-propagation", "autograd"),
    _e("RuntimeError", r"Inference tensors do not track version counter", "no-grad-evaluation",
       "autograd"),
    _e("RuntimeError", r"Inference tensors cannot be saved for backward", "no-grad-evaluation",
       "autograd"),
    _e("RuntimeError", r"Inplace update to inference tensor outside InferenceMode",
       "no-grad-evaluation", "autograd"),
    _w("UserWarning", r"volatile was removed and now has no effect", "no-grad-evaluation",
       "autograd"),
    _w("UserWarning", r"The \.grad attribute of a Tensor that is not a leaf Tensor is being "
       r"accessed", "non-leaf-grad", "autograd"),
    _e("RuntimeError", r"can't retain_grad on Tensor that has requires_grad=False", "non-leaf-grad",
       "autograd"),
    # devices and serialization
    _e("RuntimeError", r"Can't call numpy\(\) on Tensor that requires grad", "tensor-to-numpy",
       "devices", "TP007"),
    _e("TypeError", r"can't convert cuda.*numpy", "tensor-to-numpy", "devices", "TP008"),
    _e("UnpicklingError", r"Weights only load failed", "torch-load-weights-only", "devices"),
    _w("FutureWarning", r"You are using `torch\.load` with `weights_only=False`",
       "torch-load-weights-only", "devices"),  # 2.4 and 2.5
    _e("RuntimeError", r"Expected all tensors to be on the same device", "device-agnostic-code",
       "devices"),
    _e("RuntimeError", r"is not on the expected device", "device-agnostic-code", "devices"),
    _e("RuntimeError", r"a Tensor with \d+ elements cannot be converted to Scalar",
       "item-and-tolist", "devices"),
    _e("RuntimeError", r"Error\(s\) in loading state_dict", "state-dict-prefix", "serialization"),
    _e("TypeError", r"RNG state must be a torch\.ByteTensor", "resume-training", "serialization"),
    # losses
    # "expected scalar type Long but found Float" up to PyTorch 2.11
    _e("RuntimeError", r"expected target dtype to be Long or Byte|expected scalar type Long but "
       r"found", "cross-entropy-expects-logits", "losses"),
    _e("IndexError", r"Target -?\d+ is out of bounds", "cross-entropy-expects-logits", "losses"),
    _e("RuntimeError", r"unsafe to autocast", "bce-with-logits", "losses"),
    _w("UserWarning", r"Using a target size \(.*\) that is different to the input size",
       "mse-broadcasting", "losses"),
    _e("RuntimeError", r"is not differentiable with respect to argument 'target'",
       "loss-targets-and-kl", "losses"),
    _w("UserWarning", r"reduction: 'mean' divides the total loss by both the batch size and the "
       r"support size", "loss-targets-and-kl", "losses"),
    # modules
    _e("ValueError", r"Expected more than 1 value per channel when training", "train-eval-mode",
       "modules"),
    _e("RuntimeError", r"`lengths` array must be sorted in decreasing order",
       "pack-padded-sequence", "modules"),
    _e("RuntimeError", r"'lengths' argument should be a 1D CPU int64 tensor",
       "pack-padded-sequence", "modules"),
    _e("RuntimeError", r"Expected hidden size \(.*\), got \[.*\]", "rnn-hidden-batch-first",
       "modules"),
    _e("NotImplementedError", r'is missing the required "forward" function', "modulelist-vs-list",
       "modules"),
    _e("AttributeError", r"module 'torch\.nn' has no attribute 'Buffer'", "register-buffer",
       "modules"),  # 2.4
    # optimizers
    _w("UserWarning", r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`",
       "scheduler-step-order", "optim"),
    _e("ValueError", r"Tried to step \d+ times\. The specified number of total steps is \d+",
       "scheduler-step-order", "optim"),
    _e("ValueError", r"optimizer got an empty parameter list", "params-generator-exhausted",
       "optim"),
    _e("TypeError", r"unexpected keyword argument 'decoupled_weight_decay'", "adam-vs-adamw",
       "optim"),  # 2.6 and older
    _w("UserWarning", r"`parameters` is an empty generator, no gradient clipping will occur",
       "params-generator-exhausted", "optim"),
    _e("ValueError", r"some parameters appear in more than one parameter group",
       "params-not-in-optimizer", "optim"),
    _e("RuntimeError", r"expected dtype \w+ for `end` but got dtype \w+", "params-not-in-optimizer",
       "optim"),
    _e("RuntimeError", r"unscale_\(\) has already been called on this optimizer",
       "amp-unscale-before-clip", "amp"),
    # tensors
    _e("RuntimeError", r"view size is not compatible with input tensor's size and stride",
       "view-noncontiguous", "tensors"),
    _e("ValueError", r"spatial dimensions of \[.*\] and output size of", "interpolate-batch-dim",
       "tensors", "TP006"),
    _e("NotImplementedError", r"Got 3D input, but \w+ mode needs 4D input",
       "interpolate-batch-dim", "tensors", "TP006"),
    _e("NotImplementedError", r"Only 3D, 4D and 5D input Tensors supported",
       "interpolate-batch-dim", "tensors"),
    _w("UserWarning", r"`nn\.functional\.upsample` is deprecated", "interpolate-batch-dim",
       "tensors"),
    _w("UserWarning", r"Default grid_sample and affine_grid behavior has changed",
       "align-corners", "tensors"),
    _e("RuntimeError", r"more than one element of the written-to tensor refers to a single memory "
       r"location", "expand-inplace-write", "tensors"),
    _w("UserWarning", r"on expanded tensors is deprecated", "expand-inplace-write", "tensors"),
    _w("UserWarning", r"Implicit dimension choice for \w+ has been deprecated", "softmax-dim",
       "tensors"),
    # up to PyTorch 2.12: "softmax() received an invalid combination of arguments"
    _e("TypeError", r'softmax\(\) (missing 1 required positional arguments: "dim"|received an '
       r"invalid combination of arguments)", "softmax-dim", "tensors"),
    _e("RuntimeError", r"Expected dtype int32 or int64 for index", "index-select", "tensors"),
    _e("IndexError", r"Index is supposed to be (an empty tensor or )?a vector", "index-select",
       "tensors"),
    _e("IndexError", r"index out of range in self", "index-select", "tensors"),
    _e("RuntimeError", r"INDICES element is out of DATA bounds", "index-select", "tensors"),
    _e("(IndexError|RuntimeError)", r"index -?\d+ is out of bounds for dimension \d+ with size \d+",
       "index-select", "tensors"),
    _e("TypeError", r"new\(\) received an invalid combination of arguments",
       "legacy-tensor-constructor", "tensors"),
    _e("TypeError", r"new\(\): data must be a sequence", "legacy-tensor-constructor", "tensors"),
    _e("RuntimeError", r"legacy constructor expects device type", "legacy-tensor-constructor",
       "tensors"),
    # up to PyTorch 2.6 the warning recommends sourceTensor.clone().detach()
    _w("UserWarning", r"To copy construct from a tensor, it is recommended to use "
       r"sourceTensor\.(detach\(\)\.clone|clone\(\)\.detach)\(\)", "legacy-tensor-constructor",
       "tensors"),
    # numerics, data, performance, distributed
    _e("RuntimeError", r"Function '\w+' returned nan values in its \d+\w* output",
       "nan-grad-masked-branch", "numerics"),
    _e("RuntimeError", r"mat1 and mat2 (must|to) have the same dtype", "float64-creep", "data"),
    _e("RuntimeError", r"Found dtype Double but expected Float", "float64-creep", "data"),
    _w("UserWarning", r"Length of IterableDataset .* was reported to be \d+",
       "iterable-dataset-duplicates", "data"),
    _e("RuntimeError", r"Cannot access accelerator device when none is available",
       "non-blocking-copy", "performance"),
    _w("UserWarning", r"'pin_memory' argument is set as true but no accelerator is found",
       "non-blocking-copy", "performance"),
    _e("RuntimeError", r"does not have a deterministic implementation", "cuda-nondeterminism",
       "performance"),
    _w("UserWarning", r"does not have a deterministic implementation", "cuda-nondeterminism",
       "performance"),
    _e("RuntimeError", r"Expected to have finished reduction in the prior iteration",
       "ddp-unused-parameters", "distributed"),
    _e("ValueError", r"Default process group has not been initialized", "sampler-set-epoch",
       "distributed"),
    _e("ValueError", r"sampler option is mutually exclusive with shuffle", "sampler-set-epoch",
       "distributed"),
)  # fmt: skip
"""Every entry, grouped by topic. The first entry that matches a message is its entry."""

NOTE = {
    "en": "torch-pitfalls: this message of PyTorch is explained, with its fix, on the page",
    "zh_CN": "torch-pitfalls：这条 PyTorch 消息的原因和修正方法见页面",
}
"""The generic note (and warning) text, followed by ``" → "`` and the page's URL, by language."""


NOT_PYTORCH: tuple[tuple[str, str, str], ...] = (
    (
        "IndexError",
        r"indices must be in \[\d+, \d+\) for dim \d+, got",
        "the index-select page's own helper",
    ),
)
"""Messages that a page prints but that are not PyTorch's (nor Python's for a PyTorch
pitfall): ``(class name, regular expression, why)``. The docs' error index leaves them out."""


def not_pytorchs(category: str, text: str) -> bool:
    """Whether a message of class ``category`` is one of :data:`NOT_PYTORCH`.

    >>> not_pytorchs("IndexError", "indices must be in [0, 3) for dim 0, got 0..5")
    True
    """
    return any(category == name and re.search(pattern, text) for name, pattern, _ in NOT_PYTORCH)


def find(category: str, text: str, kind: str | None = None) -> Message | None:
    """The first entry for a message of class ``category`` (its name) and ``text``, or None.

    ``category`` is the class's ``__name__``; an entry whose ``category`` is written as an
    alternation (``"(IndexError|RuntimeError)"``) accepts each name.

    Raises:
        ValueError: ``kind`` is given and is not one of :data:`KINDS`.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    for entry in MESSAGES:
        if kind is not None and entry.kind != kind:
            continue
        if entry.matches(category, text):
            return entry
    return None

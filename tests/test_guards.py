"""The runtime guards (src/torch_pitfalls/guards/): what the rules' fixtures cannot show.

Whether each rule fires on its pitfall and stays silent on the fix and on the known legitimate
cases is checked by tests/rules/test_rule_fixtures.py, on each device (tests/rules/fixtures/
tp0NN_*.py). Here: messages and their language, the places and counts of warnings, allow= and
warning filters, strict mode, the runner, notes on PyTorch's own errors and warnings, no computed
value changed, nothing left behind."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import pickle
import re
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks
from torch.overrides import _get_current_function_mode_stack

import torch_pitfalls
from torch_pitfalls import guards as guards_module
from torch_pitfalls import rules
from torch_pitfalls.guards import Guards, PitfallError, PitfallWarning, allow


def run(*watched, enable=(), **options):
    """A guard that records and never prints (the tests read ``found``)."""
    options.setdefault("language", "en")
    return torch_pitfalls.guards(*watched, enable=enable, **options)


@pytest.fixture(autouse=True)
def _quiet_and_clean():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PitfallWarning)
        yield
    assert not module_hooks._global_forward_pre_hooks
    assert not module_hooks._global_forward_hooks
    assert not optimizer_hooks._global_optimizer_post_hooks
    assert not _get_current_function_mode_stack()
    assert all(item is not guards_module._FILTER for item in warnings.filters)
    assert warnings._showwarnmsg is not guards_module._show
    assert warnings.warn is not guards_module._warn


def found(guard: Guards) -> list[str]:
    return [f.rule_id for f in guard.found]


# -- losses: TP001 ---------------------------------------------------------------------------------


def test_each_place_warns_once_however_often_it_runs():
    probs = torch.full((2, 2), 0.5)
    target = torch.tensor([0, 1])
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with run() as guard:
            for _ in range(5):
                F.cross_entropy(probs, target)
            F.cross_entropy(probs, target)  # another line: another finding
    assert found(guard) == ["TP001", "TP001"]
    assert len([w for w in shown if issubclass(w.category, PitfallWarning)]) == 2
    first = guard.found[0]
    assert first.filename == __file__ and first.lineno > 0
    assert str(shown[0].message) == first.message == guard.message("TP001")
    assert shown[0].filename == __file__  # the warning points at the user's line


# -- modules: TP003, TP004 -------------------------------------------------------------------------


def small_net(dropout=0.5):
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(dropout), nn.Linear(8, 2))


def test_monte_carlo_dropout_is_allowed_for_a_block():
    batch = torch.randn(8, 4)
    dropout_only = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))
    with run(dropout_only) as monte_carlo, torch.no_grad(), allow("TP003"):
        torch.stack([dropout_only(batch) for _ in range(5)])
    with run(dropout_only) as allowed_for_the_block, torch.no_grad():
        pass
    assert found(monte_carlo) == found(allowed_for_the_block) == []


def test_only_the_watched_modules_are_checked():
    watched, other = small_net(), small_net()
    with run(watched) as guard, torch.no_grad():
        other(torch.randn(4, 4))
    assert found(guard) == []
    with run() as everything, torch.no_grad():
        other(torch.randn(4, 4))
    assert found(everything) == ["TP003"]


class FunctionalDropout(nn.Module):
    """F.dropout without training=: still on in eval mode (TP004)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return F.dropout(self.fc(x), 0.5)


def test_functional_dropout_in_two_modules_is_one_finding_at_the_line_of_forward():
    x = torch.randn(2, 4)
    with run(allow=["TP014"]) as wrong:  # evaluations under grad mode: not TP014's case here
        FunctionalDropout().eval()(x)
        FunctionalDropout().eval()(x)  # the same line of forward: no second finding
    assert found(wrong) == ["TP004"]


# -- notes on PyTorch's own errors: TP007, TP008, TP009 --------------------------------------------


def test_notes_on_numpy_conversion_of_a_tensor_that_requires_grad():
    weights = torch.ones(3, requires_grad=True)
    with run() as guard:
        with pytest.raises(RuntimeError, match="requires grad") as caught:
            weights.numpy()
        with pytest.raises(RuntimeError, match="requires grad") as caught_array:
            np.asarray(weights)
        weights.detach().numpy()
    assert caught.value.__notes__ == [guard.message("TP007")]
    assert caught_array.value.__notes__ == [guard.message("TP007")]
    assert found(guard) == ["TP007", "TP007"]


@pytest.mark.cuda
def test_notes_on_numpy_conversion_of_a_cuda_tensor():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    with run() as guard:
        with pytest.raises(TypeError, match="cuda") as caught:
            torch.ones(3, device="cuda").numpy()
        torch.ones(3, device="cuda").cpu().numpy()
    assert caught.value.__notes__ == [guard.message("TP008")]
    assert found(guard) == ["TP008"]


def test_notes_on_an_inplace_change_of_a_saved_tensor(device):
    x = torch.ones(4, device=device, requires_grad=True)
    with run() as guard:
        gate = x.sigmoid()
        gate.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as caught:
            gate.sum().backward()
        y = x.sigmoid() * 2
        y.sum().backward()
    assert caught.value.__notes__ == [guard.message("TP009")]
    assert found(guard) == ["TP009"]


def test_other_errors_get_no_note():
    with run() as guard, pytest.raises(RuntimeError) as caught:
        torch.ones(2, 3) @ torch.ones(2, 3)
    assert not hasattr(caught.value, "__notes__")
    assert found(guard) == []


# -- PyTorch's own messages: notes and pointers from the registry (messages.py) -------------------


def note_of(guard: Guards, slug: str) -> str:
    (entry,) = {m.slug: m for m in torch_pitfalls.messages.MESSAGES if m.slug == slug}.values()
    url = entry.url(language=guard.language)
    return f"{torch_pitfalls.messages.NOTE[guard.language]} → {url}"


def leaf_in_place():
    torch.ones(2, requires_grad=True).add_(1)


def backward_without_graph():
    torch.ones(2).sum().backward()


def backward_twice():
    y = torch.ones(2, requires_grad=True).exp().sum()
    y.backward()
    y.backward()


def optimize_a_non_leaf():
    torch.optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=0.1)


def load_a_whole_model():
    buffer = io.BytesIO()
    torch.save(nn.Linear(2, 2), buffer)
    buffer.seek(0)
    torch.load(buffer)


@pytest.mark.parametrize(
    "fail, kind, slug",
    [
        (leaf_in_place, RuntimeError, "leaf-inplace-init"),
        (backward_without_graph, RuntimeError, "requires-grad-propagation"),
        (backward_twice, RuntimeError, "retain-graph"),
        (optimize_a_non_leaf, ValueError, "leaf-inplace-init"),
        (load_a_whole_model, pickle.UnpicklingError, "torch-load-weights-only"),
    ],
)
def test_pytorchs_errors_that_a_page_explains_get_a_note(fail, kind, slug):
    with pytest.raises(kind) as caught, run() as guard:
        fail()  # raised out of the block: noted on leaving it, if not by a torch function
    assert caught.value.__notes__ == [note_of(guard, slug)]
    assert found(guard) == []  # a note of the registry is not a finding of a rule
    with pytest.raises(kind) as caught, run(language="zh_CN") as chinese:
        fail()
    assert caught.value.__notes__ == [note_of(chinese, slug)]
    assert "/zh_CN/" in caught.value.__notes__[0]
    with pytest.raises(kind) as plain:
        fail()
    assert not hasattr(plain.value, "__notes__")  # without guards, nothing is added


def test_an_error_caught_inside_the_block_is_noted_by_the_torch_function():
    with run() as guard:
        try:
            backward_twice()
        except RuntimeError as error:
            caught = error
    assert caught.__notes__ == [note_of(guard, "retain-graph")]


@pytest.mark.parametrize("how", ["from", "during"])
def test_an_error_that_another_error_wraps_is_noted_when_the_wrapper_leaves(how):
    # a training framework catches the error and raises its own: the traceback prints both
    def step():
        try:
            leaf_in_place()  # an in-place operation: not a function the guards watch
        except RuntimeError as error:
            if how == "from":
                raise ValueError("the training step failed") from error
            raise ValueError("the training step failed")  # noqa: B904 (implicit chaining)

    with pytest.raises(ValueError) as caught, run() as guard:
        step()
    cause = caught.value.__cause__ if how == "from" else caught.value.__context__
    assert cause.__notes__ == [note_of(guard, "leaf-inplace-init")]
    assert not hasattr(caught.value, "__notes__")  # not one of PyTorch's messages


def test_an_error_of_an_unwatched_operation_caught_inside_the_block_has_no_note():
    # what the Detectors page says: at once only for the functions the guards watch
    with run():
        try:
            leaf_in_place()
        except RuntimeError as error:
            caught = error
    assert not hasattr(caught, "__notes__")


def test_each_message_gets_one_note_and_rules_keep_theirs():
    x = torch.ones(4, requires_grad=True)
    with run() as guard, pytest.raises(RuntimeError) as caught:
        gate = x.sigmoid()
        gate.mul_(2)
        gate.sum().backward()  # noted by the backward call, then seen again on leaving
    assert caught.value.__notes__ == [guard.message("TP009")]
    with run() as guard, pytest.raises(NotImplementedError) as caught:
        F.interpolate(torch.randn(8, 8), scale_factor=2)  # 2-D: not TP006's case, its page still
    assert caught.value.__notes__ == [note_of(guard, "interpolate-batch-dim")]
    assert found(guard) == []


def test_pytorchs_warnings_that_a_page_explains_are_followed_by_a_pointer():
    def warn():
        F.softmax(torch.zeros(2, 3))  # no dim: PyTorch's UserWarning

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with run() as guard:
            for _ in range(2):
                warn()  # the same line: one pointer
            F.mse_loss(torch.zeros(3), torch.zeros(3, 1))
    pairs = [(w.category, str(w.message)) for w in shown]
    softmax = "Implicit dimension choice for softmax has been deprecated"
    assert [c for c, _ in pairs] == [UserWarning, PitfallWarning, UserWarning, UserWarning,
                                     PitfallWarning]  # fmt: skip
    assert softmax in pairs[0][1] and pairs[1][1] == note_of(guard, "softmax-dim")
    assert pairs[4][1] == note_of(guard, "mse-broadcasting")
    assert {w.filename for w in shown if w.category is PitfallWarning} == {__file__}
    assert found(guard) == []
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        warn()
    assert [w.category for w in plain] == [UserWarning]


# -- new rules: TP011 to TP014 ---------------------------------------------------------------------


def frozen_training(hide: bool, steps: int = 1):
    torch.manual_seed(0)
    net = nn.Linear(4, 1).requires_grad_(False)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(steps):
        loss = F.mse_loss(net(torch.randn(8, 4)), torch.randn(8, 1))
        if hide:
            loss.requires_grad_()  # silences "element 0 of tensors does not require grad"
            loss.backward()
        optimizer.step()


def _state_dict_loads():
    """Load results of a prefixed state dict (DataParallel, torch.compile), the other way round,
    a partial load and a strict load: (missing, unexpected) keys of each, and the weights."""
    torch.manual_seed(0)
    trained = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    plain = trained.state_dict()
    results = []
    for state in (
        {f"module.{k}": v for k, v in plain.items()},
        {f"_orig_mod.{k}": v for k, v in plain.items()},
    ):
        target = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        results.append(target.load_state_dict(state, strict=False))
    wrapper = nn.DataParallel(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)))
    results.append(wrapper.load_state_dict(plain, strict=False))
    return [(r.missing_keys, r.unexpected_keys) for r in results]


def _good_loads():
    torch.manual_seed(0)
    trained = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    plain = trained.state_dict()
    grown = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2), nn.Linear(2, 3))
    partial = grown.load_state_dict(plain, strict=False)  # a new head: missing keys, on purpose
    backbone = {k: v for k, v in plain.items() if k.startswith("0.")}
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    head = other.load_state_dict(backbone, strict=False)
    exact = other.load_state_dict(plain)
    return [(r.missing_keys, r.unexpected_keys) for r in (partial, head, exact)]


def test_loads_across_a_wrapper_prefix_return_what_they_return_without_the_guards():
    with run():
        loads = _state_dict_loads()
    assert loads == _state_dict_loads()  # the same results without guards
    with run():
        fine = _good_loads()
    assert fine == _good_loads()
    assert fine[0] == (["3.weight", "3.bias"], [])


def test_a_strict_load_across_a_prefix_raises_with_the_page():
    target = nn.Sequential(nn.Linear(4, 4))
    state = {f"module.{k}": v for k, v in nn.Sequential(nn.Linear(4, 4)).state_dict().items()}
    with pytest.raises(RuntimeError) as raised, run() as guard:
        target.load_state_dict(state)
    assert found(guard) == []  # PyTorch's own error says it; the registry's note gives the page
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert rules.page_url("state-dict-prefix", language="en") in notes


def train_steps(net, steps=2, eval_first=True, frozen_batchnorm=False):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    if eval_first:
        net.eval()
        with torch.no_grad():
            net(x)  # an evaluation, correctly done...
    if frozen_batchnorm:
        net.train()
        for module in net.modules():
            if isinstance(module, nn.BatchNorm1d):
                module.eval()  # frozen on purpose, as detection fine-tuning does
    for _ in range(steps):  # ... but train() is never called again (unless frozen_batchnorm)
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
    return net


def test_the_hook_on_an_input_optimised_through_an_activation_is_removed_on_exit():
    torch.manual_seed(0)
    frozen_net = small_net().requires_grad_(False).eval()
    with run() as dream:  # DeepDream: an image optimised on an intermediate activation
        kept = {}
        handle = frozen_net[1].register_forward_hook(lambda m, i, out: kept.update(out=out))
        image = torch.randn(16, 4, requires_grad=True)
        image_optimizer = torch.optim.SGD([image], lr=0.1)
        for _ in range(2):
            image_optimizer.zero_grad()
            frozen_net(image)  # the output is not used, the activation is
            (-kept["out"].norm()).backward()
            image_optimizer.step()
        handle.remove()
    assert found(dream) == []
    assert not image._backward_hooks  # the guards' hook on the input is gone


def test_new_rules_change_no_computed_value():
    def session():
        torch.manual_seed(0)
        net = train_steps(small_net(), steps=3)  # TP013
        frozen_training(hide=True, steps=2)  # TP012
        logits = net(torch.randn(4, 4))  # TP014 (net is in eval mode)
        loss = F.cross_entropy(logits[:, :1], torch.zeros(4, dtype=torch.long))  # TP011
        return [t.detach().clone() for t in (*net.parameters(), *net.buffers(), logits, loss)]

    plain = session()
    with run() as guard:
        guarded = session()
    assert sorted(guard.ids) == ["TP011", "TP012", "TP013", "TP014"]
    for a, b in zip(plain, guarded, strict=True):
        assert torch.equal(a, b)


def test_a_freed_optimizer_takes_its_step_history_with_it():
    """TP012 keeps each optimizer's empty steps by the optimizer itself, not by its id(): a new
    optimizer that reuses a freed one's id must not inherit "has had gradients" (this made
    test_new_rules_change_no_computed_value flaky)."""
    import gc

    with run() as guard:
        net = nn.Linear(2, 1)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        net(torch.ones(1, 2)).sum().backward()
        optimizer.step()
        assert len(guard.empty_steps) == 1
        del optimizer
        gc.collect()
        assert len(guard.empty_steps) == 0


def test_the_rules_of_silent_training_failures_change_no_computed_value():
    """TP017-TP021 only read: a session that sets each off computes what it computes without
    the guards (the clipping call, the samplers' indices, the steps of re-created optimizers)."""
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    def session():
        torch.manual_seed(0)
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        low = nn.Linear(4, 1).to(torch.bfloat16)
        low_optimizer = torch.optim.Adam(low.parameters(), lr=1e-5)
        F.mse_loss(low(x.bfloat16()).float(), y).backward()
        low_optimizer.step()  # TP017
        net = nn.Sequential(*[nn.Linear(4, 4)] * 2, nn.Linear(4, 1))  # TP019
        norms = []
        for _ in range(3):
            optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)  # TP018
            optimizer.zero_grad()
            norms.append(nn.utils.clip_grad_norm_(net.parameters(), 0.5))  # TP020
            F.mse_loss(net(x), y).backward()
            norms.append(nn.utils.clip_grad_norm_(net.parameters(), 0.5))
            optimizer.step()
        dataset = TensorDataset(torch.arange(5.0))
        sampler = DistributedSampler(dataset, num_replicas=2, rank=1, shuffle=False)
        loader = DataLoader(dataset, batch_size=2, sampler=sampler)
        seen = torch.cat([batch for (batch,) in loader])  # TP021
        return [t.detach().clone() for t in (*low.parameters(), *net.parameters(), *norms, seen)]

    plain = session()
    with run() as guard:
        guarded = session()
    assert sorted(guard.ids) == ["TP017", "TP018", "TP019", "TP020", "TP021"]
    for a, b in zip(plain, guarded, strict=True):
        assert torch.equal(a, b)
    assert nn.utils.clip_grad_norm_.__wrapped__.__code__.co_filename.endswith("clip_grad.py")


def test_a_repeated_module_of_a_watched_model_is_reported_at_the_with_line():
    model = nn.Sequential(*[nn.Linear(2, 2)] * 3)
    with run(model) as guard:  # the line reported
        model(torch.randn(1, 2))
    line = inspect.currentframe().f_lineno - 2
    assert [(f.rule_id, f.lineno) for f in guard.found] == [("TP019", line)]


# -- edits behind autograd's back (opt-in): TP010 --------------------------------------------------


def test_hidden_inplace_edits_are_opt_in():
    def edit_through_data():
        w = torch.ones(3, requires_grad=True)
        s = w.sigmoid()
        s.data.mul_(2)
        s.sum().backward()

    with run() as default:
        edit_through_data()
    with run(enable=["TP010"]) as enabled:
        edit_through_data()
    assert found(default) == []
    assert found(enabled) == ["TP010"]


def test_the_hidden_edit_guard_makes_autograds_version_check_itself():
    a = torch.ones(3, requires_grad=True)
    with run(enable=["TP010"]) as guard:
        # saved-tensor hooks switch off autograd's own check: the guard makes it itself
        s = a.sigmoid()
        s.mul_(2)
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0") as caught:
            s.sum().backward()
    assert found(guard) == ["TP009"]
    assert caught.value.__notes__ == [guard.message("TP009")]


# -- never change a value; leave nothing behind ----------------------------------------------------


def test_guards_change_no_computed_value(device):
    def training_run():
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 3))
        net.to(device)
        optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
        x = torch.randn(16, 4, device=device)
        y = torch.randint(0, 3, (16,), device=device)
        for _ in range(3):
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        net.eval()
        return [t.detach().clone() for t in (*net.parameters(), *net.buffers(), net(x))]

    plain = training_run()
    with run(enable=["TP010"]):
        guarded = training_run()
    for a, b in zip(plain, guarded, strict=True):
        assert torch.equal(a, b)


def test_everything_is_removed_on_exit_even_after_an_exception():
    net = small_net()
    with pytest.raises(ZeroDivisionError), run(net, enable=["TP010"]):
        net(torch.randn(4, 4))
        1 / 0  # noqa: B018
    # the autouse fixture checks the global hooks and the mode stack; saved-tensor hooks too:
    w = torch.ones(2, requires_grad=True)
    s = w.sigmoid()
    s.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()  # autograd's own check is back


def test_nothing_is_installed_by_importing():
    code = (
        "import warnings, torch; warn, show, filters = warnings.warn, warnings._showwarnmsg, "
        "list(warnings.filters);"
        "import torch_pitfalls, torch_pitfalls.guards;"
        "from torch.nn.modules import module as m;"
        "from torch.overrides import _get_current_function_mode_stack as modes;"
        "assert not m._global_forward_pre_hooks and not m._global_forward_hooks;"
        "assert not modes();"
        "assert warnings.warn is warn and warnings._showwarnmsg is show;"
        "assert warnings.filters == filters"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_forward_that_raises_leaves_the_module_stack_balanced():
    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("broken")

    outer = FunctionalDropout().eval()
    with run(allow=["TP014"]) as guard:
        with pytest.raises(ValueError, match="broken"):
            Broken()(torch.ones(1))
        F.dropout(torch.ones(4), 0.5)  # outside every module again: not flagged
        outer(torch.randn(2, 4))
    assert found(guard) == ["TP004"]


# -- silencing, strict mode, language --------------------------------------------------------------


def test_silencing_by_allow_argument_and_warnings_filter():
    probs, target = torch.full((2, 2), 0.5), torch.tensor([0, 1])
    with run(allow=["TP001"]) as by_argument:
        F.cross_entropy(probs, target)
    with run() as by_block:
        with allow("TP001"):
            F.cross_entropy(probs, target)
    assert found(by_argument) == found(by_block) == []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="TP001")
        with run():
            F.cross_entropy(probs, target)
    assert not shown


def test_strict_mode_raises():
    with pytest.raises(PitfallError, match=r"^TP001 .* → https://\S+\.html$") as caught:
        with run(strict=True):
            F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))
    assert caught.value.rule_id == "TP001"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitfallWarning)
        with pytest.raises(PitfallWarning, match="^TP001 "), run():
            F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))


def test_language_and_base_url(monkeypatch):
    monkeypatch.setenv("TORCH_PITFALLS_BASE_URL", "http://127.0.0.1:8000")
    monkeypatch.setenv("TORCH_PITFALLS_LANGUAGE", "zh_CN")
    with torch_pitfalls.guards() as guard:
        F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))
    message = guard.found[0].message
    assert message.startswith("TP001 cross_entropy 收到的是概率")
    assert message.endswith(
        "→ http://127.0.0.1:8000/zh_CN/auto_examples/losses/plot_cross_entropy_expects_logits.html"
    )
    assert guard.report() == f"test_guards.py:{guard.found[0].lineno}: {message}"


def test_bad_arguments_get_clear_errors():
    with pytest.raises(TypeError, match="watches modules and optimizers, got Tensor"):
        torch_pitfalls.guards(torch.ones(1))
    with pytest.raises(KeyError, match="unknown rule id 'TP999'"):
        torch_pitfalls.guards(allow=["TP999"])
    with pytest.raises(ValueError, match="TP101 is a rule of the static checker"):
        torch_pitfalls.guards(enable=["TP101"])
    with pytest.raises(ValueError, match="language must be one of"):
        torch_pitfalls.guards(language="fr")
    with pytest.raises(KeyError, match="unknown rule id"):
        allow("TP01")
    guard = torch_pitfalls.guards()
    with guard, pytest.raises(RuntimeError, match="already active"):
        guard.__enter__()


def test_the_module_is_callable_and_exports():
    assert isinstance(torch_pitfalls.guards(), Guards)
    assert torch_pitfalls.PitfallWarning is PitfallWarning
    assert torch_pitfalls.allow is allow


# -- the runner ------------------------------------------------------------------------------------


def test_runner_runs_a_script_with_its_arguments(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch, torch.nn.functional as F\n"
        "print('args', sys.argv[1:])\n"
        "for _ in range(3):\n"
        "    F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))\n"
        "sys.exit(3)\n"
    )
    command = [sys.executable, "-m", "torch_pitfalls.guards", "--language", "en", str(script)]
    done = subprocess.run([*command, "--epochs", "2"], capture_output=True, text=True)
    assert done.returncode == 3
    assert "args ['--epochs', '2']" in done.stdout
    assert done.stderr.count("PitfallWarning: TP001 ") == 1
    assert f"{script}:4: PitfallWarning: TP001 " in done.stderr
    assert "torch_pitfalls.guards: 1 pitfall found (TP001)" in done.stderr
    strict = subprocess.run(
        [*command[:-1], "--strict", str(script)], capture_output=True, text=True
    )
    assert strict.returncode == 1 and "PitfallError: TP001 " in strict.stderr
    allowed = subprocess.run(
        [*command[:-1], "--allow", "TP001", str(script)], capture_output=True, text=True
    )
    assert "0 pitfalls found" in allowed.stderr and "PitfallWarning" not in allowed.stderr
    usage = subprocess.run(
        [*command[:-1], "--enable", "TP101", str(script)], capture_output=True, text=True
    )
    assert usage.returncode == 2 and "TP101 is a rule of the static checker" in usage.stderr


# -- found by trying to break them: correct code that must stay silent and working --------------


def test_per_sample_gradients_with_vmap_still_work():
    from torch.func import functional_call, grad, vmap

    net = nn.Linear(4, 3)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(params, x, y):
        out = functional_call(net, params, (x.unsqueeze(0),))
        return F.nll_loss(out.log_softmax(1), y.unsqueeze(0))

    x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
    plain = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    with run() as guard:
        guarded = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for name in plain:
        assert torch.equal(plain[name], guarded[name])
    assert found(guard) == []


def test_a_compiled_module_still_runs():
    net = small_net()
    compiled = torch.compile(net, backend="eager")  # Dynamo only: no code generation
    x, y = torch.randn(4, 4), torch.randint(0, 2, (4,))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with run(net):
            F.cross_entropy(compiled(x), y).backward()
        # PyTorch warns when a compiled module runs global module hooks; the guards' hooks
        # only read, and that warning is not shown for them, but still for the user's own
        hook = module_hooks.register_module_forward_hook(lambda module, args, output: None)
        try:
            with run(net):
                compiled(x)
        finally:
            hook.remove()
    assert [str(w.message)[:48] for w in shown if w.category is not PitfallWarning] == [
        "Using `torch.compile(module)` when there are glo"
    ]


def test_pytorchs_own_error_for_an_unbatched_image_gets_a_note():
    image = torch.rand(3, 8, 8)
    with run() as guard:
        with pytest.raises(NotImplementedError, match="Got 3D input") as bilinear:
            F.interpolate(image, scale_factor=2, mode="bilinear")
        with pytest.raises(ValueError, match="spatial dimensions") as two_sizes:
            F.interpolate(image, size=(16, 16))
    assert bilinear.value.__notes__ == two_sizes.value.__notes__ == [guard.message("TP006")]


def test_runner_summary_after_an_error_and_static_ids_refused(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(
        "import torch, torch.nn.functional as F\n"
        "F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))\n"
        "raise ValueError('broken script')\n"
    )
    command = [sys.executable, "-m", "torch_pitfalls.guards", "--language", "en"]
    done = subprocess.run([*command, str(script)], capture_output=True, text=True)
    assert done.returncode == 1 and "ValueError: broken script" in done.stderr
    assert "torch_pitfalls.guards: 1 pitfall found (TP001)" in done.stderr
    refused = subprocess.run(
        [*command, "--allow", "TP101", str(script)], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "TP101 is a rule of the static checker" in refused.stderr


# -- PyTorch's own warnings and errors are PyTorch's: same place, same count ----------------------
#
# The guards' mode puts frames between the user's call and PyTorch's code; a warning placed by
# counting frames (stacklevel, or the innermost frame for a warning from C++) must still name the
# user's line, and so show once per line under the default filters, as without the guards.

WARNING_SITES = """\
import contextlib
import json
import sys
import traceback
import warnings

import torch
import torch.nn.functional as F
from torch import nn

import torch_pitfalls


def record(message, category, filename, lineno, file=None, line=None):
    shown.append([category.__name__, str(message), filename, lineno])


def run():
    a, b = torch.zeros(3), torch.zeros(3, 1)
    for _ in range(3):
        F.mse_loss(a, b)  # the target broadcasts: three times on this line
    F.mse_loss(a, b)  # and once on another line
    nn.MSELoss()(a, b)  # placed in torch/nn/modules/loss.py
    F.softmax(torch.zeros(2, 3))  # no dim: stacklevel=3
    x = torch.ones(2, requires_grad=True) * 2
    x.grad  # a non-leaf tensor's .grad: a warning from C++
    x.grad
    F.mse_loss(a, a, size_average=True)  # placed in torch/nn/functional.py
    F.cross_entropy(torch.full((2, 2), 0.5), torch.tensor([0, 1]))  # the guards' own TP001
    torch.ones(2, 3) @ torch.ones(2, 3)  # PyTorch's RuntimeError


results = {}
for mode in ("default", "always", "error", "ignore-main"):
    shown, error = [], None
    with warnings.catch_warnings():  # the filters as they were, and every registry empty again
        warnings.showwarning = record  # called after the filters: what is shown, and how often
        if mode == "ignore-main":
            warnings.filterwarnings("ignore", module="__main__")
        elif mode != "default":
            warnings.simplefilter(mode)
        guarded = sys.argv[1] == "in-process"
        try:
            with torch_pitfalls.guards(language="en") if guarded else contextlib.nullcontext():
                run()
        except Exception as raised:
            frames = traceback.extract_tb(raised.__traceback__)
            mine = [f.lineno for f in frames if f.filename == __file__]
            error = [type(raised).__name__, str(raised), mine]
    results[mode] = {"shown": shown, "error": error}
print(json.dumps(results))
"""


def line_of(script: Path, text: str) -> int:
    (number,) = [n for n, line in enumerate(script.read_text().splitlines(), 1) if text in line]
    return number


def test_pytorchs_warnings_and_errors_are_unchanged_by_the_guards(tmp_path):
    script = tmp_path / "sites.py"
    script.write_text(WARNING_SITES)
    commands = {
        "plain": [sys.executable, str(script), "plain"],
        "runner": [sys.executable, "-m", "torch_pitfalls.guards", str(script), "plain"],
        "in-process": [sys.executable, str(script), "in-process"],
    }
    running = {
        name: subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, command in commands.items()
    }
    results = {}
    for name, process in running.items():
        stdout, stderr = process.communicate()
        assert process.returncode == 0, stderr
        results[name] = json.loads(stdout)
    for mode, plain in results["plain"].items():
        assert plain["error"] and (plain["shown"] or mode == "error")
        for name in ("runner", "in-process"):
            guarded = results[name][mode]
            pytorchs = [w for w in guarded["shown"] if w[0] != "PitfallWarning"]
            assert pytorchs == plain["shown"], (mode, name)  # category, message, place, count
            assert guarded["error"] == plain["error"], (mode, name)  # type, message, frames
            # the guards' own findings (their pointers to the pages of PyTorch's warnings apart)
            own = [w for w in guarded["shown"] if w[0] == "PitfallWarning" and w[1][:2] == "TP"]
            # the guards' own warning names the user's line (the runner's guards see it once)
            if mode == "default" or (mode == "always" and name == "in-process"):
                assert [(w[2], w[3]) for w in own] == [(str(script), line_of(script, "TP001"))]
                assert own[0][1].startswith("TP001 ")
    # what the guards once changed: under the default filters, each line once, at that line
    where = [(Path(w[2]).name, w[3]) for w in results["plain"]["default"]["shown"]]
    assert where[:2] == [
        ("sites.py", line_of(script, "three times")),
        ("sites.py", line_of(script, "another line")),
    ]
    assert where[2][0] == "loss.py"
    assert ("sites.py", line_of(script, "# no dim")) in where
    assert ("sites.py", line_of(script, "from C++")) in where
    always = [(Path(w[2]).name, w[3]) for w in results["plain"]["always"]["shown"]]
    assert always.count(("sites.py", line_of(script, "three times"))) == 3
    error = results["plain"]["default"]["error"]
    assert error[0] == "RuntimeError" and error[2][-1] == line_of(script, "RuntimeError")
    error = results["plain"]["error"]["error"]  # the first warning raises, at the user's line
    assert error[0] == "UserWarning" and error[2][-1] == line_of(script, "three times")
    assert results["plain"]["ignore-main"]["shown"]  # those placed in torch's files


def emit(x: torch.Tensor, stacklevel: int) -> None:
    """A function of a library that supports torch function modes, and warns."""
    if torch.overrides.has_torch_function((x,)):
        return torch.overrides.handle_torch_function(emit, (x,), x, stacklevel)
    warnings.warn(f"stacklevel {stacklevel}", UserWarning, stacklevel=stacklevel)


def dispatched(x: torch.Tensor, stacklevel: int) -> None:
    """A public function that calls its implementation, which dispatches on the public one."""
    return _implementation(x, stacklevel)


def _implementation(x: torch.Tensor, stacklevel: int) -> None:
    if torch.overrides.has_torch_function((x,)):
        return torch.overrides.handle_torch_function(dispatched, (x,), x, stacklevel)
    warnings.warn(f"stacklevel {stacklevel}", UserWarning, stacklevel=stacklevel)


def warn_at_every_level(function, levels) -> list[list[tuple]]:
    """The warnings without guards, then with guards (from the same lines of this file)."""
    x, runs = torch.ones(1), []
    for guarded in (False, True):
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            with torch_pitfalls.guards() if guarded else contextlib.nullcontext():
                for level in levels:
                    function(x, level)  # every stacklevel, up to beyond the outermost frame
        runs.append([(str(w.message), w.category, w.filename, w.lineno) for w in shown])
    return runs


@pytest.mark.parametrize("function", [emit, dispatched])
def test_stacklevels_find_the_frame_they_find_without_the_guards(function):
    outermost = len(inspect.stack()) + 2 + (function is dispatched)
    levels = [-1, 0, *range(1, outermost + 5), 10_000]
    plain, guarded = warn_at_every_level(function, levels)
    assert len(plain) == len(levels)
    assert plain[outermost + 1][2:] != ("sys", 1) and plain[outermost + 2][2:] == ("sys", 1)
    assert guarded == plain


GENERATED = compile("F.mse_loss(torch.zeros(3), torch.zeros(3, 1))", "<generated>", "exec")


def warn_twice_per_line():
    for _ in range(3):
        F.mse_loss(torch.zeros(3), torch.zeros(3, 1))
    F.mse_loss(torch.zeros(3), torch.zeros(3, 1))
    F.softmax(torch.zeros(2, 3))
    exec(GENERATED, {"F": F, "torch": torch})  # globals without __name__, as FX's code has


def test_default_filters_show_each_line_once_in_process():
    def shown(guarded: bool) -> list[tuple]:
        with warnings.catch_warnings(record=True) as caught:  # the registries start empty again
            warnings.simplefilter("default")
            with torch_pitfalls.guards() if guarded else contextlib.nullcontext():
                warn_twice_per_line()
        return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]

    plain = shown(guarded=False)
    assert [w[2:] for w in plain[:2]] == [(__file__, plain[0][3]), (__file__, plain[0][3] + 1)]
    assert plain[-1][2:] == ("<generated>", 1)
    assert [w for w in shown(guarded=True) if w[1] is not PitfallWarning] == plain


def test_warnings_in_compiled_code_keep_their_place():
    def compiled_code():
        warnings.warn("the user's own", UserWarning, stacklevel=1)  # Dynamo replays it here
        return F.softmax(torch.zeros(2, 3)) * 2  # traced, then run by FX's generated code

    def shown(guarded: bool) -> list[tuple]:
        torch._dynamo.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch_pitfalls.guards() if guarded else contextlib.nullcontext():
                torch.compile(compiled_code, backend="eager")()
        generated = re.compile(r"<eval_with_key>\.\d+")  # numbered per compilation
        return [(str(w.message), generated.sub("", w.filename), w.lineno) for w in caught]

    plain = shown(guarded=False)
    assert ("the user's own", __file__, plain[0][2]) in plain and len(plain) >= 3
    own = ("TP", "torch-pitfalls:")  # findings, and pointers to the page of a PyTorch warning
    assert [w for w in shown(guarded=True) if not w[0].startswith(own)] == plain


def test_pytorchs_error_keeps_its_type_message_and_frames():
    def fail():
        F.softmax(torch.zeros(2, 3), dim=5)

    def caught(guarded: bool):
        with pytest.raises(IndexError) as info:
            with torch_pitfalls.guards() if guarded else contextlib.nullcontext():
                fail()
        frames = [(f.name, f.lineno) for f in traceback.extract_tb(info.value.__traceback__)]
        return type(info.value), str(info.value), [f for f in frames if f[0] == "fail"]

    plain = caught(guarded=False)
    assert plain[2] and caught(guarded=True) == plain


class Noisy(torch.Tensor):
    """A tensor subclass that warns when summed (which cross_entropy itself never does)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.sum:
            warnings.warn("summed", UserWarning, stacklevel=2)
        return super().__torch_function__(func, types, args, kwargs)


def test_the_warnings_of_the_guards_own_reads_are_dropped():
    logits = torch.randn(2, 3).as_subclass(Noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning of the check's own sum would raise here
        with run() as guard:
            F.cross_entropy(logits, torch.tensor([0, 1]))  # the TP001 check sums the logits
            with pytest.warns(UserWarning, match="summed") as shown:
                logits.sum()  # the user's own sum warns, at the user's line
    assert found(guard) == []
    assert [(w.filename, w.lineno) for w in shown] == [(__file__, shown[0].lineno)]
    line = Path(__file__).read_text(encoding="utf-8").splitlines()[shown[0].lineno - 1]
    assert "logits.sum()" in line


def test_the_hooks_on_parameters_change_nothing_pytorch_does():
    weight = torch.ones(2, requires_grad=True)  # a plain tensor: pickling it checks its hooks
    frozen = torch.ones(2, requires_grad=True)
    optimizer = torch.optim.SGD([weight, frozen], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", PitfallWarning)
        with run() as guard:
            for _ in range(2):
                optimizer.zero_grad()
                (weight * frozen).sum().backward()
                optimizer.step()  # the guards hook the parameters here
            frozen.requires_grad_(False)  # frozen with its gradient kept: no hook can go on it
            optimizer.step()
            pickle.dumps(weight)  # no "backward hook ... will not be serialized"
    assert found(guard) == []


# -- how the checked functions are reached: only they pay, and every reference to them is seen ----

from torch.nn.functional import cross_entropy as bound_before_entry  # noqa: E402


def test_a_function_bound_before_entry_is_checked_and_everything_is_restored():
    probabilities, target = torch.full((2, 2), 0.5), torch.tensor([0, 1])
    codes = {f: f.__code__ for f in (F.cross_entropy, F.dropout, torch.Tensor.backward)}
    with run() as guard:
        assert inspect.signature(F.cross_entropy).parameters["input"]  # still the real one
        bound_before_entry(probabilities, target)
    assert found(guard) == ["TP001"]
    assert {f: f.__code__ for f in codes} == codes
    assert "__wrapped__" not in F.cross_entropy.__dict__
    assert "numpy" not in torch.Tensor.__dict__  # the C method again
    assert not guards_module.intercept._WRAPPED


def test_nested_guards_each_check_and_other_threads_are_not_checked():
    import threading

    probabilities, target = torch.full((2, 2), 0.5), torch.tensor([0, 1])
    with run() as outer:
        with run() as inner:
            thread = threading.Thread(target=F.cross_entropy, args=(probabilities, target))
            thread.start()
            thread.join()
            assert found(inner) == found(outer) == []  # a torch function mode is per thread too
            F.cross_entropy(probabilities, target)
        F.cross_entropy(probabilities, target)
    assert found(inner) == ["TP001"]
    assert found(outer) == ["TP001", "TP001"]  # two places


# -- a function written in C, shadowed in its module: F.scaled_dot_product_attention (TP022) ------

from torch.nn.attention.bias import causal_lower_right  # noqa: E402
from torch.nn.functional import scaled_dot_product_attention as sdpa_bound_before  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

SDPA = torch._C._nn.scaled_dot_product_attention  # what F.scaled_dot_product_attention is


def attention_outputs():
    """SDPA's outputs by every path the guards take: direct, nested guards, a CausalBias mask
    (its __torch_function__ compares the function), nn.MultiheadAttention with the is_causal
    hint, under a torch function mode; ``lines`` are the lines of the calls TP022 flags."""
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 2, 6, 4).unbind(0)
    attention = nn.MultiheadAttention(4, 2, batch_first=True)
    x, memory = torch.randn(1, 3, 4), torch.randn(1, 6, 4)
    hint = {"attn_mask": torch.ones(3, 6, dtype=torch.bool).triu(4), "need_weights": False}
    first = inspect.currentframe().f_lineno + 1
    outputs = [F.scaled_dot_product_attention(q[:, :, -1:], k, v, is_causal=True)]
    outputs.append(F.scaled_dot_product_attention(q[:, :, -3:], k, v, causal_lower_right(3, 6)))
    outputs.append(attention(x, memory, memory, **hint)[0])
    outputs.append(attention(x, memory, memory, **hint, is_causal=True)[0])
    with torch.device("cpu"):  # a torch function mode sees the call
        outputs.append(F.scaled_dot_product_attention(q[:, :, :2], k, v, is_causal=True))
    outputs.append(F.scaled_dot_product_attention(q, k, v, is_causal=True))  # L == S
    return outputs, [first, first + 3, first + 5]


def test_sdpa_is_checked_through_its_module_and_computes_the_same_values():
    plain, lines = attention_outputs()
    with run() as guard:
        assert F.scaled_dot_product_attention is not SDPA  # shadowed in torch.nn.functional
        guarded, _ = attention_outputs()
    assert [(f.rule_id, f.lineno, f.filename) for f in guard.found] == [
        ("TP022", line, __file__) for line in lines
    ]
    assert len(plain) == len(guarded) == 6
    assert all(torch.equal(a, b) for a, b in zip(plain, guarded, strict=True))
    assert not torch.equal(plain[2], plain[3])  # the hint replaced the mask: TP022's point
    assert F.scaled_dot_product_attention is SDPA  # restored, nothing left behind
    assert not guards_module.intercept._WRAPPED and not guards_module.intercept._LENT


def test_a_subclass_or_mode_sees_sdpa_itself_and_a_reference_bound_before_entry_is_unseen():
    q, k = torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4)

    class Seen(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is SDPA:
                same.append(func is F.scaled_dot_product_attention)
            return func(*args, **(kwargs or {}))

    same: list[bool] = []
    with run() as outer, run() as inner:
        with Seen():
            F.scaled_dot_product_attention(q, k, k, is_causal=True)
        assert F.scaled_dot_product_attention is not SDPA  # shadowed again after the call
        sdpa_bound_before(q, k, k, is_causal=True)  # the C function itself: not seen
    assert same == [True]
    assert found(inner) == ["TP022"] and found(outer) == []  # the innermost guards check
    assert F.scaled_dot_product_attention is SDPA

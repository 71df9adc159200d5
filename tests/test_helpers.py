"""Unit tests of the helpers in torch_pitfalls, including the errors they raise on bad input."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import time
import warnings

import pytest
import torch

from torch_pitfalls import (
    DEVICE_ENV,
    TwoConvNet,
    available_devices,
    compare_times,
    environment_report,
    expect_raises,
    expect_warns,
    get_device,
    graph_nodes,
    make_pretrained_classifier,
    measured,
    median_time,
    peak_cuda_bytes,
    run_isolated,
    run_script,
    saved_tensors,
    seed_everything,
)
from torch_pitfalls.measure import TIMING_THREADS, machine

# -- devices --------------------------------------------------------------------------------------


def test_get_device_default_follows_cuda_availability(monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert get_device().type == expected


def test_get_device_environment_variable_forces_cpu(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    assert get_device() == torch.device("cpu")


@pytest.mark.parametrize("bad", ["tpu", "cpu:1", "gpu", "cuda:x"])
def test_get_device_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match=r"unknown device .*expected 'cpu', 'cuda' or 'cuda:N'"):
        get_device(bad)


def test_get_device_names_the_environment_variable_in_errors(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "npu")
    with pytest.raises(ValueError, match=DEVICE_ENV):
        get_device()


def test_get_device_rejects_non_strings():
    with pytest.raises(TypeError, match="must be a str"):
        get_device(0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_get_device_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        get_device("cuda")


@pytest.mark.cuda
def test_get_device_cuda_index_out_of_range():
    with pytest.raises(RuntimeError, match="CUDA device"):
        get_device(f"cuda:{torch.cuda.device_count()}")


def test_available_devices():
    assert available_devices() == (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])


# -- seeding --------------------------------------------------------------------------------------


def test_seed_everything_makes_every_generator_repeat():
    import numpy as np

    seed_everything(123)
    first = (random.random(), np.random.rand(), torch.rand(3))
    seed_everything(123)
    second = (random.random(), np.random.rand(), torch.rand(3))
    assert first[:2] == second[:2]
    assert torch.equal(first[2], second[2])


@pytest.mark.parametrize(
    ("seed", "error"),
    [(-1, ValueError), (2**63, ValueError), (1.5, TypeError), (True, TypeError), ("0", TypeError)],
)
def test_seed_everything_rejects_bad_seeds(seed, error):
    with pytest.raises(error, match="seed must"):
        seed_everything(seed)


# -- expect_raises / expect_warns ---------------------------------------------------------------


def test_expect_raises_prints_the_real_message(capsys):
    with expect_raises(RuntimeError, "went wrong") as caught:
        raise RuntimeError("it went wrong")
    assert capsys.readouterr().out == "RuntimeError: it went wrong\n"
    assert isinstance(caught.exception, RuntimeError)
    assert caught.message == "it went wrong"


def test_expect_raises_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="expected RuntimeError, but nothing was raised"):
        with expect_raises(RuntimeError):
            pass


def test_expect_raises_fails_when_the_message_changed():
    with pytest.raises(AssertionError, match="does not match"):
        with expect_raises(RuntimeError, "old message"):
            raise RuntimeError("new message")


def test_expect_raises_lets_other_exceptions_through():
    with pytest.raises(KeyError):
        with expect_raises(RuntimeError):
            raise KeyError("x")


@pytest.mark.parametrize(
    ("kind", "match", "error"),
    [(int, "", TypeError), (RuntimeError, 3, TypeError), (RuntimeError, "(", ValueError)],
)
def test_expect_raises_validates_its_arguments(kind, match, error):
    with pytest.raises(error):
        with expect_raises(kind, match):
            pass


def test_expect_warns_prints_and_records(capsys):
    with expect_warns(UserWarning, "volatile") as caught:
        warnings.warn("volatile was removed", UserWarning, stacklevel=1)
    assert capsys.readouterr().out == "UserWarning: volatile was removed\n"
    assert len(caught.warnings) == 1


def test_expect_warns_fails_without_a_matching_warning():
    with pytest.raises(AssertionError, match="expected a UserWarning"):
        with expect_warns(UserWarning, "volatile"):
            warnings.warn("something else", UserWarning, stacklevel=1)


def test_expect_warns_rejects_non_warning_classes():
    with pytest.raises(TypeError):
        with expect_warns(ValueError):
            pass


# -- measuring ------------------------------------------------------------------------------------


def test_saved_tensors_counts_distinct_storages():
    x = torch.ones(10, requires_grad=True)  # 40 bytes
    with saved_tensors() as saved:
        y = x.exp()  # saves its output y (40 bytes), not x
        z = (y * y).sum()  # saves y twice more: three saves, one storage
    assert saved.count == 3
    assert saved.nbytes == 40
    z.backward()  # the hooks did not change what backward computes
    torch.testing.assert_close(x.grad, 2 * torch.exp(x.detach()) ** 2)


def test_saved_tensors_is_zero_without_a_graph():
    with torch.no_grad(), saved_tensors() as saved:
        torch.nn.Linear(4, 4)(torch.ones(2, 4))
    assert (saved.count, saved.nbytes) == (0, 0)


def test_graph_nodes():
    x = torch.ones(2, requires_grad=True)
    assert graph_nodes(x) == 0
    assert graph_nodes(x.exp().sum()) == 3  # SumBackward0, ExpBackward0, AccumulateGrad
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        graph_nodes([1, 2])


def test_compare_times_validates_and_orders():
    fast, slow = compare_times(lambda: None, lambda: sum(range(20_000)), rounds=5)
    assert 0 < fast < slow
    with pytest.raises(TypeError, match="two or more callables"):
        compare_times(lambda: None)
    with pytest.raises(TypeError, match="two or more callables"):
        compare_times(lambda: None, 3)
    with pytest.raises(ValueError, match="rounds"):
        compare_times(lambda: None, lambda: None, rounds=0)
    with pytest.raises(ValueError, match="block"):
        compare_times(lambda: None, lambda: None, block=0)
    with pytest.raises(ValueError, match="num_threads"):
        compare_times(lambda: None, lambda: None, num_threads=0)


def test_compare_times_enters_each_context_around_its_timings_only():
    import contextlib

    inside = []
    entered = [0, 0]

    def context(i):
        @contextlib.contextmanager
        def enter():
            entered[i] += 1
            inside.append(i)
            yield
            inside.pop()

        return enter

    def fn(i):
        return lambda: assert_inside(i)

    def assert_inside(i):
        assert inside == [i]

    compare_times(fn(0), fn(1), rounds=3, contexts=[context(0), context(1)])
    assert entered == [4, 4]  # the calibration, then one timing per round
    with pytest.raises(TypeError):
        compare_times(lambda: None, lambda: None, contexts=[contextlib.nullcontext])


def test_compare_times_measures_again_until_expect_holds():
    verdicts = iter([False, True])
    seen = []

    def expect(times):
        seen.append(times)
        return next(verdicts)

    times = compare_times(lambda: None, lambda: None, rounds=1, expect=expect, attempts=3)
    assert len(seen) == 2 and times is seen[1]  # the first failing comparison was measured again
    with pytest.raises(AssertionError, match=r"in 3 comparison\(s\): .* s, .* s; .*; .*"):
        compare_times(lambda: None, lambda: None, rounds=1, expect=lambda t: False)
    with pytest.raises(ValueError, match="attempts"):
        compare_times(lambda: None, lambda: None, expect=lambda t: True, attempts=0)
    with pytest.raises(TypeError, match="expect must be a predicate"):
        compare_times(lambda: None, lambda: None, expect=1.05)


def test_compare_times_runs_on_fixed_threads_and_restores_them():
    before = torch.get_num_threads()
    seen = []
    compare_times(lambda: seen.append(torch.get_num_threads()), lambda: None, rounds=2)
    assert set(seen) == {TIMING_THREADS} == {1}
    assert torch.get_num_threads() == before


def test_compare_times_interleaves_and_keeps_the_fastest():
    calls = []
    compare_times(lambda: calls.append("a"), lambda: calls.append("b"), rounds=3, block=1e-9)
    # each timing of one call comes after 2 warm-up calls: a first timing of each, then the
    # rounds in alternating order: a b, b a, a b
    runs = [(name, len(list(group))) for name, group in itertools.groupby(calls)]
    assert runs == [("a", 3), ("b", 3), ("a", 3), ("b", 6), ("a", 6), ("b", 3)]
    # the first timing of one callable in the first round is slowed, as by a burst of load
    delays = iter([0.0] * 5 + [0.05] + [0.0] * 100)

    def sometimes_slow():
        time.sleep(next(delays))

    slowed, _ = compare_times(sometimes_slow, lambda: None, rounds=5, block=1e-9)
    assert slowed < 0.01


def test_measured_tags_and_names_the_machine():
    assert measured("1.5× slower") == "[measured] 1.5× slower"
    line = measured("1.5× slower", "cpu")
    assert line.startswith("[measured] on cpu (") and line.endswith("): 1.5× slower")
    assert f"1 thread of {os.cpu_count()} CPUs" in line and torch.__version__ in line
    assert "2 threads of" in machine("cpu", num_threads=2)
    with pytest.raises(TypeError, match="str"):
        measured(1.5)


def test_peak_cuda_bytes_rejects_cpu_and_non_callables():
    with pytest.raises(ValueError, match="CUDA device"):
        peak_cuda_bytes(lambda: None, "cpu")
    with pytest.raises(TypeError, match="callable"):
        peak_cuda_bytes(None)


@pytest.mark.cuda
def test_peak_cuda_bytes_counts_what_fn_keeps():
    nbytes = peak_cuda_bytes(lambda: torch.empty(1024, 1024, device="cuda"))
    assert nbytes >= 1024 * 1024 * 4


def test_median_time_validates():
    assert median_time(lambda: None, min_run_time=0.01) > 0
    with pytest.raises(ValueError, match="num_threads"):
        median_time(lambda: None, num_threads=0)
    with pytest.raises(TypeError, match="callable"):
        median_time(3)
    with pytest.raises(ValueError, match="min_run_time"):
        median_time(lambda: None, min_run_time=0)


# -- models ---------------------------------------------------------------------------------------


def test_two_conv_net_matches_the_catalog():
    net = TwoConvNet()
    assert net.conv1.in_channels == 3 and net.conv1.out_channels == 16
    assert net.conv2.out_channels == 32 and net.conv1.bias is None and net.conv2.bias is None
    assert net.conv1.kernel_size == (3, 3) and net.conv1.padding == (1, 1)
    assert net(torch.ones(8, 3, 10, 10)).shape == (8, 20)
    with pytest.raises(ValueError, match="num_classes must be a positive int"):
        TwoConvNet(num_classes=0)


def test_pretrained_classifier_is_deterministic_and_leaves_the_rng_alone():
    torch.manual_seed(5)
    before = torch.random.get_rng_state()
    a, b = make_pretrained_classifier(3), make_pretrained_classifier(3)
    assert torch.equal(torch.random.get_rng_state(), before)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
    assert not torch.equal(a.head.weight, make_pretrained_classifier(3, seed=1).head.weight)
    with pytest.raises(ValueError, match="seed"):
        make_pretrained_classifier(3, seed=-1)
    with pytest.raises(ValueError, match="num_classes"):
        make_pretrained_classifier(0)


# -- environment ----------------------------------------------------------------------------------


def test_environment_report(monkeypatch):
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    report = environment_report()
    assert report["torch"] == torch.__version__
    assert report["device"] == "cpu"


# -- isolation ------------------------------------------------------------------------------------


def test_run_isolated_reports_a_crash_without_touching_this_process():
    result = run_isolated("raise RuntimeError('context poisoned')", device="cpu")
    assert result.returncode == 1
    assert result.last_error_line() == "RuntimeError: context poisoned"
    assert torch.ones(1).item() == 1.0  # this process is unaffected


def test_run_isolated_passes_device_and_environment():
    source = (
        "import os; from torch_pitfalls import get_device; print(get_device(), os.environ['X'])"
    )
    result = run_isolated(source, device="cpu", env={"X": "42"})
    assert (result.returncode, result.stdout) == (0, "cpu 42\n")


def test_run_isolated_validates():
    with pytest.raises(TypeError, match="source"):
        run_isolated(b"print(1)")
    with pytest.raises(TypeError, match="env"):
        run_isolated("pass", env={"X": 1})
    with pytest.raises(ValueError, match="timeout"):
        run_isolated("pass", timeout=0)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_run_script_kills_the_script_and_its_children_on_timeout(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        run_script(script, timeout=3)
    grandchild = int(caught.value.stdout.split()[0])  # what the script printed before
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _running(grandchild):
        time.sleep(0.1)
    assert not _running(grandchild)  # the script's own child was killed with it


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_run_script_validates(tmp_path):
    with pytest.raises(ValueError, match="timeout"):
        run_script(tmp_path / "x.py", timeout=0)
    with pytest.raises(TypeError, match="arguments"):
        run_script(tmp_path / "x.py", 1)

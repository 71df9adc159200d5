"""torch_pitfalls.ranks.run_ranks: results in rank order, a failing or hanging rank reported and
nothing left running, arguments checked; with both ways of starting the ranks: forked (a machine
without a GPU) and fresh interpreters (a machine with one, forced here)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from torch_pitfalls import ranks, run_ranks

HAS_FORK = "fork" in multiprocessing.get_all_start_methods()

METHODS = [
    pytest.param("fork", marks=pytest.mark.skipif(not HAS_FORK, reason="no fork here")),
    "fresh",
]


@pytest.fixture(params=METHODS)
def method(request) -> str:
    """Each way of starting the ranks that run_ranks chooses from."""
    return request.param


def _children() -> set[int]:
    """The processes this one started that are still there (zombies included), from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.add(int(entry.name))
    return found


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc here")


def _all_reduce(rank, world_size):
    import torch
    import torch.distributed as dist

    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    return rank, world_size, value  # a tensor comes back by value


def _rank_one_fails(rank, world_size):
    import torch.distributed as dist

    if rank == 1:
        raise ValueError("rank one's own error")
    dist.barrier()  # rank 0 would wait here for ever


def _rank_one_exits(rank, world_size):
    if rank == 1:
        os._exit(3)
    time.sleep(60)  # rank 0 would wait here for a minute


def _hangs(rank, world_size):
    time.sleep(60)


def test_results_in_rank_order_with_a_working_group(method):
    results = run_ranks(_all_reduce, 3, start_method=method)
    assert [(r, w, v.item()) for r, w, v in results] == [(0, 3, 6.0), (1, 3, 6.0), (2, 3, 6.0)]


@needs_proc
def test_a_failing_rank_is_raised_with_its_traceback_and_the_others_stopped(method):
    before = _children()  # other tests' workers may still be alive
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="rank 1 raised:\n(.|\n)*rank one.s own error"):
        run_ranks(_rank_one_fails, 2, start_method=method, timeout=60)
    assert time.monotonic() - start < 50  # not the timeout: the waiting rank was terminated
    assert _children() <= before


@needs_proc
def test_a_rank_that_dies_is_reported(method):
    before = _children()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="rank 1 died with exit code 3"):
        run_ranks(_rank_one_exits, 2, start_method=method, timeout=60)
    assert time.monotonic() - start < 50  # not the timeout
    assert _children() <= before


@needs_proc
def test_a_hanging_rank_times_out_and_is_terminated(method):
    before = _children()
    with pytest.raises(TimeoutError, match="2 of 2 ranks did not finish within 3"):
        run_ranks(_hangs, 2, start_method=method, timeout=3)
    assert _children() <= before


#: A page in miniature: a function of the script itself, a global it reads, a print, a backward
#: in the caller before the ranks start (what makes forked ranks fail on a GPU) and in the ranks.
SCRIPT = """\
import os

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_pitfalls import run_ranks

with open(os.environ["TOP_LEVEL_RUNS"], "a") as file:  # once per run of the top level
    file.write("ran\\n")
WEIGHT = 2.0


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 1, bias=False)

    def forward(self, x):
        return self.linear(x) * WEIGHT


def train(rank, world_size):
    model = DDP(Scaled())
    model(torch.full((1, 1), float(rank + 1))).sum().backward()  # gradients: 2 and 4
    print(f"rank {rank} printed this")
    return model.module.linear.weight.grad.item()


nn.Linear(1, 1)(torch.ones(1, 1)).sum().backward()
RESULT = run_ranks(train, 2)
print("result:", RESULT)
"""


@pytest.fixture
def script(tmp_path, monkeypatch):
    path = tmp_path / "plot_miniature.py"
    path.write_text(SCRIPT)
    monkeypatch.setenv("TOP_LEVEL_RUNS", str(tmp_path / "runs.txt"))
    monkeypatch.setenv(ranks.START_METHOD_ENV, "fresh")
    return path


def test_fresh_ranks_run_a_function_of_a_script_run_through_runpy(script, capsys):
    import runpy

    namespace = runpy.run_path(str(script), run_name="__main__")
    assert namespace["RESULT"] == [3.0, 3.0]  # averaged by DDP across the two ranks
    assert capsys.readouterr().out == (
        "rank 0 printed this\nrank 1 printed this\nresult: [3.0, 3.0]\n"
    )
    assert (script.parent / "runs.txt").read_text() == "ran\n"  # the ranks did not run it again


def test_fresh_ranks_run_a_function_of_a_script_run_as_python_script(script):
    result = subprocess.run(
        [sys.executable, script.name],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "rank 0 printed this\nrank 1 printed this\nresult: [3.0, 3.0]\n"
    assert (script.parent / "runs.txt").read_text() == "ran\n"


def test_fresh_ranks_report_a_function_that_cannot_be_pickled():
    import threading

    lock = threading.Lock()
    with pytest.raises(TypeError, match="lock") as caught:
        run_ranks(lambda rank, world_size: lock.locked(), 2, start_method="fresh")
    assert any("must be picklable with cloudpickle" in note for note in caught.value.__notes__)


def test_fork_without_an_accelerator_fresh_interpreters_with_one(monkeypatch):
    monkeypatch.delenv(ranks.START_METHOD_ENV, raising=False)
    expected = "fork" if HAS_FORK else "fresh"
    assert ranks._default_start_method() == (expected if ranks._fork_is_safe() else "fresh")
    for module in filter(None, [torch.cuda, getattr(torch, "accelerator", None)]):
        monkeypatch.setattr(module, "is_available", lambda: True)
    assert not ranks._fork_is_safe()
    assert ranks._default_start_method() == "fresh"
    monkeypatch.setenv(ranks.START_METHOD_ENV, "fork")  # the environment variable decides
    if HAS_FORK:
        assert ranks._default_start_method() == "fork"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"fn": 3}, TypeError, "fn must be callable"),
        ({"world_size": 0}, ValueError, "world_size must be an int >= 1"),
        ({"world_size": True}, ValueError, "world_size must be an int >= 1"),
        ({"timeout": 0}, ValueError, "timeout must be > 0"),
        ({"start_method": "thread"}, ValueError, r"start_method must be one of \[.*'fresh'\]"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, message):
    arguments = {"fn": _all_reduce, "world_size": 2} | kwargs
    with pytest.raises(error, match=message):
        run_ranks(**arguments)


def test_a_bad_start_method_in_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv(ranks.START_METHOD_ENV, "thread")
    with pytest.raises(ValueError, match=f"{ranks.START_METHOD_ENV} must be one of"):
        run_ranks(_all_reduce, 2)

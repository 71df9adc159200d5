"""The "spawn-main-guard" page's scripts under the start methods the page does not run.

The page runs its unguarded script under "spawn" and "fork", and the guarded one under "spawn".
Here: "forkserver" (Linux's default since Python 3.14) fails and is fixed like "spawn", and the
guarded script under "fork" behaves as the unguarded one does.
"""

from __future__ import annotations

import multiprocessing

import pytest

from torch_pitfalls import run_script

from .conftest import run_example

METHODS = multiprocessing.get_all_start_methods()


@pytest.fixture(scope="module")
def page():
    return run_example("spawn-main-guard", "cpu").namespace


@pytest.mark.skipif("forkserver" not in METHODS, reason="no forkserver on this platform")
def test_forkserver_needs_the_guard_like_spawn(page, tmp_path):
    script = tmp_path / "train.py"
    # Under forkserver the workers are the server's children, not the main process's: no SIGCHLD
    # reaches the DataLoader's handler when they die, so it finds them gone only when its own
    # timeout expires (the page's 60 s). A 5 s timeout keeps the test short; same failure, sooner.
    assert "timeout=60," in page["UNGUARDED"]
    script.write_text(page["UNGUARDED"].replace("timeout=60,", "timeout=5,"))
    unguarded = run_script(script, "forkserver", timeout=120)
    assert unguarded.returncode == 1
    assert "bootstrapping phase" in unguarded.stderr
    assert unguarded.last_error_line().endswith(") exited unexpectedly")

    script.write_text(page["GUARDED"])
    guarded = run_script(script, "forkserver", timeout=120)
    assert guarded.returncode == 0
    assert "batches: [[0, 1, 4, 9], [16, 25, 36, 49]]" in guarded.stdout
    names = [run[0] for run in page["module_level_runs"](guarded)]
    assert names == ["__main__", "__mp_main__", "__mp_main__"]  # the module level, in each worker


@pytest.mark.skipif("fork" not in METHODS, reason="no fork on this platform")
def test_the_guard_changes_nothing_under_fork(page, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(page["GUARDED"])
    guarded = run_script(script, "fork", timeout=120)
    assert guarded.returncode == 0
    assert guarded.stdout == page["forked"].stdout

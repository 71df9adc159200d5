"""
.. _spawn-main-guard:

DataLoader workers under spawn need ``if __name__ == "__main__":``
===================================================================

A training script runs on Linux, then fails on macOS or Windows as soon as its
:class:`~torch.utils.data.DataLoader` has ``num_workers > 0``: the traceback says "An attempt has
been made to start a new process before the current process has finished its bootstrapping phase",
and ends with "DataLoader worker (pid(s) …) exited unexpectedly".
Under the "spawn" start method (the default on macOS and Windows) and "forkserver" (the default on
Linux since Python 3.14), every worker process starts a fresh interpreter and runs the script's
module level again.
Without the ``if __name__ == "__main__":`` guard, that run reaches the loop over the DataLoader and
tries to start workers of its own.

.. admonition:: What you will learn

   * what a worker process runs of your script under "spawn", and why "fork" hides the mistake;
   * why the guard, not ``num_workers=0``, is the fix;
   * that the module level still runs once in every worker, guard or not.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.DataLoader` with ``num_workers``; running a Python file as a script.

Helpers used: :func:`~torch_pitfalls.get_device` and :func:`~torch_pitfalls.run_script`, which
runs a script in a child process with a timeout (``python train.py``: the main module must be a
file for "spawn" to import it again).
"""

# %%
# The symptom
# -----------
#
# A small training script, written the way short examples and tutorials are: imports, a dataset
# class, a DataLoader with two workers, and the loop, all at module level.
# Every line it prints says which process printed it; the start method comes from the command line,
# so that the page runs the same file under "spawn" and "fork".
import multiprocessing
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torch_pitfalls import get_device, run_script

device = get_device()
print(f"device: {device} (the DataLoader's workers are CPU processes on every device)")

UNGUARDED = """\
import multiprocessing
import sys

from torch.utils.data import DataLoader, Dataset

# one write per line: the processes share this output, and print() writes its parts separately
sys.stdout.write(f"module level runs as {__name__} in {multiprocessing.current_process().name}\\n")
sys.stdout.flush()


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return index**2


start_method = sys.argv[1]
loader = DataLoader(Squares(), batch_size=4, num_workers=2, timeout=60,
                    multiprocessing_context=start_method)
print("batches:", [batch.tolist() for batch in loader], flush=True)
"""

folder = tempfile.TemporaryDirectory()  # removed at the end of the page
train_py = Path(folder.name) / "train.py"
train_py.write_text(UNGUARDED)


PID = re.compile(r"\bpid(\(s\))? \d+(?:, \d+)*")
WORKER = re.compile(r"SpawnProcess-\d+")


def show(result):
    """What the script printed, its exit status and the lines of its errors that matter: each
    distinct line once, process ids as ``<pid>`` and a worker's number as ``<n>`` (which worker
    starts first, how many print before the main process stops, and the ids change at every
    run; the asserts below read the raw output)."""
    print(f"exit status: {result.returncode}")
    for line in dict.fromkeys(
        WORKER.sub("SpawnProcess-<n>", ln) for ln in result.stdout.splitlines()
    ):
        print("  stdout:", line)
    shown = []
    for line in result.stderr.splitlines():
        if line.lstrip().startswith(("An attempt", "current process", "RuntimeError: DataLoader")):
            line = PID.sub(lambda match: f"pid{match[1] or ''} <pid>", line.strip())
            if line not in shown:
                shown.append(line)
                print("  stderr:", line)


def module_level_runs(result):
    """The (name, process) of every run of the script's module level, main process first."""
    runs = [line.split()[4::2] for line in result.stdout.splitlines() if "runs as" in line]
    return sorted(runs, key=lambda run: (run[0] != "__main__", run[1]))


# The script runs under "spawn" here, and under "fork" further down; the fork run is started now,
# beside it, in a thread of its own, to keep the page quick (each run is a process of its own).
has_fork = "fork" in multiprocessing.get_all_start_methods()  # not on Windows
beside = ThreadPoolExecutor(max_workers=1)
fork_run = beside.submit(run_script, train_py, "fork", timeout=120) if has_fork else None
spawned = run_script(train_py, "spawn", timeout=120)
show(spawned)

# %%
# **The script fails under "spawn"**, with two errors: the workers fail while they start (the
# "bootstrapping phase" message), and the main process, waiting for batches, finds a worker dead
# and stops.
# And the line at the top of the script ran more than once: in the main process, under the name
# ``__main__``, and again in the workers, under the name ``__mp_main__``.
# (The main process stops at the first dead worker: a worker that is slower to start may be
# stopped before it prints, so the number of lines from the workers can vary from run to run.)

assert spawned.returncode == 1
assert "batches:" not in spawned.stdout
assert 1 <= spawned.stderr.count("current process has finished its bootstrapping phase") <= 2
# Which of the main process's two checks finds the dead worker first varies from run to run: its
# last line says "(pid(s) N) exited unexpectedly" or "(pid N) exited unexpectedly with exit code 1".
assert re.fullmatch(
    r"RuntimeError: DataLoader worker \(pid(?:\(s\))? \S+\) exited unexpectedly"
    r"(?: with exit code 1\. Details are lost due to multiprocessing\."
    r" Rerunning with num_workers=0 may give better error trace\.)?",
    spawned.last_error_line(),
)
runs = module_level_runs(spawned)
print("module level ran as:", sorted({name for name, _ in runs}))
assert runs[0] == ["__main__", "MainProcess"]
assert 1 <= len(runs[1:]) <= 2
assert all(
    name == "__mp_main__" and process.startswith("SpawnProcess") for name, process in runs[1:]
)

# %%
# The same file under "fork", the default on Linux up to Python 3.13, loads its batches:

if has_fork:
    forked = fork_run.result()
    show(forked)
    assert forked.returncode == 0
    assert "batches: [[0, 1, 4, 9], [16, 25, 36, 49]]" in forked.stdout
    assert module_level_runs(forked) == [["__main__", "MainProcess"]]
beside.shutdown()
print("the start method of this machine's new processes:", multiprocessing.get_start_method())

# %%
# Why
# ---
#
# **A worker started with "spawn" is a new Python interpreter, and it runs the main script's
# module level before it can do anything.**
# The worker receives its copy of the dataset pickled, and a pickle names a class by module and
# name: :mod:`multiprocessing` runs the main script in every process it starts, as a module named
# ``__mp_main__`` (not ``__main__``), so that the classes and functions defined there, such as
# ``Squares``, exist when the worker unpickles its copy.
# Every statement at module level runs again, including the construction of the DataLoader and
# the loop over it.
# Iterating a DataLoader with workers starts processes, and :mod:`multiprocessing` refuses to
# start a process from a process that is still starting: that is the "bootstrapping phase" error,
# raised in each worker.
# The worker exits with status 1; the DataLoader of the main process notices that its workers are
# dead and raises "exited unexpectedly".
# "forkserver" starts its workers the same way, so Linux with Python 3.14 fails like macOS and
# Windows.
#
# With "fork", a worker is a copy of the main process's memory, made at the moment it starts: the
# dataset is already there and nothing is run again.
# That is why the same script "works on Linux": the mistake is there, but "fork" never runs the
# module level twice.
#
# The fix
# -------
#
# **Keep imports and definitions at module level, and put the work in a function that runs only
# under** ``if __name__ == "__main__":``.
# In a worker the script runs as ``__mp_main__``, so the guard is false there: the worker defines
# ``Squares`` and stops.

GUARDED = """\
import multiprocessing
import sys

from torch.utils.data import DataLoader, Dataset

# one write per line: the processes share this output, and print() writes its parts separately
sys.stdout.write(f"module level runs as {__name__} in {multiprocessing.current_process().name}\\n")
sys.stdout.flush()


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return index**2


def main(start_method):
    loader = DataLoader(Squares(), batch_size=4, num_workers=2, timeout=60,
                        multiprocessing_context=start_method)
    print("batches:", [batch.tolist() for batch in loader], flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
"""

train_py.write_text(GUARDED)
guarded = run_script(train_py, "spawn", timeout=120)
show(guarded)
assert guarded.returncode == 0
assert "batches: [[0, 1, 4, 9], [16, 25, 36, 49]]" in guarded.stdout

# %%
# ``num_workers=0`` is the other answer found in many threads: with no workers, no process starts
# and the error disappears, but the batches are then loaded in the main process, between the
# training steps.
# The guard keeps the workers.
#
# The module level still runs in every worker
# -------------------------------------------
#
# **The guard stops the work, not the module level**: the line at the top of the guarded script
# still ran once in each worker.
# (Under "fork" the guard costs nothing: the workers are copies of the main process and run no
# part of the script.)

runs = module_level_runs(guarded)
print("module level ran as:", runs)
assert runs == [
    ["__main__", "MainProcess"],
    ["__mp_main__", "SpawnProcess-1"],
    ["__mp_main__", "SpawnProcess-2"],
], guarded

# %%
# Anything placed there runs again in every worker, and again for every epoch unless the
# DataLoader has ``persistent_workers=True``: reading a large file, building a model, opening a
# log.
# Keep the module level to imports, constants and definitions; load data inside ``main()`` or in the
# dataset's ``__init__``.
# A dataset that reads its data in ``__init__`` is pickled to the workers with its data; one that
# opens files lazily in ``__getitem__`` sends only its paths.
#
# What a worker receives, and why a random generator stored in the dataset is copied into every
# worker, is the subject of :ref:`dataloader-worker-rng`; why a change to the dataset made in the
# main process does not reach the workers is :ref:`dataset-state-in-workers`.
#
# A real-world report: the CIFAR-10 tutorial on Windows
# -----------------------------------------------------
#
# A user running PyTorch's "Training a classifier" tutorial on Windows 10 got the bootstrapping
# error from its first loop over the training data
# (`pytorch/tutorials issue 1661 <https://github.com/pytorch/tutorials/issues/1661>`_): the
# tutorial builds its two DataLoaders with ``num_workers=2`` at module level, as the script above
# does.
# A later pull request wrapped the tutorial in ``if __name__ == "__main__":``
# (`pytorch/tutorials pull request 2132 <https://github.com/pytorch/tutorials/pull/2132>`_); the
# maintainers closed it, noting that the tutorial already tells Windows users to set
# ``num_workers=0`` and that wrapping a whole tutorial in the guard is unusual.
# For a script of your own, the guard is the fix that keeps the workers.
#
# Detectors
# ---------
#
# The static checker's rule ``TP121`` (see :doc:`/detectors`) finds this pitfall in your own
# scripts: module-level code that iterates a DataLoader with workers, or starts ``mp.spawn``, a
# ``Pool`` or a ``Process``, outside ``if __name__ == "__main__":``. Run on the page's two
# scripts, it flags the unguarded one only:

from torch_pitfalls.lint import check_source

static = {
    name: check_source(code, path="train.py", language="en")
    for name, code in (("unguarded", UNGUARDED), ("guarded", GUARDED))
}
for finding in static["unguarded"]:
    print(finding)
print("findings in the guarded script:", static["guarded"])
assert [f.rule for f in static["unguarded"]] == ["TP121"] and static["guarded"] == []

# %%
# Takeaway
# --------
#
# **Under "spawn" and "forkserver", every DataLoader worker runs your script's module level again:
# put the training code under** ``if __name__ == "__main__":`` **and keep only imports and
# definitions outside it.**
# A script that works on Linux up to Python 3.13 can hide the mistake, because "fork" runs nothing
# again; ``num_workers=0`` hides it by giving up the workers.

folder.cleanup()

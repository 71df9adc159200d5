"""
.. _torchrun-local-rank:

``--local_rank``, ``--local-rank`` and ``LOCAL_RANK``
=====================================================

A training script that worked for years with ``python -m torch.distributed.launch`` stops at once
on a newer PyTorch with ``error: unrecognized arguments: --local-rank=0``.
Started with ``torchrun`` instead, it does not fail at all, and every process believes it is local
rank 0: they all pick the first GPU.
The two launchers tell each process its rank differently, and a script that parses
``--local_rank`` depends on a command-line argument that one launcher renamed and the other never
passes.

.. admonition:: What you will learn

   * what ``torch.distributed.launch`` and ``torchrun`` pass to each process: arguments and
     environment variables;
   * why an ``argparse`` option ``--local_rank`` does not accept ``--local-rank``;
   * the fix that works with both launchers and every release: read ``LOCAL_RANK`` from the
     environment.

.. admonition:: Prerequisites

   Starting a distributed job with ``torchrun --nproc-per-node=N train.py``;
   :func:`torch.distributed.init_process_group`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.run_script`.
"""

# %%
# The symptom
# -----------
#
# A training script in the style of many older examples: it reads its local rank from an
# argument ``--local_rank`` (defaulting to 0) and would then call
# ``torch.cuda.set_device(args.local_rank)``.
# It first prints, in one line, what it received: its command-line arguments and the environment
# variable ``LOCAL_RANK``.
# It needs no GPU and does not even import torch.
import pathlib
import re
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

import torch

from torch_pitfalls import get_device, run_script

device = get_device()
print(f"device: {device} (the launchers start CPU processes here), PyTorch {torch.__version__}")

TRAIN = textwrap.dedent(
    """\
    import argparse, os, sys, time

    line = f"LOCAL_RANK={os.environ['LOCAL_RANK']} argv={sys.argv[1:]}"
    print(line, flush=True)
    # (for this page: once one process fails, its launcher stops the others; each waits up to
    # 5 s until its launcher's processes, children of one parent, have all printed their line)
    here, group = os.path.dirname(os.path.abspath(__file__)), f"printed-{os.getppid()}-"
    open(os.path.join(here, group + os.environ["LOCAL_RANK"]), "w").close()
    for _ in range(500):
        printed = [name for name in os.listdir(here) if name.startswith(group)]
        if len(printed) >= int(os.environ["LOCAL_WORLD_SIZE"]):
            break
        time.sleep(0.01)
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    args = parser.parse_args()
    print(f"LOCAL_RANK={os.environ['LOCAL_RANK']} args.local_rank={args.local_rank}", flush=True)
    """
)
# `torchrun` is `python -m torch.distributed.run`; this small script runs a launcher module as
# `python -m` would, so that run_script can time it out and leave nothing running
LAUNCHER = (
    "import runpy, sys\nrunpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n"
)

# %%
# Each launcher starts two processes on this machine (``--standalone`` picks a free port), both
# at the same time:

scratch = tempfile.TemporaryDirectory(prefix="torchrun-local-rank-")
folder = pathlib.Path(scratch.name)
(folder / "train.py").write_text(TRAIN)
(folder / "launcher.py").write_text(LAUNCHER)
launchers = {
    "torchrun": "torch.distributed.run",
    "python -m torch.distributed.launch": "torch.distributed.launch",
}


def launch(module):
    return run_script(
        folder / "launcher.py",
        module,
        "--standalone",
        "--nproc-per-node=2",
        "--monitor-interval=0.1",
        str(folder / "train.py"),
        timeout=120,
    )


try:
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(launchers, pool.map(launch, launchers.values()), strict=True))
finally:
    scratch.cleanup()

# The launchers relay their workers' output, and two workers' lines can arrive run together:
# each record is read on its own, wherever the line breaks fall.
worker_line = re.compile(
    r"LOCAL_RANK=\d+ (?:argv=\[[^\]]*\]|args\.local_rank=\d+)"
    r"|\S+: error: unrecognized arguments: --local-rank=\d+"
)
seen = {}
for name, result in results.items():
    seen[name] = sorted(worker_line.findall(result.stdout + result.stderr))
    print(f"{name}: exit status {result.returncode}")
    for line in seen[name]:
        print("   ", line.strip())

# %%
# **Under torch.distributed.launch the script stops; under torchrun it runs, but every process
# reads the default local rank, 0: both would use GPU 0.**
# The launcher gave each process ``--local-rank=N``, with a hyphen, which its parser does not
# know; torchrun gives none, so ``args.local_rank == 0`` in both processes.
# Only the environment variable ``LOCAL_RANK`` is right under both.

assert results["torchrun"].returncode == 0
assert seen["torchrun"] == [
    "LOCAL_RANK=0 args.local_rank=0",
    "LOCAL_RANK=0 argv=[]",
    "LOCAL_RANK=1 args.local_rank=0",
    "LOCAL_RANK=1 argv=[]",
]
launch_seen = seen["python -m torch.distributed.launch"]
assert results["python -m torch.distributed.launch"].returncode != 0
assert "LOCAL_RANK=0 argv=['--local-rank=0']" in launch_seen
assert "LOCAL_RANK=1 argv=['--local-rank=1']" in launch_seen
for rank in (0, 1):
    assert f"train.py: error: unrecognized arguments: --local-rank={rank}" in launch_seen

# %%
# ``torch.distributed.launch`` also warns that it is deprecated, and says what to do:

launch_stderr = results["python -m torch.distributed.launch"].stderr
warning = re.search(r"FutureWarning: (.*?)\n\n", launch_stderr, re.DOTALL)
print(warning.group(1))
assert "torch.distributed.launch is deprecated" in warning.group(1)

# %%
# Why
# ---
#
# Both launchers start one process per GPU and give each its place in the job through environment
# variables: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK``, the
# index of the process on its machine (the GPU it should use).
# ``torch.distributed.launch`` is now ``torchrun`` plus one thing: unless it is given
# ``--use-env``, it appends ``--local-rank=N`` to the script's arguments, for scripts written
# before the environment variable existed.
# Up to PyTorch 1.13 that argument was written ``--local_rank``; since 2.0 it is ``--local-rank``
# (see below).
#
# ``argparse`` turns both spellings into the attribute ``local_rank``, but it matches the option
# strings as written: an option declared as ``--local_rank`` does not accept ``--local-rank``.

import argparse

old_parser = argparse.ArgumentParser()
old_parser.add_argument("--local_rank", type=int, default=0)
for argv in (["--local_rank=1"], ["--local-rank=1"], []):
    args, unknown = old_parser.parse_known_args(argv)
    print(f"argv {argv}: args.local_rank={args.local_rank}, not recognised: {unknown}")
assert old_parser.parse_known_args(["--local-rank=1"]) == (
    argparse.Namespace(local_rank=0),
    ["--local-rank=1"],
)

# %%
# ``parse_args``, which most scripts call, turns the leftover into the error above and exits with
# status 2; and with no argument at all, as under ``torchrun``, the default is used silently.

# %%
# The fix
# -------
#
# **Read the local rank from the environment variable LOCAL_RANK: both launchers set it.**
# ``local_rank = int(os.environ["LOCAL_RANK"])``.
# The first line each process printed above shows ``LOCAL_RANK`` correct under both launchers.
# Start the job with ``torchrun``, and drop the ``--local_rank`` option; a script that must also
# accept the argument from ``torch.distributed.launch`` on any release declares both spellings,
# as PyTorch's documentation recommends (the environment variable is still the one to trust):

parser = argparse.ArgumentParser()
parser.add_argument("--local-rank", "--local_rank", type=int, default=None)
for argv in (["--local-rank=1"], ["--local_rank=1"], []):
    print(f"argv {argv}: args.local_rank={parser.parse_args(argv).local_rank}")
assert [parser.parse_args(a).local_rank for a in (["--local-rank=1"], ["--local_rank=1"])] == [1, 1]
assert parser.parse_args([]).local_rank is None

# %%
# In the script itself:
#
# .. code-block:: python
#
#     local_rank = int(os.environ["LOCAL_RANK"])
#     torch.cuda.set_device(local_rank)
#     dist.init_process_group("nccl")  # RANK, WORLD_SIZE, MASTER_*: from the environment
#     model = DDP(model.to(local_rank), device_ids=[local_rank])
#
# ``RANK`` (the global rank) and ``LOCAL_RANK`` are equal on a single machine only; use
# ``LOCAL_RANK`` for the GPU and ``RANK`` for what only one process of the whole job should do.

# %%
# Changed in PyTorch 2.0: ``--local-rank``
# ----------------------------------------
#
# Up to PyTorch 1.13, ``torch.distributed.launch`` passed ``--local_rank=N``, the spelling of the
# older examples.
# `Pull request #94505 <https://github.com/pytorch/pytorch/pull/94505>`_, "Prefer dash over
# underscore in command-line options", first released in
# `PyTorch 2.0 <https://github.com/pytorch/pytorch/releases/tag/v2.0.0>`_, made PyTorch's
# command-line tools prefer hyphens, and the launcher has passed ``--local-rank=N`` since; the
# documentation of the launch utility notes the change under 2.0.0 and recommends declaring both
# spellings.
# The note is also in ``torchrun``'s documentation, which says that it passes ``--local-rank`` as
# well; as the run above shows, ``torchrun`` passes no argument, only the environment.

# %%
# A real-world report: "unrecognized arguments: --local-rank=0"
# --------------------------------------------------------------
#
# Soon after PyTorch 2.0, users of many training repositories reported the same failure.
# In the timm project (`pytorch-image-models issue 1724
# <https://github.com/huggingface/pytorch-image-models/issues/1724>`_, "Pytorch 2.0 breaks
# distributed training"), the distributed training script stopped on every process with
# ``error: unrecognized arguments: --local-rank=N``.
# In the mmaction2 project, a contributor traced the failure to PyTorch's pull request above and
# proposed to follow it (`mmaction2 pull request 1558
# <https://github.com/open-mmlab/mmaction2/pull/1558>`_).

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP116`` (see :doc:`/detectors`) finds ``add_argument("--local_rank",
# …)`` without the ``"--local-rank"`` spelling in the same call, in your own code. It is on by
# default: a script launched with ``torch.distributed.launch`` stops on PyTorch 2.0 and later,
# and a script run with another launcher breaks as soon as someone launches it that way.
#
# Takeaway
# --------
#
# **torch.distributed.launch passes --local-rank (with a hyphen since PyTorch 2.0), torchrun
# passes no argument at all: read the local rank from os.environ["LOCAL_RANK"], which both set.**
# A ``--local_rank`` option either fails with "unrecognized arguments" or silently leaves every
# process on local rank 0.

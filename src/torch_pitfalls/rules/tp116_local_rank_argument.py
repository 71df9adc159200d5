"""``TP116``: an ``argparse`` option ``--local_rank`` without its ``--local-rank`` spelling.

.. rubric:: What it does

A call ``<parser>.add_argument(...)`` (a parser, an argument group) one of whose option strings
is ``"--local_rank"`` and none ``"--local-rank"``. Reported at the call. Not reported: a call
that declares both spellings, or ``--local-rank`` alone; any other option; a file that imports
``jax`` or ``flax`` (a JAX training script, which no PyTorch launcher starts).

.. rubric:: Why is this bad?

Since PyTorch 2.0, ``python -m torch.distributed.launch`` passes each process
``--local-rank=N`` (with a hyphen; up to 1.13 it was ``--local_rank``). ``argparse`` does not
take one spelling for the other: a script that declares only ``--local_rank`` stops with
``error: unrecognized arguments: --local-rank=0``. Under ``torchrun``, which passes no argument
at all, the option keeps its default and every process believes it is local rank 0. Reading
``LOCAL_RANK`` from the environment works under both launchers.

.. rubric:: Example

.. code-block:: python

    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)

.. rubric:: Use instead

.. code-block:: python

    import argparse
    import os

    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", "--local_rank", type=int,
                        default=int(os.environ.get("LOCAL_RANK", 0)))
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torch_pitfalls.lint.analyses.scopes import method_call
from torch_pitfalls.lint.context import Context
from torch_pitfalls.rules import _rule

RULE = _rule(
    "TP116",
    "lint",
    "torchrun-local-rank",
    "--local_rank without --local-rank",
    "只声明 --local_rank 而没有 --local-rank",
    "since PyTorch 2.0, torch.distributed.launch passes --local-rank=N, which an option "
    "declared only as --local_rank rejects (unrecognized arguments), and torchrun passes "
    'neither: declare both, add_argument("--local-rank", "--local_rank", ...), and default to '
    'int(os.environ["LOCAL_RANK"])',
    "自 PyTorch 2.0 起 torch.distributed.launch 传入的是 --local-rank=N，只声明 --local_rank "
    "的选项会拒绝它（unrecognized arguments），而 torchrun 两者都不传：应同时声明两种写法 "
    'add_argument("--local-rank", "--local_rank", ...)，并以 int(os.environ["LOCAL_RANK"]) '
    "作为默认值",
)


_OTHER_FRAMEWORKS = frozenset({"jax", "flax"})


def check(context: Context) -> Iterator[tuple[int, int]]:
    """Where ``add_argument`` declares ``--local_rank`` without ``--local-rank``."""
    if context.source and "--local_rank" not in context.source:
        return
    roots = {name.partition(".")[0] for name in context.imports.names.values()}
    if roots & _OTHER_FRAMEWORKS:
        return  # a JAX script: no PyTorch launcher passes it anything
    for node in ast.walk(context.tree):
        if method_call(node, "add_argument"):
            options = {a.value for a in node.args if isinstance(a, ast.Constant)}
            if "--local_rank" in options and "--local-rank" not in options:
                yield node.lineno, node.col_offset

"""Running a demonstration in a child process.

A device-side assert leaves the CUDA context of its process unusable: every later CUDA call in
that process fails. Pages that show one run it through :func:`run_isolated`, so the examples after
them still run on CUDA in the same build. Introduced on "index-select".
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from torch_pitfalls.devices import DEVICE_ENV


@dataclass(frozen=True)
class Isolated:
    """What a child process of :func:`~torch_pitfalls.run_isolated` did.

    Attributes:
        returncode: the exit status (``int``; 0 on success).
        stdout: what it printed on standard output (``str``).
        stderr: what it printed on standard error (``str``), tracebacks included.
    """

    returncode: int
    stdout: str
    stderr: str

    def last_error_line(self) -> str:
        """The last line of ``stderr`` that names an exception (``"SomeError: ..."``), or ``""``.

        >>> Isolated(1, "", "Traceback ...\\nRuntimeError: boom\\n").last_error_line()
        'RuntimeError: boom'
        """
        for line in reversed(self.stderr.splitlines()):
            head = line.split(":", 1)[0]
            if ":" in line and head.endswith(("Error", "Exception")) and " " not in head:
                return line.strip()
        return ""


def run_isolated(
    source: str,
    *,
    device: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> Isolated:
    """Run Python ``source`` in a fresh interpreter and return what happened.

    The child uses the same interpreter (``sys.executable``) and environment as the caller, plus
    ``env``; with ``device`` it sets :data:`~torch_pitfalls.devices.DEVICE_ENV` so that
    :func:`~torch_pitfalls.get_device` picks that device there.

    Args:
        source: Python code (``str``), run with ``python -c``.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for the child, or ``None`` to inherit.
        env: extra environment variables (``dict`` of ``str`` to ``str``), e.g.
            ``{"CUDA_LAUNCH_BLOCKING": "1"}``.
        timeout: seconds (``float`` > 0) before the child is killed.

    Returns:
        An :class:`~torch_pitfalls.isolation.Isolated` with the exit status and both outputs.

    Raises:
        TypeError: ``source`` is not a ``str`` or ``env`` holds a non-``str`` key or value.
        ValueError: ``timeout`` is not positive.
        subprocess.TimeoutExpired: the child ran longer than ``timeout``.

    >>> result = run_isolated("import sys; print('hi'); sys.exit(3)")
    >>> result.returncode, result.stdout
    (3, 'hi\\n')
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of Python code, got {type(source).__name__}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    child_env = dict(os.environ)
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"env must map str to str, got {key!r}: {value!r}")
        child_env[key] = value
    if device is not None:
        child_env[DEVICE_ENV] = device
    completed = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=timeout,
        check=False,
    )
    return Isolated(completed.returncode, completed.stdout, completed.stderr)

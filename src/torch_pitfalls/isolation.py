"""Running a demonstration in a child process.

A device-side assert leaves the CUDA context of its process unusable: every later CUDA call in
that process fails. Pages that show one run it through :func:`run_isolated`, so the examples after
them still run on CUDA in the same build. Introduced on "index-select".
"""

from __future__ import annotations

import os
import signal
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


def run_script(path: str | os.PathLike[str], *args: str, timeout: float = 120.0) -> Isolated:
    """Run the Python script at ``path`` as ``python path args...`` and return what happened.

    Unlike :func:`run_isolated` (``python -c``), the child's main module is a file, as in
    ``python train.py``: the "spawn" and "forkserver" start methods then import it again in every
    child process they start. The child runs in a new process group; when it runs longer than
    ``timeout``, the whole group (the script and the processes it started, e.g. DataLoader
    workers) is killed before :class:`subprocess.TimeoutExpired` is raised, so nothing is left
    running. Introduced on "spawn-main-guard".

    Args:
        path: the script (``str`` or path-like).
        args: its command-line arguments (``str``).
        timeout: seconds (``float`` > 0) before the process group is killed.

    Returns:
        An :class:`~torch_pitfalls.isolation.Isolated` with the exit status and both outputs.

    Raises:
        ValueError: ``timeout`` is not positive.
        TypeError: an argument is not a ``str``.
        subprocess.TimeoutExpired: the script ran longer than ``timeout``.

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     script = pathlib.Path(folder) / "hello.py"
    ...     _ = script.write_text("import sys; print(__name__, sys.argv[1:])")
    ...     run_script(script, "a", "b").stdout
    "__main__ ['a', 'b']\\n"
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    for arg in args:
        if not isinstance(arg, str):
            raise TypeError(f"arguments must be str, got {arg!r}")
    child = subprocess.Popen(
        [sys.executable, os.fspath(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, which a timeout kills as a whole
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as timed_out:
        os.killpg(child.pid, signal.SIGKILL)
        timed_out.stdout, timed_out.stderr = child.communicate()  # what it printed before
        raise
    finally:
        if child.poll() is None:  # an interruption (Ctrl-C) while waiting: leave nothing behind
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return Isolated(child.returncode, stdout, stderr)

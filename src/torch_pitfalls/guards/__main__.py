"""The runner: ``python -m torch_pitfalls.guards [options] SCRIPT [ARGS…]``."""

from __future__ import annotations

import argparse
import runpy
import sys
import warnings
from pathlib import Path

from torch_pitfalls.guards import Guards, PitfallWarning


def main(argv: list[str] | None = None) -> int:
    """``python -m torch_pitfalls.guards [options] SCRIPT [ARGS…]``: run a script under guards.

    The script runs as ``__main__`` with ``sys.argv`` set to ``[SCRIPT, *ARGS]`` and its folder
    first on ``sys.path``, as ``python SCRIPT`` would. Returns the script's exit status
    (``SystemExit`` is honoured); a summary of the findings goes to standard error.
    """
    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.guards",
        description="Run a Python script with the torch-pitfalls runtime guards active.",
    )
    parser.add_argument("--language", help="en or zh_CN (default: environment, then locale)")
    parser.add_argument("--base-url", help="the site's base URL")
    parser.add_argument("--strict", action="store_true", help="raise instead of warning")
    parser.add_argument("--allow", default="", help="rule ids to silence, comma-separated")
    parser.add_argument("--enable", default="", help="opt-in rule ids, comma-separated")
    parser.add_argument("script", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    split = lambda text: [part.strip() for part in text.split(",") if part.strip()]  # noqa: E731
    try:
        guard = Guards(
            language=options.language,
            base_url=options.base_url,
            strict=options.strict,
            allow=split(options.allow),
            enable=split(options.enable),
        )
    except (KeyError, ValueError) as error:
        parser.error(str(error).strip("'\""))
    script = Path(options.script)
    if not script.is_file():
        parser.error(f"no such script: {script}")
    sys.argv = [str(script), *options.args]
    sys.path.insert(0, str(script.resolve().parent))
    warnings.simplefilter("default", PitfallWarning)
    status = 0
    try:
        with guard:
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
    finally:  # also when the script raises
        count = len(guard.found)
        print(
            f"torch_pitfalls.guards: {count} pitfall{'s' if count != 1 else ''} found"
            + (f" ({', '.join(guard.ids)})" if count else ""),
            file=sys.stderr,
        )
    return status


if __name__ == "__main__":
    sys.exit(main())

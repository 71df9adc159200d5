"""Offline link check of the built site with LinkChecker (the end of ``nox -s browser``).

Checks every internal link and anchor of both languages, starting from the root page; external
links are not fetched (the build machine has no network) but listed at the end. Exit status 1
when a link or anchor is broken.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CONFIG = """\
[checking]
threads=4
[filtering]
ignore=
  ^https?://
checkextern=0
[AnchorCheck]
"""


def main(html: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)  # as root, LinkChecker runs as user nobody, who must write here
        config, report = Path(tmp) / "linkcheckerrc", Path(tmp) / "links.csv"
        config.write_text(CONFIG)
        command = ["linkchecker", "--config", str(config), "--no-status", "--verbose"]
        command += ["--output=none", f"--file-output=csv/utf-8/{report}", str(html / "index.html")]
        result = subprocess.run(command, check=False)
        with report.open(encoding="utf-8") as file:
            lines = [line for line in file if not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter=";"))
    external = sorted({r["urlname"] for r in rows if r["urlname"].startswith(("http:", "https:"))})
    broken = [r for r in rows if r["valid"] == "False"]
    print(f"{len(rows)} links checked, {len(broken)} broken:")
    for row in broken:
        print(f"  {row['urlname']} (in {row['parentname']}): {row['result']}")
    print(f"{len(external)} external links, listed and not fetched:")
    print("\n".join(f"  {url}" for url in external))
    return 1 if broken or result.returncode else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

"""Taking a page home: its downloads run in a fresh environment, installed as they say.

A reader's machine is played by a new virtual environment (no system site-packages) with PyTorch
installed by pip (the version of this environment's build, from pip's configured sources, as
every nox session installs it), and nothing else. Each download's own install line then installs
the helper package's wheel from the served build, the site's address replaced by the local
server's, offline (``--no-index``: torch is already there; matplotlib for a page with a figure
comes from pip's configured sources like torch). The code cells of notebooks of both languages,
and scripts, then run to the end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from .conftest import HTML

#: (language, page, kind): no CUDA, no worker processes; one page with a figure (matplotlib).
DOWNLOADS = [
    ("en", "autograd/plot_data_vs_detach", "ipynb"),
    ("zh_CN", "autograd/plot_backward_step_zero_grad", "ipynb"),
    ("zh_CN", "autograd/plot_retain_graph", "ipynb"),
    ("en", "tensors/plot_softmax_dim", "py"),
    ("zh_CN", "modules/plot_train_eval_mode", "py"),
]
TORCH = os.environ.get("TORCH_PITFALLS_FRESH_TORCH", "torch==2.13.0")
#: The reader's environment: nothing of this one's (its PYTHONPATH would show pip this checkout).
READER_ENV = {
    key: value
    for key, value in os.environ.items()
    if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
}
PUBLISHED = re.compile(r"pip install (https?://\S+?)/wheels/(\S+\.whl)(.*)$", re.M)


def download_href(site_url: str, language: str, page: str, kind: str) -> str:
    """The page's download link of ``kind`` as the page offers it (an absolute URL)."""
    url = f"{site_url}/{language}/auto_examples/{page}.html"
    body = urllib.request.urlopen(url).read().decode()
    name = page.rsplit("/", 1)[1]
    href = re.search(rf'href="([^"]*_downloads/[^"]*/{name}\.{kind})"', body)
    assert href, f"no .{kind} download on {url}"
    return urllib.parse.urljoin(url, href[1])


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory):
    venv = tmp_path_factory.mktemp("reader") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=READER_ENV)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", TORCH], check=True, env=READER_ENV)
    return python


def test_downloads_run_in_a_fresh_environment(site_url, fresh_python, tmp_path):
    installed = set()
    for language, page, kind in DOWNLOADS:
        text = urllib.request.urlopen(download_href(site_url, language, page, kind)).read().decode()
        if kind == "ipynb":
            cells = json.loads(text)["cells"]
            first = "".join(cells[0]["source"])
            code = [
                "".join(c["source"]) for c in cells[1:] if c["cell_type"] == "code"
            ]  # fmt: skip
            script = "\n\n".join(code)
        else:
            first, script = text.split('"""', 1)[0], text
        match = PUBLISHED.search(first)
        assert match, f"{page}.{kind}: no install line in {first!r}"
        site, wheel, extra = match[1], match[2], match[3].split()
        assert (HTML / "wheels" / wheel).exists()
        if wheel not in installed:  # the helper wheel, from the served site, offline
            local = f"{site_url}/wheels/{wheel}"
            subprocess.run(
                [fresh_python, "-m", "pip", "install", "--quiet", "--no-index", local],
                check=True,
                env=READER_ENV,
            )
            installed.add(wheel)
        if extra:
            subprocess.run(
                [fresh_python, "-m", "pip", "install", "--quiet", *extra],
                check=True,
                env=READER_ENV,
            )
        if language == "zh_CN":
            assert re.search(r"[\u4e00-\u9fff]", text), f"{page}.{kind} has no Chinese"
        path = tmp_path / f"{language}-{Path(page).name}.py"
        path.write_text(script, encoding="utf-8")
        run = subprocess.run(
            [fresh_python, str(path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**READER_ENV, "MPLBACKEND": "Agg", "HOME": str(tmp_path)},
            timeout=120,
        )
        assert run.returncode == 0, f"{language} {page}.{kind}:\n{run.stdout}\n{run.stderr}"
        assert site.startswith("http")

"""Sphinx configuration of torch-pitfalls (English source; Chinese through gettext catalogs).

Build both languages with ``nox -s docs``; one language by hand with
``sphinx-build -W --keep-going -n -D language=zh_CN docs docs/_build/html/zh_CN``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The extension (docs/_ext/pitfalls) and the scripts it reads (tools/, at the repository root).
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]

import torch  # noqa: E402
from pitfalls import figures, gallery, inventory  # noqa: E402

from torch_pitfalls import environment_report  # noqa: E402

project = "torch-pitfalls"
author = "the torch-pitfalls contributors"
copyright = "2026, the torch-pitfalls contributors"
release = version = "0.1"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "pitfalls",  # docs/_ext/pitfalls: every part of the site's own build glue
]

exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "auto_examples/**/*.ipynb",
    "cuda_recordings",
    "release_recordings",
]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["pitfalls.css"]

# -- Languages ------------------------------------------------------------------------------------
language = "en"
locale_dirs = ["locale/"]
gettext_compact = False  # one catalog per page, mirroring the source tree
gettext_uuid = False
gettext_location = False  # stable catalogs: no source line numbers in the .po files

# -- Cross-references, resolved offline ---------------------------------------------------------
nitpicky = True
intersphinx_mapping = {
    "python": ("https://docs.python.org/3.11/", str(DOCS / "_inventories" / "python.inv")),
    "torch": (
        inventory.TORCH_DOCS,
        str(
            inventory.compile_inventory(
                DOCS / "_inventories" / "torch.txt", DOCS / "_build" / "inventories" / "torch.inv"
            )
        ),
    ),
}
intersphinx_timeout = 1
# Undocumented in the Python docs, so absent from their inventory.
nitpick_ignore = [
    ("py:class", "warnings.WarningMessage"),
    ("py:class", "torch_pitfalls.guards._common._Place"),  # private: a line of the user's code
]

# -- API reference of the helpers -----------------------------------------------------------------
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Shapes", "Notes")]

# -- MyST pages (myst-nb executes the pages that are notebooks: the home page) ------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# The notebooks (home page, detectors) run once per two-language build: the Chinese build reuses
# the English build's outputs from jupyter-cache. The cache lives under a digest of what the outputs
# depend on besides the cells (helper sources, torch and Python versions, device and its name), so
# a new torch or another machine runs them again.
nb_execution_mode = "cache"
_environment = environment_report()  # the versions and the device, read once per build
_cache_key = hashlib.sha256(
    (gallery.inputs_digest() + repr(sorted(_environment.items()))).encode()
).hexdigest()[:16]
nb_execution_cache_path = str(DOCS / "_build" / "jupyter_cache" / _cache_key)
nb_execution_timeout = 120
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# -- Gallery ------------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "subsection_order": "pitfalls.gallery.topic_order",
    "within_subsection_order": "pitfalls.gallery.CatalogOrder",
    "download_all_examples": True,
    "remove_config_comments": True,
    "reset_modules": ("matplotlib", "pitfalls.gallery.reset_example"),
    "show_memory": False,
    "show_api_usage": False,
    "min_reported_time": 10**9,  # run times vary: keep them out of the pages (and the catalogs)
    "write_computation_times": False,
    # The downloads offered on the pages are written by docs/_ext/pitfalls/downloads.py, in the
    # page's language, with the helper package's install line first.
    "image_scrapers": (figures.FigureScraper(),),
    "line_numbers": False,
    "plot_gallery": "True",
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

# -- HTML ---------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "torch-pitfalls"
html_favicon = "_static/favicon.svg"
html_last_updated_fmt = None
html_show_sourcelink = False
# Chinese search: Sphinx loads jieba's own dictionary a second time as a "user dictionary" unless
# told otherwise (seconds per build); jieba reads its dictionary once anyway.
html_search_options = {"dict": ""}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
    "navbar_end": ["language-switch", "theme-switcher", "navbar-icon-links"],
    "article_footer_items": ["repository-links", "verified-with"],
}
html_context = {
    "default_mode": "auto",
    "pitfalls_env": {
        **_environment,
        "device_label": f"{_environment['device']} ({_environment['device_name']})",
    },
}

copybutton_prompt_text = r">>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

rst_prolog = f"""
.. |torch_version| replace:: {torch.__version__}
"""

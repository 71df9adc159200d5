"""The project's scripts, run from the repository root as ``python -m tools.<name>`` (by nox).

- :mod:`tools.releases`: every example on each PyTorch release (``nox -s releases``);
- :mod:`tools.bench`: build, example and detector timings (``nox -s bench``);
- :mod:`tools.linkcheck`: offline link check of the built site (end of ``nox -s browser``);
- :mod:`tools.catalogs`: translation progress, and the one form of the catalogs (``nox -s
  translations``, ``nox -s i18n``, end of ``nox -s tests``);
- :mod:`tools.reproducible`: every example run again and compared (``nox -s reproducible``);
- :mod:`tools.published_url`: the host serves the site where the detectors link (Read the Docs);
- :mod:`tools.figures`: new texts of the gallery's figures into ``figures.po``.

The docs extension (``docs/_ext/pitfalls``) imports :mod:`tools.releases` and
:mod:`tools.linkcheck`; nothing here imports the extension.
"""

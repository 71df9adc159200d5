"""``python -m torch_pitfalls.lint``: the command line (:func:`torch_pitfalls.lint.main`)."""

import sys

from torch_pitfalls.lint.cli import main

sys.exit(main())

"""``python -m tpsviz``: see :mod:`tpsviz.cli`."""

import sys

from .cli import main

sys.exit(main())

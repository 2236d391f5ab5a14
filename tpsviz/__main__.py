"""``python -m tpsviz``: see :mod:`tpsviz.cli.main`."""

import sys

from tpsviz.cli.main import main

sys.exit(main())

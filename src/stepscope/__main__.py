"""``python -m stepscope ...``: the same command line as the ``stepscope`` console script
(for an environment whose scripts directory is not on PATH)."""

import sys

from stepscope.cli.main import main

sys.exit(main())

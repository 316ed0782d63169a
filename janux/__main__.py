"""`python -m janux ...` runs the `janux` command line (the same as the console script)."""

import sys

from janux.cli.main import main

sys.exit(main())

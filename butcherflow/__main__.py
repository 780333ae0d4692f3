"""`python -m butcherflow ...` (and `torchrun -m butcherflow train ...`) run the command line."""

import sys

from .cli import main

sys.exit(main())

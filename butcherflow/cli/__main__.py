"""`python -m butcherflow.cli ...` (and `torchrun -m butcherflow.cli train ...`)."""

import sys

from . import main

sys.exit(main())

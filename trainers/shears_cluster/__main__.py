"""`python -m shears_cluster LAUNCH_SPEC.json`: what `shears serve --cluster` runs."""

import sys

from .driver import main

sys.exit(main())

"""`python -m oasis_gym.cli`: the `oasis-gym` command."""

import sys

from . import main

sys.exit(main())

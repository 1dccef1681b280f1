"""`python -m oasis_gym`: the `oasis-gym` command (the same as `python -m oasis_gym.cli`)."""

import sys

from oasis_gym.cli import main

sys.exit(main())

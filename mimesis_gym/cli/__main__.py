"""``python -m mimesis_gym.cli``: the ``mimesis-gym`` command."""

import sys

from mimesis_gym.cli import main

sys.exit(main())

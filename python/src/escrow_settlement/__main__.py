"""``python3 -m escrow_settlement``: the offline bundle verifier (see :mod:`escrow_settlement.cli`)."""

import sys

from .cli import main

sys.exit(main())

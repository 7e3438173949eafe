"""Where the example deployment's warehouse lives: $PAIMON_WAREHOUSE or ./.warehouse."""

import os
from pathlib import Path

WAREHOUSE_ENV = "PAIMON_WAREHOUSE"


def warehouse_uri() -> str:
    """The warehouse URI, defaulting to a local folder beside this deployment."""
    default = Path(__file__).resolve().parent.parent / ".warehouse"
    return os.environ.get(WAREHOUSE_ENV) or str(default)

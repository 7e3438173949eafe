"""`python -m dagster_paimon.cli`, as the `dagster-paimon` console script."""

import sys

from dagster_paimon.cli import main

sys.exit(main())

"""The example code location: one Definitions built from assets/, resources/ and schedules/."""

import sys
from pathlib import Path

from dagster import Definitions

sys.path.insert(0, str(Path(__file__).resolve().parent))

from assets import orders_table
from schedules import health_schedule

defs = Definitions(assets=[orders_table], schedules=[health_schedule])

"""Deterministic races: an action run inside an ingest after it read its base snapshot and
wrote its level-0 files, before it commits, hooked on the level-0 writer's own log line."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LEVEL0_LOGGER = "dagster_paimon.lsm.write.level0"
FLUSHED = "flushed"


class _AtFirstFlush(logging.Handler):
    """Runs the action once, for the first flush logged; `handle` takes no lock, so another
    ingest may log while the action waits."""

    def __init__(self, action: Callable[[], None]):
        super().__init__(logging.INFO)
        self.action = action
        self.done = False

    def handle(self, record: logging.LogRecord) -> bool:
        if not self.done and record.getMessage().startswith(FLUSHED):
            self.done = True
            self.action()
        return True

    def emit(self, record: logging.LogRecord) -> None:
        """Nothing to record: `handle` does the work."""


@contextmanager
def at_first_flush(action: Callable[[], None]) -> Iterator[None]:
    """Within the block, the first ingest to flush level-0 files runs `action` before going on."""
    logger = logging.getLogger(LEVEL0_LOGGER)
    handler = _AtFirstFlush(action)
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

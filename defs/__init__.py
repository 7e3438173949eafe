"""Component instances of the example deployment: the defs folder definitions.py loads."""

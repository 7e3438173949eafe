"""Java's FileKind: what a manifest entry (or an index manifest entry) does to its file."""

ADD, DELETE = 0, 1

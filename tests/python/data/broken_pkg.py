import numpy  # noqa: F401  (privatised before the failure below)

raise ImportError("broken_pkg refuses to import")

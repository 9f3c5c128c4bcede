"""``python -m vlcs.check PKG...``: the same as ``vlcs check``."""

from vlcs.check.runner import main

raise SystemExit(main())

"""``python -m vlcs`` is the ``vlcs`` command."""

from vlcs.cli import main

raise SystemExit(main())

"""``python -m vlcs_bench bench core`` is ``vlcs bench core``."""

from vlcs_bench.cli import main

raise SystemExit(main())

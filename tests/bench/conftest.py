"""The bench package's tests: run apart from tests/python (./run test does
both); they need vlcs-bench installed (pip install ./bench)."""

from __future__ import annotations

import subprocess
import sys


def vlcs_cmd(*args: str, **kw) -> subprocess.CompletedProcess:
    """Run the installed ``vlcs`` command, which hands bench/demo to vlcs-bench."""
    return subprocess.run(
        [sys.executable, "-m", "vlcs", *args], capture_output=True, text=True, **kw
    )

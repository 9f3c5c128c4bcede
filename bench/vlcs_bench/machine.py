"""The machine a figure was measured on, as reports print it."""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where it has none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def glibc_version() -> str:
    """ "glibc 2.36" on Debian 12."""
    name, version = platform.libc_ver()
    return f"{name} {version}".strip()

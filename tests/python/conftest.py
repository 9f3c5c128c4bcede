"""Shared fixtures: the installed vlcs command and a CMake build of the tree."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def vlcs_cmd(*args: str, **kw) -> subprocess.CompletedProcess:
    """Run the installed ``vlcs`` command (as ``python -m vlcs``)."""
    return subprocess.run(
        [sys.executable, "-m", "vlcs", *args], capture_output=True, text=True, **kw
    )


def run_hiding(files: list[str], argv: list[str], **kw) -> subprocess.CompletedProcess:
    """argv run where each of files reads as an empty file, as on a machine
    without them: in a mount namespace of its own (unshare, as an
    unprivileged user may), /dev/null bound over each."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rm is refused here: no user and mount namespaces")
    binds = " && ".join(f"mount --bind /dev/null '{f}'" for f in files)
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'{binds} && exec "$@"', "sh", *argv],
        capture_output=True,
        text=True,
        **kw,
    )


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_in_pytests_folder(tmp_path_factory):
    """What the tests and the processes they start make with tempfile goes
    under pytest's own temporary folder, which pytest prunes (a run used to
    leave a hundred folders in /tmp)."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    yield


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    """A CMake build of the tree: ./run's if it made one, else a fresh one."""
    given = os.environ.get("VLCS_BUILD_DIR")
    if given and (Path(given) / "CMakeCache.txt").exists():
        return Path(given)
    out = tmp_path_factory.mktemp("build")
    subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(out), "-G", "Ninja", "-DVLCS_BUILD_TESTS=ON"],
        check=True,
        capture_output=True,
    )
    # what the tests use: the installed targets, and the program gdb attaches to
    targets = ["vlcs", "vlcs_interpose", "vlcs-run", "strict_sleeper"]
    subprocess.run(
        ["cmake", "--build", str(out), "--target", *targets], check=True, capture_output=True
    )
    return out


@pytest.fixture(scope="session")
def prog(tmp_path_factory) -> str:
    """tests/c/prog/exec_prog.c built as gcc builds by default, with OpenMP:
    the program the `vlcs exec` tests run many times in one process."""
    src = Path(__file__).resolve().parent.parent / "c" / "prog" / "exec_prog.c"
    out = tmp_path_factory.mktemp("exec") / "prog"
    subprocess.run(["gcc", str(src), "-fopenmp", "-o", str(out)], check=True)
    return str(out)


def prog_lines(stdout: str) -> dict[int, str]:
    """exec_prog's tagged lines by instance, each checked whole: its own
    number and variables, its own counter (i rounds from 0: -r {i}), one
    CPU of the 2 (an OpenMP team of one); run as ``prog -r {i} -t T x``."""
    seen = {}
    for line in stdout.splitlines():
        m = re.fullmatch(
            r"\[(\d+)\] instance=(\d+) counter=(\d+) tag=T optind=5 rest=x "
            r"env_seen=1 getenv=yes procs=1 team=1",
            line,
        )
        assert m, f"not a whole tagged line of one instance: {line!r}"
        i = int(m.group(1))
        assert m.group(2) == str(i) and m.group(3) == str(i), line
        seen[i] = line
    return seen


@pytest.fixture(scope="session")
def omp_lib(tmp_path_factory) -> str:
    """tests/c/lib/omp.c built with gcc -fopenmp: its omp_probe_contended
    runs a loop through one critical section, 7-8 times slower on a team of
    two than on one (a lend that hurts, for the tests of judged lends)."""
    out = tmp_path_factory.mktemp("omp") / "libomp_probe.so"
    src = ROOT / "tests" / "c" / "lib" / "omp.c"
    subprocess.run(
        ["gcc", "-O2", "-fopenmp", "-shared", "-fPIC", str(src), "-o", str(out)], check=True
    )
    return str(out)

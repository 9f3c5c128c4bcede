"""`vlcs exec` and vlcs.exec_instances: unmodified programs N times in one
process, each instance in a context of its own.  The programs: one built
here as users build theirs (gcc prog.c -fopenmp) and Debian's own
(coreutils' sha256sum, gzip), compared with separate runs of the same."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import prog_lines, vlcs_cmd

HERE = os.path.dirname(os.path.abspath(__file__))


def test_eight_instances_each_private_tagged_and_the_first_failure_is_the_status(prog):
    r = vlcs_cmd("exec", "-n", "8", "--env", "EXTRA=1", "--", prog, "-r", "{i}", "-t", "T", "x")
    assert r.returncode == 3, r.stderr  # every instance exit(3)s
    assert len(r.stdout.splitlines()) == 8, r.stdout
    seen = prog_lines(r.stdout)
    assert sorted(seen) == list(range(8))


def test_debian_programs_give_what_separate_runs_give(tmp_path):
    data = tmp_path / "data.txt"
    data.write_bytes(b"".join(b"line %d of vlcs exec\n" % i for i in range(20000)))
    want = subprocess.run(["sha256sum", str(data)], capture_output=True, text=True, check=True)
    r = vlcs_cmd("exec", "-n", "4", "--", "sha256sum", str(data))
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == [f"[{i}] {want.stdout.strip()}" for i in range(4)]
    # gzip, each instance its own file ({i}); the same bytes as gzip alone
    for i in range(3):
        shutil.copy(data, tmp_path / f"in.{i}")
    # (-n: no name or time in the header, so that the bytes compare)
    r = vlcs_cmd("exec", "-n", "3", "--", "gzip", "-n", "-k", "-f", "-9", str(tmp_path / "in.{i}"))
    assert r.returncode == 0, r.stderr
    plain = subprocess.run(["gzip", "-n", "-c", "-9", str(data)], capture_output=True, check=True)
    for i in range(3):
        made = (tmp_path / f"in.{i}.gz").read_bytes()
        assert gzip.decompress(made) == data.read_bytes()
        assert hashlib.sha256(made).digest() == hashlib.sha256(plain.stdout).digest()


def test_exit_statuses_and_stderr_of_instances(tmp_path):
    r = vlcs_cmd("exec", "-n", "2", "--", "ls", str(tmp_path / "missing"))
    assert r.returncode == 2  # ls's own status, from each instance
    assert sorted(r.stderr.splitlines()) == [
        f"[{i}] ls: cannot access '{tmp_path / 'missing'}': No such file or directory"
        for i in range(2)
    ]


def test_stdin_goes_to_the_first_instance_unless_all(tmp_path):
    r = vlcs_cmd("exec", "-n", "2", "--", "wc", "-l", input="a\nb\nc\n")
    assert sorted(r.stdout.splitlines()) == ["[0] 3", "[1] 0"], r.stdout + r.stderr
    r = vlcs_cmd(
        "exec", "-n", "1", "--stdin", "all", "--output", "plain", "--", "wc", "-l", input="a\nb\n"
    )
    assert r.stdout.strip() == "2", r.stdout + r.stderr
    # every instance the whole of it, as from tee; one that stops reading
    # early (head) holds up no other
    lines = "".join(f"{i}\n" for i in range(200000))
    r = vlcs_cmd("exec", "-n", "3", "--stdin", "all", "--", "wc", "-l", input=lines)
    assert sorted(r.stdout.splitlines()) == [f"[{i}] 200000" for i in range(3)], r
    r = vlcs_cmd("exec", "-n", "2", "--stdin", "all", "--", "head", "-n", "1", input=lines)
    assert sorted(r.stdout.splitlines()) == ["[0] 0", "[1] 0"] and r.returncode == 0, r
    # stdin a file (`< file`), which epoll refuses: each instance read nothing
    (tmp_path / "in.txt").write_text(lines)
    with open(tmp_path / "in.txt") as f:
        r = vlcs_cmd("exec", "-n", "3", "--stdin", "all", "--", "wc", "-l", stdin=f)
    assert sorted(r.stdout.splitlines()) == [f"[{i}] 200000" for i in range(3)], r


@pytest.mark.parametrize(
    "build, says",
    [
        (["-static"], "statically linked"),
        (["-no-pie", "-fno-pie"], "not position-independent"),
        (["-Wl,-z,execstack"], "executable stack"),
    ],
)
def test_programs_that_cannot_run_are_refused_in_one_sentence(tmp_path, build, says):
    src = tmp_path / "p.c"
    src.write_text('#include <stdio.h>\nint main(void) { puts("ran"); return 0; }\n')
    exe = tmp_path / "p"
    subprocess.run(["gcc", str(src), "-o", str(exe), *build], check=True)
    r = vlcs_cmd("exec", "-n", "2", "--", str(exe))
    assert r.returncode == 126, r.stdout + r.stderr
    assert r.stdout == ""  # nothing of it ran
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_cpp_program_runs_and_vlcs_warns_of_nothing_the_user_did(tmp_path):
    """libstdc++ stays loaded in each instance's namespace (it marks itself
    so): that is vlcs's business, not a warning on the user's stderr."""
    src = tmp_path / "hi.cpp"
    src.write_text('#include <iostream>\nint main() { std::cout << "hi" << std::endl; }\n')
    exe = tmp_path / "hi"
    subprocess.run(["g++", "-fPIC", "-pie", str(src), "-o", str(exe)], check=True)
    r = vlcs_cmd("exec", "-n", "2", "--", str(exe))
    assert r.returncode == 0 and sorted(r.stdout.splitlines()) == ["[0] hi", "[1] hi"], r
    assert r.stderr == "", r.stderr


def test_a_file_without_the_execute_bit_is_refused_as_a_shell_refuses_it(prog, tmp_path):
    copy = tmp_path / "not-executable"
    shutil.copy(prog, copy)
    copy.chmod(0o644)
    r = vlcs_cmd("exec", "-n", "2", "--", str(copy))
    assert r.returncode == 126 and r.stdout == "", r.stdout + r.stderr
    assert "permission denied: the file is not executable" in r.stderr, r.stderr


def test_the_python_api_runs_programs_and_leaves_the_base_as_it_was(prog):
    code = textwrap.dedent(
        f"""
        import json, os, vlcs
        ctx = vlcs.VLC(name="tool", cpus="0")
        first = ctx.exec_program([{prog!r}, "-r", "4"])
        second = ctx.exec_program(["true"])
        try:
            ctx.exec_program(["vlcs-no-such-program"])
            missing = None
        except vlcs.LibraryNotFoundError as e:
            missing = str(e)
        ctx.close()
        many = vlcs.exec_instances([{prog!r}, "-r", "{{i}}"], 3, output="plain")
        print(json.dumps({{"first": first, "second": second, "missing": missing, "many": many,
                          "base_env": os.environ.get("PROG_SET"),
                          "base_cpus": len(os.sched_getaffinity(0))}}))
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    import json

    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["first"] == 3 and r["second"] == 0 and r["many"] == [3, 3, 3], r
    assert "no such program on PATH" in r["missing"], r
    assert r["base_env"] is None and r["base_cpus"] == len(os.sched_getaffinity(0)), r


def test_children_an_instance_starts_write_to_its_streams(tmp_path):
    exe = tmp_path / "forker"
    src = os.path.join(HERE, "..", "c", "prog", "exec_forker.c")
    subprocess.run(["gcc", src, "-o", str(exe)], check=True)
    r = vlcs_cmd("exec", "-n", "2", "--", str(exe))
    assert r.returncode == 0, r.stderr
    for i in range(2):
        mine = [line for line in r.stdout.splitlines() if line.startswith(f"[{i}] ")]
        # system()'s shell and a forked-then-exec'd echo: tagged as the instance's
        assert f"[{i}] child-of-system" in mine and f"[{i}] fork-exec" in mine, r.stdout
        assert f"[{i}] system=0 popen=via-popen" in mine, r.stdout
    assert all(line.startswith("[") for line in r.stdout.splitlines()), r.stdout


def test_gdb_attaches_to_instances_and_reads_their_programs():
    # Each instance's program is a copy loaded from a memfd, and glibc names
    # it by the path it was loaded from; gdb opens that name from its own
    # process.  /proc/self/fd/N named one of gdb's own descriptors there (a
    # pipe, which it read for ever); /proc/PID/fd/N is the copy.
    gdb = shutil.which("gdb")
    assert gdb, "gdb is installed by ./run (Debian package gdb)"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vlcs", "exec", "-n", "2", "--stdin", "all", "--", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write("hello\n")
        proc.stdin.flush()
        # both instances are reading their stdin once each echoed the line
        echoed = sorted(proc.stdout.readline() for _ in range(2))
        assert echoed == ["[0] hello\n", "[1] hello\n"], echoed
        out = subprocess.run(
            [
                gdb,
                "-p",
                str(proc.pid),
                "-batch",
                "-ex",
                "info sharedlibrary",
                "-ex",
                "thread apply all bt",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        proc.stdin.close()
        rc = proc.wait(timeout=60)
    assert out.returncode == 0 and "internal-error" not in out.stderr, out.stderr[-3000:]
    # the two copies of cat, by their descriptors in the process
    assert out.stdout.count(f"/proc/{proc.pid}/fd/") >= 2, out.stdout[-3000:]
    # each instance's thread unwound from the program's code into libvlcs
    # (vlcs_ctx_call: exported, so named in a stripped install too)
    assert out.stdout.count("vlcs_ctx_call") >= 2, out.stdout[-3000:]
    assert rc == 0  # the process went on after gdb detached

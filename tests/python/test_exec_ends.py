"""How programs end under `vlcs exec`, compared with separate runs of the
same: the ends glibc reaches inside itself (error(), error_at_line(),
err(), errx(), abort) and execs (the program's own, env's, nice's, a shell's
last command) end their instance only, with the status and the words a
separate run gives, and the process and the other instances go on."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ENDS = HERE.parent / "c" / "prog" / "ends_prog.c"

RUN = """
import json, sys, vlcs
statuses = vlcs.exec_instances(json.loads(sys.argv[1]), int(sys.argv[2]))
print(json.dumps(statuses), file=open(sys.argv[3], "w"))
print("the base goes on", flush=True)
"""


def _by_instance(text: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = defaultdict(list)
    for line in text.splitlines():
        m = re.fullmatch(r"\[(\d+)\] (.*)", line)
        assert m, f"an untagged line: {line!r}"
        out[int(m.group(1))].append(m.group(2))
    return out


def under_vlcs(argv: list[str], n: int, tmp: Path) -> tuple[list[int], dict, dict]:
    """Statuses, stdout lines and stderr lines per instance of one vlcs exec."""
    statuses = tmp / "statuses.json"
    p = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(argv), str(n), str(statuses)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1] == "the base goes on", p.stdout
    return (
        json.loads(statuses.read_text()),
        _by_instance("\n".join(lines[:-1])),
        _by_instance(p.stderr),
    )


def alone(argv: list[str], i: int, n: int) -> tuple[int, list[str], list[str]]:
    env = dict(os.environ, VLCS_INSTANCE=str(i), VLCS_INSTANCES=str(n))
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    status = p.returncode if p.returncode >= 0 else 128 - p.returncode  # as a shell says it
    return status, p.stdout.splitlines(), p.stderr.splitlines()


def same_as_separate_runs(argv: list[str], n: int, tmp: Path) -> list[int]:
    statuses, out, errs = under_vlcs(argv, n, tmp)
    for i in range(n):
        status, want_out, want_err = alone(argv, i, n)
        assert (statuses[i], out[i], errs[i]) == (status, want_out, want_err), f"instance {i}"
    return statuses


def test_libc_ends_end_only_their_instance(tmp_path):
    prog = tmp_path / "ends"
    subprocess.run(["gcc", str(ENDS), "-o", str(prog)], check=True)
    statuses = same_as_separate_runs([str(prog)], 8, tmp_path)
    # returned, error_at_line, errx, error, abort, exec'd child, failed exec, err
    assert statuses == [0, 2, 5, 4, 134, 9, 3, 6]


@pytest.mark.parametrize(
    "argv",
    [
        ["env", "sh", "-c", "echo i=$VLCS_INSTANCE; exit $((VLCS_INSTANCE + 2))"],
        ["nice", "-n", "1", "sh", "-c", "echo niced $VLCS_INSTANCE"],
        ["bash", "-c", "echo a$VLCS_INSTANCE; exec sh -c 'echo b$VLCS_INSTANCE >&2; exit 4'"],
        ["env", "/nonexistent/program"],
    ],
    ids=["env", "nice", "bash-exec", "env-missing"],
)
def test_programs_that_exec_end_only_their_instance(tmp_path, argv):
    statuses = same_as_separate_runs(argv, 3, tmp_path)
    assert len(statuses) == 3


def test_a_dash_instance_runs_its_command_with_its_own_streams(tmp_path):
    """dash forks with vfork, which runs no fork handlers: the interposer
    makes it a fork, so the command gets the instance's streams (its output
    tagged) instead of the process's.  One instance: two dash instances
    share the process's SIGCHLD handler (docs/limitations.md)."""
    statuses = same_as_separate_runs(["sh", "-c", "/bin/echo d$VLCS_INSTANCE; true"], 1, tmp_path)
    assert statuses == [0]


FAULTS = HERE.parent / "c" / "prog" / "faults_prog.c"


def test_a_fault_ends_only_its_instance(tmp_path):
    """A segmentation fault, a division by zero, a failed assertion and a
    stack overflow each end their instance with 128 + the signal, as a shell
    reports a crashed process, with the same output before it; vlcs says
    on the instance's stderr where it happened, and the other instances and
    the process go on."""
    prog = tmp_path / "faults"
    subprocess.run(["gcc", "-O0", "-g", str(FAULTS), "-o", str(prog)], check=True)
    n = 5
    statuses, out, errs = under_vlcs([str(prog)], n, tmp_path)
    # returned, SIGSEGV, SIGFPE, SIGABRT, SIGSEGV (the stack's guard page)
    assert statuses == [0, 139, 136, 134, 139]
    for i in range(n):
        status, want_out, want_err = alone([str(prog)], i, n)
        assert (statuses[i], out[i]) == (status, want_out), f"instance {i}"
    assert errs[0] == []
    assert len(errs[1]) == 1, errs[1]
    assert re.fullmatch(
        r"vlcs: faults: SIGSEGV \(address not mapped, address 0x0\) at "
        + re.escape(str(prog))
        + r"\+0x[0-9a-f]+",
        errs[1][0],
    ), errs[1]
    assert errs[2][-1].startswith(f"vlcs: faults: SIGFPE (integer divide by zero) at {prog}+"), (
        errs[2]
    )
    assert "instance 3 fails its assertion" in errs[3][0], errs[3]
    assert errs[3][-1].startswith("vlcs: faults: SIGABRT (abort() was called)"), errs[3]
    assert f"called from {prog}+" in errs[3][-1], errs[3]
    assert errs[4][-1].startswith("vlcs: faults: SIGSEGV ("), errs[4]


FDS = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    printf("stdio on %d %d %d, dup2(1, 1) = %d, 1 open: %d\n", fileno(stdin), fileno(stdout),
           fileno(stderr), dup2(1, 1), fcntl(1, F_GETFD) >= 0);
    fflush(stdout);
    return write(1, "written to 1\n", 13) == 13 ? 0 : 1;
}
"""


def test_an_instances_streams_are_its_descriptors_0_1_2(tmp_path):
    """Inside an instance stdin, stdout and stderr are descriptors 0, 1 and
    2, as in a process of its own (a thread of its own with a descriptor
    table of its own): write(1, ...) reaches its stdout."""
    src = tmp_path / "fds.c"
    src.write_text(FDS)
    prog = tmp_path / "fds"
    subprocess.run(["gcc", str(src), "-o", str(prog)], check=True)
    statuses = same_as_separate_runs([str(prog)], 3, tmp_path)
    assert statuses == [0, 0, 0]
    _, out, _ = under_vlcs([str(prog)], 3, tmp_path)
    assert out[2] == ["stdio on 0 1 2, dup2(1, 1) = 1, 1 open: 1", "written to 1"], out[2]


@pytest.mark.parametrize(
    "tool",
    [
        ["sort", "{f}"],
        ["uniq", "-c", "{f}"],
        ["shuf", "--random-source={f}", "{f}"],
        ["tac", "{f}"],
        ["sort", "-o", "{out}", "{f}"],
    ],
    ids=lambda t: " ".join(t[:2]),
)
def test_coreutils_that_reopen_their_streams(tmp_path, tool):
    """sort, uniq and shuf reopen stdin on the file they are given (gnulib's
    freopen_safer, which expects descriptors 0-2 to be the streams'): the
    same output and status as separate runs, and the files they write."""
    f = tmp_path / "in.txt"
    f.write_text("pear\napple\npear\nfig\n")
    argv = [a.format(f=f, out=tmp_path / "out.txt") for a in tool]
    same_as_separate_runs(argv, 3, tmp_path)
    if "-o" in tool:
        assert (tmp_path / "out.txt").read_text() == "apple\nfig\npear\npear\n"


CXX = r"""
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
struct Hello {
    Hello() { std::cout << "static constructor" << std::endl; }
};
static Hello hello;
int main(int argc, char **argv)
{
    std::map<std::string, int> seen{{"argc", argc}};
    try {
        throw std::runtime_error(argv[0]);
    } catch (const std::exception &e) {
        std::cout << "caught " << (e.what() == std::string(argv[0])) << ' ' << seen["argc"] << '\n';
    }
    std::cerr << "to cerr" << std::endl;
    return 3;
}
"""


def test_a_default_gxx_build_with_iostream_and_exceptions(tmp_path):
    """A default g++ build (PIE, copy relocations of libstdc++'s std::cout
    and typeinfo) runs as separate runs do: its static constructor, an
    exception thrown and caught, both streams, its status."""
    src = tmp_path / "hello.cpp"
    src.write_text(CXX)
    prog = tmp_path / "hello"
    subprocess.run(["g++", str(src), "-o", str(prog)], check=True)
    assert same_as_separate_runs([str(prog)], 3, tmp_path) == [3, 3, 3]


def test_debians_own_cxx_program(tmp_path):
    """apt-config (C++, Debian's build) under vlcs exec, as separate runs."""
    if not Path("/usr/bin/apt-config").exists():
        pytest.skip("no apt-config: not a Debian system")
    same_as_separate_runs(["/usr/bin/apt-config", "dump", "APT::Architecture"], 3, tmp_path)


def test_a_python_interpreter_is_refused_in_one_sentence():
    """CPython cannot be run per instance: refused before anything runs,
    naming what to use instead, and the process goes on."""
    p = subprocess.run(
        [sys.executable, "-m", "vlcs", "exec", "-n", "2", "--", sys.executable, "-c", "print(1)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 126, p.stdout + p.stderr
    assert "it runs CPython" in p.stderr and 'python="own"' in p.stderr, p.stderr
    assert p.stdout == "", p.stdout


def test_ctrl_c_ends_every_instance_with_one_line(tmp_path):
    """Ctrl-C (SIGINT) ends vlcs exec at once with status 130 and one line,
    as a shell's Ctrl-C ends its processes, whichever thread the kernel
    gave the signal to.  (Not a shell: its signal handlers would be the
    process's.)"""
    src = tmp_path / "up.c"
    src.write_text(
        "#include <stdio.h>\n#include <unistd.h>\n"
        'int main(void) { puts("up"); fflush(stdout); sleep(60); return 0; }\n'
    )
    prog = tmp_path / "up"
    subprocess.run(["gcc", str(src), "-o", str(prog)], check=True)
    p = subprocess.Popen(
        [sys.executable, "-m", "vlcs", "exec", "-n", "2", "--", str(prog)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    # both instances are running once both said so
    seen = {p.stdout.readline().strip(), p.stdout.readline().strip()}
    assert seen == {"[0] up", "[1] up"}, seen
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert err == "vlcs exec: interrupted: the instances end with the process\n", err


def test_a_file_per_instance_for_its_streams(tmp_path):
    """--stdout out.{i} and --stderr err.{i}: each instance's streams go to
    files of its own, bytes as written (NUL bytes, no newline at the end)."""
    out, err = tmp_path / "out.{i}", tmp_path / "err.{i}"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlcs",
            "exec",
            "-n",
            "2",
            "--stdout",
            str(out),
            "--stderr",
            str(err),
            "--",
            "/usr/bin/printf",
            "x\\000y %s",
            "{i}",
        ],
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p
    for i in range(2):
        assert (tmp_path / f"out.{i}").read_bytes() == b"x\0y " + str(i).encode()
        assert (tmp_path / f"err.{i}").read_bytes() == b""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlcs",
            "exec",
            "-n",
            "2",
            "--stderr",
            str(err),
            "--",
            "ls",
            "/nonexistent-{i}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p
    for i in range(2):
        assert f"/nonexistent-{i}" in (tmp_path / f"err.{i}").read_text()


# Programs of Debian's, as users run them, each compared with separate runs
# (output per instance, stderr, status): {f} is a small text file.
REAL_PROGRAMS = [
    ["wc", "-l", "{f}"],
    ["grep", "-n", "p", "{f}"],
    ["sed", "s/p/P/", "{f}"],
    ["awk", "{print $1, NR}", "{f}"],
    ["cut", "-c1-2", "{f}"],
    ["od", "-c", "{f}"],
    ["base64", "{f}"],
    ["nl", "{f}"],
    ["diff", "{f}", "/dev/null"],
    ["date", "-u", "-d", "@0"],
    ["env", "FOO=1", "printenv", "FOO"],
    ["nice", "-n", "1", "true"],
    ["git", "--version"],
    ["make", "--version"],
    ["sqlite3", ":memory:", "select 1+2"],
]


@pytest.mark.parametrize("tool", REAL_PROGRAMS, ids=lambda t: " ".join(t[:2]))
def test_real_programs_as_separate_runs(tmp_path, tool):
    import shutil

    if shutil.which(tool[0]) is None:
        pytest.skip(f"{tool[0]} is not installed here")
    f = tmp_path / "in.txt"
    f.write_text("pear\napple\nfig\n")
    same_as_separate_runs([a.replace("{f}", str(f)) for a in tool], 3, tmp_path)


def test_dash_scripts_with_redirections_and_children(tmp_path):
    """dash (Debian's /bin/sh) as the program, three instances at once, as
    three separate runs: its redirections (dup2 onto 1 and 2, a file
    written and read back), and children (a command, a command
    substitution), each instance's wait reaping its own children only."""
    script = (
        f"echo to-err >&2; echo to-file > {tmp_path}/f.$VLCS_INSTANCE; "
        f"read line < {tmp_path}/f.$VLCS_INSTANCE; echo read $line"
    )
    assert same_as_separate_runs(["dash", "-c", script], 3, tmp_path) == [0, 0, 0]
    children = "ls /nonexistent 2>/dev/null; echo status=$?; x=$(echo sub); echo $x >&2"
    assert same_as_separate_runs(["dash", "-c", children], 3, tmp_path) == [0, 0, 0]


HANDLER = r"""
#include <signal.h>
#include <stdio.h>
static void on_usr1(int sig) { (void)sig; }
int main(void)
{
    signal(SIGUSR1, on_usr1);
    puts("installed");
    return 0;
}
"""

AFTER = """
import os, signal, sys, vlcs
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
for _ in range(3):  # instances that start while another's handler is in place
    assert vlcs.exec_instances([sys.argv[1]], 3, output="plain") == [0, 0, 0]
os.kill(os.getpid(), signal.SIGUSR1)
assert got == [1], got
print("the base's handler is back")
"""


def test_a_programs_signal_handlers_go_with_it(tmp_path):
    """Signal handlers are the process's: one a program installed gives way,
    when it ends, to the one the process had (its code is unloaded with
    the program); the base's Python handler runs again."""
    src = tmp_path / "handler.c"
    src.write_text(HANDLER)
    prog = tmp_path / "handler"
    subprocess.run(["gcc", str(src), "-o", str(prog)], check=True)
    p = subprocess.run(
        [sys.executable, "-c", AFTER, str(prog)], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == "the base's handler is back", p.stdout


def test_make_runs_its_recipes_in_three_instances(tmp_path):
    """GNU make starts a shell per recipe line (posix_spawn) and waits for
    any child: each instance waits for its own, as three separate runs."""
    (tmp_path / "Makefile").write_text(
        "all: a b\na:\n\t@echo a $$VLCS_INSTANCE\nb:\n\t@ls /dev/null\n\t@echo b done\n"
    )
    argv = ["make", "-s", "-f", str(tmp_path / "Makefile")]
    assert same_as_separate_runs(argv, 3, tmp_path) == [0, 0, 0]


def test_each_instance_has_its_own_current_directory(tmp_path):
    """A chdir moves its instance alone (git -C, make -C and a shell's cd
    did move every instance): three dash instances each cd into a folder of
    its own and write there, and git -C reads each its own repository; the
    caller's directory does not move."""
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
    script = "cd d$VLCS_INSTANCE && pwd && echo x > here.txt && ls"
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert same_as_separate_runs(["dash", "-c", script], 3, tmp_path) == [0, 0, 0]
        assert os.getcwd() == str(tmp_path)
        for i in range(2):
            subprocess.run(["git", "init", "-q", f"g{i}"], check=True)
            (tmp_path / f"g{i}" / f"only-in-{i}").write_text("x")
        statuses, out, _ = under_vlcs(["git", "-C", "g{i}", "status", "--short"], 2, tmp_path)
    finally:
        os.chdir(here)
    assert statuses == [0, 0]
    assert out[0] == ["?? only-in-0"] and out[1] == ["?? only-in-1"], out


SIGNALS = HERE.parent / "c" / "prog" / "signals_prog.c"


def test_each_instance_has_signals_of_its_own(tmp_path):
    """Six instances at once each use signals their way (signals_prog.c): a
    handler taken by raise() and kill(getpid()), an interval timer of its
    own, alarm() with no handler (it alone ends, 142), SIGTERM to itself
    (143), an ignored signal, a SIGCHLD handler naming its child; each
    prints and ends as a separate process does."""
    prog = tmp_path / "signals"
    subprocess.run(["gcc", "-O1", str(SIGNALS), "-o", str(prog)], check=True)
    assert same_as_separate_runs([str(prog)], 6, tmp_path) == [0, 0, 142, 143, 0, 0]


BASE_SIGNALS = """
import ctypes, os, signal, sys, vlcs
libc = ctypes.CDLL(None, use_errno=True)


# vlcs's handlers of faults stay from the first guarded call (docs/faults.md)
FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT}


def kernel_actions():
    # each signal's handler as the kernel has it (glibc's struct sigaction
    # starts with it): Python's getsignal only says what Python set
    out, buf = {}, ctypes.create_string_buffer(256)
    for s in signal.valid_signals() - FAULTS:
        if libc.sigaction(int(s), None, buf) == 0:
            out[int(s)] = ctypes.c_void_p.from_buffer(buf).value
    return out


got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append("usr1"))
signal.signal(signal.SIGALRM, lambda *a: got.append("alrm"))
before = kernel_actions()
assert vlcs.exec_instances([sys.argv[1]], 6, output="plain") == [0, 0, 142, 143, 0, 0]
assert kernel_actions() == before
os.kill(os.getpid(), signal.SIGUSR1)
signal.setitimer(signal.ITIMER_REAL, 0.01)
while "alrm" not in got:
    signal.pause()
assert got == ["usr1", "alrm"], got
print("the base's signals are its own")
"""


def test_the_base_keeps_its_signals(tmp_path):
    """While and after instances set actions, raise, kill themselves and arm
    timers, the base's own handlers (Python's) take what is sent to the
    process, and its timer; every action is the base's again after."""
    prog = tmp_path / "signals"
    subprocess.run(["gcc", "-O1", str(SIGNALS), "-o", str(prog)], check=True)
    p = subprocess.run(
        [sys.executable, "-c", BASE_SIGNALS, str(prog)], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == "the base's signals are its own", p.stdout


@pytest.mark.parametrize(
    "argv",
    [["timeout", "5", "printenv", "VLCS_INSTANCE"], ["timeout", "0.3", "sleep", "10"]],
    ids=["finishes", "times-out"],
)
def test_coreutils_timeout(tmp_path, argv):
    """timeout arms a timer, waits for SIGCHLD and kills its child at the
    timer's signal: each instance's timer, child and signals are its own
    (two timeouts at once took each other's, or segfaulted the process)."""
    want = 0 if argv[1] == "5" else 124
    assert same_as_separate_runs(argv, 3, tmp_path) == [want] * 3


def test_openssl_speed_times_itself_in_each_instance(tmp_path):
    """openssl speed ends each timed loop at its alarm() (a SIGALRM handler
    sets a flag): two instances at once each get their own alarm (one alarm
    for the process left the other counting for ever)."""
    argv = ["openssl", "speed", "-seconds", "1", "-bytes", "16", "md5"]
    statuses, out, errs = under_vlcs(argv, 2, tmp_path)
    assert statuses == [0, 0]
    for i in range(2):
        assert any(re.fullmatch(r"md5 +[0-9.]+k", line) for line in out[i]), out[i]
        assert any("Doing md5 for 1s on 16 size blocks" in line for line in errs[i]), errs[i]


def test_an_instance_writing_to_a_closed_pipe_ends_by_sigpipe():
    """`vlcs exec -- yes | head -n 1`: each instance ends by SIGPIPE,
    quietly, with 141, as `yes | head -n 1` does (CPython ignores SIGPIPE
    for itself; an instance starts with it at its default, as a program a
    shell starts does)."""
    vlcs = f"{sys.executable} -m vlcs exec -n 2 --output plain --"
    script = "{} yes | head -n 1; echo ${{PIPESTATUS[0]}}"
    alone = subprocess.run(["bash", "-c", script.format("")], capture_output=True, text=True)
    r = subprocess.run(
        ["bash", "-c", script.format(vlcs)], capture_output=True, text=True, timeout=120
    )
    assert alone.stdout.splitlines() == ["y", "141"], alone
    assert r.stdout.splitlines() == ["y", "141"], r
    assert r.stderr == "", r.stderr


def test_tagged_output_to_a_closed_pipe_ends_the_instances_by_sigpipe():
    """With tagged output the instances write to vlcs's pipes: once the
    reader of the process's stdout is gone, they are closed too, and each
    instance ends by SIGPIPE (141) instead of waiting for ever on a full
    pipe."""
    script = f"{sys.executable} -m vlcs exec -n 2 -- yes | head -n 3; echo ${{PIPESTATUS[0]}}"
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    lines = r.stdout.splitlines()
    assert lines[-1] == "141", r
    assert len(lines) == 4 and all(re.fullmatch(r"\[[01]\] y", x) for x in lines[:3]), r
    assert r.stderr == "", r.stderr


THREAD_ENDS = HERE.parent / "c" / "prog" / "thread_ends_prog.c"


def test_an_exit_from_another_thread_ends_only_its_instance(tmp_path):
    """exit(), error() and _exit() called by a thread the program started,
    while its main thread joins it, waits on a condition or computes: the
    instance ends with that status, its atexit handlers run and its output
    flushed (not for _exit), as a process ends; the other instances and the
    process go on."""
    prog = tmp_path / "thread_ends"
    subprocess.run(["gcc", "-O1", "-pthread", str(THREAD_ENDS), "-o", str(prog)], check=True)
    statuses = same_as_separate_runs([str(prog)], 6, tmp_path)
    # joined, exit, error, _exit, exit while main waits, exit while main computes
    assert statuses == [0, 3, 4, 5, 6, 7]

"""Python code of a context sees the context as its process: environment,
CPU counts, forged /proc and /sys files, threadpoolctl; base code sees the
real process.  And a failed import leaves nothing behind.  Each case runs in
a fresh interpreter."""

from __future__ import annotations

import os

from test_imports import needs, needs_two, run_code


@needs_two
def test_environment_and_cpu_files_follow_the_context():
    r = run_code(
        """
        import json, os, pathlib, vlcs
        a = vlcs.VLC(cpus="0", name="a", env={"FOO": "in-a"})
        out = {}
        with a:
            out["a_get"] = [os.environ.get("FOO"), os.getenv("FOO"), "FOO" in os.environ]
            os.environ["BAR"] = "set-in-a"
            out["a_bar_c"] = a.getenv("BAR")  # what the context's C getenv reads
            del os.environ["FOO"]
            out["a_foo_after_del"] = [os.getenv("FOO"), a.getenv("FOO"), "FOO" in dict(os.environ)]
            out["a_sysconf"] = os.sysconf("SC_NPROCESSORS_ONLN")
            out["a_cpuinfo"] = sum(l.startswith("processor") for l in open("/proc/cpuinfo"))
            out["a_online"] = pathlib.Path("/sys/devices/system/cpu/online").read_text().strip()
        out["thread"] = a.submit(lambda: [os.environ.get("BAR"), os.cpu_count()]).result()
        out["base_env"] = [os.environ.get("FOO"), os.environ.get("BAR"), os.getenv("BAZ", "-")]
        out["base_sysconf"] = os.sysconf("SC_NPROCESSORS_ONLN")
        out["base_cpuinfo"] = sum(l.startswith("processor") for l in open("/proc/cpuinfo"))
        print(json.dumps(out))
        """,
        FOO="in-base",
    )
    assert r["a_get"] == ["in-a", "in-a", True]
    assert r["a_bar_c"] == "set-in-a"
    assert r["a_foo_after_del"] == [None, None, False]
    assert (r["a_sysconf"], r["a_cpuinfo"], r["a_online"]) == (1, 1, "0")
    assert r["thread"] == ["set-in-a", 1]
    # the base: the process's own environment and CPUs, untouched
    assert r["base_env"] == ["in-base", None, "-"]
    assert r["base_sysconf"] == os.sysconf("SC_NPROCESSORS_ONLN")
    assert r["base_cpuinfo"] == sum(s.startswith("processor") for s in open("/proc/cpuinfo"))


@needs_two
def test_views_answer_each_caller_by_the_owner_rules_in_loops_and_after_leaving():
    # The base's reads of the views are decided in C from the frames (the
    # base pays a call, not a walk of its frames); a context's module called
    # from the base, the script inside a block, and the same code run again
    # and again before, inside and after the block must still get their
    # owner's answer.
    r = run_code(
        """
        import json, os, sys, tempfile, vlcs
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "vt_view.py"), "w") as f:
            f.write(
                "import os\\n"
                "def view(rounds=1):\\n"
                "    for _ in range(rounds):\\n"
                "        out = [os.environ.get('FOO'), os.environ['FOO'], 'FOO' in os.environ,\\n"
                "               os.cpu_count(), len(os.sched_getaffinity(0)),\\n"
                "               os.sysconf('SC_NPROCESSORS_ONLN'), len(dict(os.environ)) > 1]\\n"
                "    return out\\n"
            )
        sys.path.insert(0, d)
        import vt_view as base_view
        a = vlcs.VLC(cpus="0", name="a", env={"FOO": "in-a"})
        with a:
            import vt_view as a_view
        def script_view(rounds=1):
            for _ in range(rounds):
                out = [os.environ.get("FOO"), os.environ["FOO"], "FOO" in os.environ,
                       os.cpu_count(), len(os.sched_getaffinity(0)),
                       os.sysconf("SC_NPROCESSORS_ONLN"), len(dict(os.environ)) > 1]
            return out
        out = {
            "base module": base_view.view(50),
            "context module, base thread": a_view.view(50),
            "script, base": script_view(50),
        }
        with a:
            out["context module, in the context"] = a_view.view(50)
            out["base module, in the context"] = base_view.view(50)
            out["script, in the context"] = script_view(50)
        out["script, base, after"] = script_view(50)
        out["context module, thread in the context"] = a.submit(a_view.view, 50).result()
        print(json.dumps(out))
        """,
        FOO="in-base",
    )
    n = os.cpu_count()
    base, ctx = ["in-base", "in-base", True, n, n, n, True], ["in-a", "in-a", True, 1, 1, 1, True]
    want = {
        "base module": base,
        "context module, base thread": ctx,
        "script, base": base,
        "context module, in the context": ctx,
        # a package both imported: the base's view, the thread's real CPUs
        "base module, in the context": base[:4] + [1] + base[5:],
        "script, in the context": ctx,
        "script, base, after": base,
        "context module, thread in the context": ctx,
    }
    wrong = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
    assert not wrong, f"(got, wanted) per caller: {wrong}"


def test_replaced_functions_keep_how_they_bind_as_class_attributes():
    # open, os.cpu_count and os.sched_getaffinity are builtins: kept on a
    # class and called through an instance they take no instance (3.10's
    # pathlib calls io.open so); os.environ's methods and Popen's
    # _execute_child are Python functions and do.  With a context alive
    # the stand-ins must do the same, in the base and in the context.
    r = run_code(
        """
        import json, os, subprocess, sys, vlcs
        a = vlcs.VLC(cpus="0", name="a", env={"FOO": "in-a"})
        class Keeps:
            opener = open
            count = os.cpu_count
            affinity = os.sched_getaffinity
        def use():
            k = Keeps()
            with k.opener(__file__ if "__file__" in globals() else "/proc/self/status") as f:
                f.read(1)
            return [k.count(), len(k.affinity(0)), os.environ.get("FOO"),
                    subprocess.run(["sh", "-c", "echo $FOO"], capture_output=True,
                                   text=True).stdout.strip()]
        out = {"base": use()}
        with a:
            out["context"] = use()
        print(json.dumps(out))
        """,
        FOO="in-base",
    )
    n = os.cpu_count()
    assert r["base"] == [n, len(os.sched_getaffinity(0)), "in-base", "in-base"], r
    assert r["context"] == [1, 1, "in-a", "in-a"], r


@needs_two
def test_every_forged_file_of_the_table_is_forged_for_python_open():
    # The third door of libvlcs's one table (the C doors: tests/c/test_forged_files.c).
    r = run_code(
        """
        import json, os, pathlib, vlcs
        from vlcs._lib import forged_files
        a = vlcs.VLC(cpus="0", name="a")
        def name(f):
            return os.readlink(f"/proc/self/fd/{f.fileno()}")
        rows = forged_files()
        out = {"rows": rows, "a": [], "base": []}
        with a:
            for _, path in rows:
                with open(path) as f:
                    out["a"].append([name(f), f.name])
        for _, path in rows:
            with open(path) as f:
                out["base"].append(name(f))
        print(json.dumps(out))
        """
    )
    assert len(r["rows"]) >= 5
    assert [path for _, path in r["rows"]][:1] == ["/proc/cpuinfo"]
    for (prefix, path), (fd_name, name) in zip(r["rows"], r["a"], strict=True):
        assert path.startswith(prefix)
        assert fd_name.startswith("/memfd:vlcs-"), (path, fd_name)
        assert name == path  # f.name as a plain open() gives it
    for (_, path), fd_name in zip(r["rows"], r["base"], strict=True):
        assert not fd_name.startswith("/memfd:"), (path, fd_name)  # the real file


def test_environb_and_child_processes_follow_the_context():
    r = run_code(
        """
        import asyncio, json, os, subprocess, sys, vlcs
        a = vlcs.VLC(cpus="0", name="a", env={"FOO": "in-a"})
        a.unsetenv("GONE")
        show = [sys.executable, "-c",
                "import os; print(os.environ.get('FOO'), os.environ.get('GONE'))"]
        def child():
            return subprocess.run(show, capture_output=True, text=True).stdout.split()
        async def child_async():
            p = await asyncio.create_subprocess_exec(*show, stdout=subprocess.PIPE)
            return (await p.communicate())[0].decode().split()
        out = {}
        with a:
            os.environb[b"BYTES"] = b"b-in-a"
            out["a_environb"] = [os.environb.get(b"FOO"), b"GONE" in os.environb,
                                 os.environ.get("BYTES")]
            out["a_child"] = child()
            out["a_popen"] = os.popen('echo "$FOO"').read().strip()
            out["a_system"] = os.system('test "$FOO" = in-a && test -z "${GONE+set}" && exit 7')
            out["a_async"] = asyncio.run(child_async())
            out["a_explicit"] = subprocess.run(show, env={"FOO": "given"},
                                               capture_output=True, text=True).stdout.split()
        out["thread_child"] = a.submit(child).result()
        out["base_environb"] = [os.environb.get(b"FOO"), os.environb.get(b"BYTES")]
        out["base_child"] = child()
        out["base_system"] = os.system('test "$FOO" = in-base && test "$GONE" = here && exit 9')
        print(json.dumps({k: [x.decode() if isinstance(x, bytes) else x for x in v]
                          if isinstance(v, list) else v for k, v in out.items()}))
        """,
        FOO="in-base",
        GONE="here",
    )
    assert r["a_environb"] == ["in-a", False, "b-in-a"]
    # a child started by the context's code, any way, gets the context's environment
    assert r["a_child"] == r["thread_child"] == r["a_async"] == ["in-a", "None"]
    assert r["a_popen"] == "in-a"
    assert os.waitstatus_to_exitcode(r["a_system"]) == 7
    assert r["a_explicit"] == ["given", "None"]  # an explicit env= is the caller's
    # the base's children and os.environb: the process's environment, untouched
    assert r["base_environb"] == ["in-base", None]
    assert r["base_child"] == ["in-base", "here"]
    assert os.waitstatus_to_exitcode(r["base_system"]) == 9


@needs("threadpoolctl")
@needs("numpy")
@needs_two
def test_threadpoolctl_in_a_context_limits_that_context_only():
    r = run_code(
        """
        import json, vlcs, threadpoolctl
        import numpy
        a = vlcs.VLC(cpus="0-1", name="a")
        with a:
            import numpy as np_a
            import threadpoolctl as t_a
        def blas(t):
            return [p["num_threads"] for p in t.threadpool_info() if p["user_api"] == "blas"]
        def limited(t):
            with t.threadpool_limits(1, user_api="blas"):
                return blas(t), blas(threadpoolctl)
        out = {"a": a.submit(blas, t_a).result(), "base": blas(threadpoolctl)}
        out["a_limited"], out["base_meanwhile"] = a.submit(limited, t_a).result()
        out["a_after"] = a.submit(blas, t_a).result()
        print(json.dumps(out))
        """
    )
    assert r["a"] == [2] and r["base"] == [2]
    assert r["a_limited"] == [1], "threadpool_limits in the context changed nothing there"
    assert r["base_meanwhile"] == [2], "the context's threadpool_limits reached the base's pool"
    assert r["a_after"] == [2]


@needs("numpy")
def test_a_probe_for_a_library_the_context_has_not_loaded_fails_in_the_context():
    # vlcs's objects made in memory are named /proc/PID/fd/N, and their
    # descriptors stay open while the namespace lives: no file a thread opens
    # (here: this test, up to 256) gets a number such a name gives, which
    # would make the name pass for that file (threadpoolctl once got libc for
    # OpenBLAS so); and a probe for a library the context has not loaded
    # fails in the context.
    r = run_code(
        """
        import ctypes, json, os, vlcs
        import numpy
        from vlcs._isolation import linkmap
        blas = [p for p in linkmap.namespace_objects(ctypes.CDLL(None)._handle)
                if "openblas" in p][0]
        a = vlcs.VLC(cpus="0", name="a")
        with a:
            import json as _  # the namespace exists
        a._load_handle("libc.so.6")
        fd_names = [p for p in a.libraries() if linkmap.made_in_memory(p)]
        held, want = [], {int(p.rsplit("/", 1)[1]) for p in fd_names}
        while want and not (want & set(held)) and len(held) < 256:
            held.append(os.open(blas, os.O_RDONLY))
        def probe():
            try:
                ctypes.CDLL(blas, mode=os.RTLD_NOLOAD)
                return "found"
            except OSError as e:
                return "not loaded" if "not loaded in context" in str(e) else str(e)
        named = [os.readlink(p.replace(f"/proc/{os.getpid()}/", "/proc/self/")) for p in fd_names]
        out = {"fd_names": len(fd_names), "held": bool(want & set(held)),
               "all_memfd": all(n.startswith("/memfd:vlcs") for n in named)}
        out["a"], out["base"] = a.submit(probe).result(), probe()
        print(json.dumps(out))
        """,
        VLCS_MODE="namespace",  # the names of a namespace's objects made in memory
    )
    assert r["fd_names"] >= 1 and not r["held"] and r["all_memfd"], r
    assert r["a"] == "not loaded", r
    assert r["base"] == "found"


def test_a_failed_import_leaves_nothing_behind(tmp_path):
    pkg = tmp_path / "halfway"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from halfway import part\nimport os\nif os.environ.get('HALFWAY_FAIL'):\n"
        "    raise RuntimeError('broken on purpose')\n"
    )
    (pkg / "part.py").write_text("VALUE = 1\n")
    r = run_code(
        f"""
        import json, os, sys, vlcs
        sys.path.insert(0, {str(tmp_path)!r})
        a = vlcs.VLC(cpus="0", name="a", env={{"HALFWAY_FAIL": "1"}})
        out = {{}}
        with a:
            try:
                import halfway
            except RuntimeError as e:
                out["error"] = str(e)
            out["a_left"] = sorted(k for k in sys.modules if k.startswith("halfway"))
        out["a_modules"] = [m for m in a.modules if m.startswith("halfway")]
        out["base_left"] = sorted(k for k in sys.modules if k.startswith("halfway"))
        a.unsetenv("HALFWAY_FAIL")
        with a:
            import halfway
            out["retry"] = halfway.part.VALUE
        print(json.dumps(out))
        """
    )
    assert r["error"] == "broken on purpose"
    assert r["a_left"] == [] and r["a_modules"] == [] and r["base_left"] == []
    assert r["retry"] == 1

"""``vlcs exec``: an unmodified program N times in one process, each
instance in a context of its own, on a thread of its own, all at once.

Each instance gets its share of the CPUs (split along the machine's
topology with ``places``: "l3", "numa"...), ``VLCS_INSTANCE`` and
``VLCS_INSTANCES`` (as MPI ranks see theirs) and the variables asked for;
``{i}`` in an argument becomes its number.  Its exit ends that instance
only.  With ``output="tag"`` each line an instance writes to its stdout or
stderr is written whole, prefixed with ``[i]``; with ``"plain"`` the
instances write straight to the process's.  Instance 0 reads the process's
stdin, the others an empty one, unless ``stdin="all"``: then each reads
the whole of it, as from ``tee``.
"""

from __future__ import annotations

import os
import queue
import selectors
import sys
import threading
from collections.abc import Mapping, Sequence

from vlcs._choices import OUTPUTS, STDINS
from vlcs._cpus import CpuList, resolve
from vlcs._isolation.threads import base_thread
from vlcs._program_context import ProgramContext
from vlcs._topo import worker_homes

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from typing import BinaryIO

# instances running at once in one process (libvlcs keeps each one's
# signals in a slot of its own: src/exec_signals.c); past glibc's
# namespaces (16, less the base's) they hold renamed copies
# (docs/copy-mode.md)
MAX_INSTANCES = 256


class _Feed:
    """This process's stdin, whole, to every instance (stdin="all"), as
    tee gives it: one reader, and a writer per instance, so that an
    instance that reads slowly or not at all holds up only itself.  What
    an instance has not read yet waits in its queue."""

    CHUNK = 65536

    def __init__(self, n: int) -> None:
        self._pipes = [os.pipe() for _ in range(n)]
        self._queues: list[queue.SimpleQueue[bytes | None]] = [
            queue.SimpleQueue() for _ in range(n)
        ]
        self._stop_r, self._stop_w = os.pipe()
        self._threads = [threading.Thread(target=self._read, name="vlcs-exec-stdin", daemon=True)]
        self._threads += [
            threading.Thread(target=self._write, args=(i,), name=f"vlcs-exec-in-{i}", daemon=True)
            for i in range(n)
        ]
        self._started = False
        for t in self._threads:
            base_thread(t)

    def read_end(self, i: int) -> int:
        return self._pipes[i][0]

    def start(self) -> None:
        for t in self._threads:
            t.start()
        self._started = True

    def _read(self) -> None:
        sel = selectors.DefaultSelector()
        try:
            sel.register(self._stop_r, selectors.EVENT_READ)
            try:
                sel.register(0, selectors.EVENT_READ)
                waits = True
            except PermissionError:  # a regular file (`< file`): epoll refuses it; reads
                # of it never block
                waits = False
            while True:
                if waits and any(key.fd == self._stop_r for key, _ in sel.select()):
                    break  # every instance ended: leave the rest of stdin to the caller
                data = os.read(0, self.CHUNK)
                for q in self._queues:
                    q.put(data or None)
                if not data:
                    break
        except (OSError, ValueError):  # read as the end of the input
            for q in self._queues:
                q.put(None)
        finally:
            sel.close()

    def _write(self, i: int) -> None:
        w = self._pipes[i][1]
        try:
            while (data := self._queues[i].get()) is not None:
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view) :]
        except OSError:  # the instance closed its stdin, or ended
            pass
        finally:
            os.close(w)

    def stop(self) -> None:
        """After every instance ended: the reader stops, the writers are
        let go (their pipes' read ends closed), and everything is closed."""
        os.write(self._stop_w, b"x")
        for r, w in self._pipes:
            os.close(r)
            if not self._started:
                os.close(w)
        for q in self._queues:
            q.put(None)
        for t in self._threads if self._started else ():
            t.join()
        os.close(self._stop_r)
        os.close(self._stop_w)


class _Tagger:
    """Whole lines from each instance's pipes, prefixed with its number."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._open = 0
        self._thread = threading.Thread(target=self._pump, name="vlcs-exec-output", daemon=True)
        base_thread(self._thread)

    def pipe(self, instance: int, sink: BinaryIO) -> int:
        """A pipe whose read end is tagged into sink; its write end."""
        r, w = os.pipe()
        self._sel.register(r, selectors.EVENT_READ, (f"[{instance}] ".encode(), sink, bytearray()))
        self._open += 1
        return w

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()

    def _pump(self) -> None:
        while self._open:
            for key, _ in self._sel.select():
                tag, sink, pending = key.data
                data = os.read(key.fd, 65536)
                try:
                    if data:
                        pending += data
                        cut = pending.rfind(b"\n") + 1
                        if cut:
                            self._write(sink, tag, bytes(pending[:cut]))
                            del pending[:cut]
                        continue
                    if pending:  # its last line had no newline: given one
                        self._write(sink, tag, bytes(pending) + b"\n")
                except BrokenPipeError:
                    # The reader of this process's stream is gone (`| head`):
                    # every pipe into that stream closes, so that an
                    # instance writing to it gets SIGPIPE, as a process would.
                    self._close_into(sink)
                    break  # the other events may name pipes closed now
                self._close(key.fd)

    def _close(self, fd: int) -> None:
        self._sel.unregister(fd)
        os.close(fd)
        self._open -= 1

    def _close_into(self, sink: BinaryIO) -> None:
        for key in list(self._sel.get_map().values()):
            if key.data[1] is sink:
                self._close(key.fd)
        # what the stream still buffers would fail again at exit, with a
        # traceback: it goes nowhere, as Python's documentation advises
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sink.fileno())
        os.close(devnull)

    def _write(self, sink: BinaryIO, tag: str | bytes, lines: bytes) -> None:
        out = b"".join(tag + line + b"\n" for line in lines[:-1].split(b"\n"))  # type: ignore[operator]
        with self._lock:
            sink.write(out)
            sink.flush()


def _open_for(pattern: str | None, i: int) -> int | None:
    """The descriptor of instance i's file for a stream, or None."""
    if pattern is None:
        return None
    path = pattern.replace("{i}", str(i))
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)


def exec_instances(
    argv: Sequence[str],
    n: int,
    *,
    cpus: CpuList | None = None,
    env: Mapping[str, str] | None = None,
    output: str = "tag",
    stdin: str = "first",
    places: str | None = None,
    stdout: str | None = None,
    stderr: str | None = None,
) -> list[int]:
    """Run the program argv N times at once in this process, each instance
    in a context of its own; their exit statuses, in instance order.
    ``stdout``/``stderr``: a file per instance for that stream, ``{i}`` its
    number (``"out.{i}"``), created or truncated, written as the program
    writes it.

    >>> import vlcs
    >>> vlcs.exec_instances(["sh", "-c", "exit 0"], 2, output="plain")
    [0, 0]
    """
    if isinstance(argv, (str, bytes)) or not argv:
        raise TypeError("argv must be a non-empty sequence of arguments, argv[0] the program")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a number of instances >= 1; got {n!r}")
    if n > MAX_INSTANCES:
        raise ValueError(
            f"{n} instances asked for, and one process runs at most {MAX_INSTANCES} at once; "
            f"run {MAX_INSTANCES} or fewer per process"
        )
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    if stdin not in STDINS:
        raise ValueError(f"stdin must be one of {', '.join(STDINS)}; got {stdin!r}")
    pool = resolve(cpus) if cpus is not None else sorted(os.sched_getaffinity(0))
    homes, _ = worker_homes(pool, n, places)
    tagger = _Tagger() if output == "tag" else None
    feed = _Feed(n) if stdin == "all" else None
    devnull = os.open(os.devnull, os.O_RDONLY)
    contexts: list[ProgramContext] = []
    ends: list[int] = []  # the instances' write ends, closed once they are given
    threads: list[threading.Thread] = []
    interrupted = False
    try:
        for i in range(n):
            ctx = ProgramContext(f"instance-{i}", homes[i])
            contexts.append(ctx)
            for key, value in {
                **(env or {}),
                "VLCS_INSTANCE": str(i),
                "VLCS_INSTANCES": str(n),
            }.items():
                ctx.setenv(key, value)
            out = err = None
            files = [_open_for(pattern, i) for pattern in (stdout, stderr)]
            ends += [fd for fd in files if fd is not None]
            if tagger is not None:
                out = files[0] if files[0] is not None else tagger.pipe(i, sys.stdout.buffer)
                err = files[1] if files[1] is not None else tagger.pipe(i, sys.stderr.buffer)
                ends += [fd for fd, f in zip((out, err), files, strict=True) if f is None]
            else:
                out, err = files
            given = feed.read_end(i) if feed is not None else None if i == 0 else devnull
            ctx.set_stdio(given, out, err)
        statuses: list[int | BaseException] = [0] * n

        def run(i: int) -> None:
            args = [a.replace("{i}", str(i)) for a in argv]
            try:
                statuses[i] = contexts[i].exec_program(args)
            except BaseException as e:  # reported by the caller, in order
                statuses[i] = e

        threads = [threading.Thread(target=run, args=(i,), name=f"vlcs-exec-{i}") for i in range(n)]
        for t in threads:
            base_thread(t)
            t.start()
        if tagger is not None:
            tagger.start()
        if feed is not None:
            feed.start()
        for t in threads:
            # in steps: a Ctrl-C taken by an instance's thread (the kernel
            # picks any) runs Python's handler only when this thread wakes
            while t.is_alive():
                t.join(0.1)
    except KeyboardInterrupt:
        # From the first instance's start on (a Ctrl-C may land while the
        # others start): the instances run native code nothing stops from
        # here; they end with the process (the caller's to end), their
        # contexts busy.
        interrupted = any(t.is_alive() for t in threads)
        raise
    finally:
        for ctx in [] if interrupted else contexts:
            ctx.close()  # its streams' last descriptors go with its namespace
        if feed is not None:
            feed.stop()
        for fd in ends:
            os.close(fd)
        os.close(devnull)
        if tagger is not None and contexts and not interrupted:
            tagger.join()
    for s in statuses:
        if isinstance(s, BaseException):
            raise s
    return [int(s) for s in statuses]  # type: ignore[arg-type]

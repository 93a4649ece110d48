"""A long-running `vglobal` command (a watch) read line by line as it prints, for tests that wait
for the line telling of an event rather than sleeping."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType

# Wide enough that rich never cuts a name or wraps a row.
WIDE = {"COLUMNS": "250", "PYTHONUNBUFFERED": "1"}


class Stream:
    """``vglobal --hub TARGET ARGS`` with its output (stdout and stderr) read on a thread."""

    def __init__(self, target: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vglobal", "--hub", target, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **WIDE},
        )
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._new.put(line.rstrip("\n"))
        self._new.put(None)

    def expect(self, match: Callable[[str], bool], what: str, timeout: float = 120.0) -> str:
        """The next line for which ``match`` holds; fails at the deadline or if the command ends."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._new.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(f"the command ended before {what}:\n" + "\n".join(self.lines))
            self.lines.append(line)
            if match(line):
                return line
        raise AssertionError(f"no line with {what} after {timeout:.0f}s:\n" + "\n".join(self.lines))

    def wait(self, timeout: float = 60.0) -> int:
        """The exit status once the command ends by itself (its output all read)."""
        code = self.proc.wait(timeout=timeout)
        while (line := self._new.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return code

    def interrupt(self) -> int:
        """Ctrl-C, as a user stops a watch; the exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.wait()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

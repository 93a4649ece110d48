"""The hub's main thread waiting for a signal to act on."""

from __future__ import annotations

import threading

# The kernel may hand a process signal to any of its threads. Python runs the handler on the main
# thread only when that thread next runs bytecode, and a main thread blocked in a plain lock wait
# is not woken: a SIGHUP could sit unhandled until some later signal. Waking often bounds that.
WAKE_EVERY = 0.2


def wait_until(done: threading.Event) -> None:
    """Block the main thread until ``done`` is set, running signal handlers as they arrive."""
    while not done.wait(WAKE_EVERY):
        pass

"""Ctrl-C for the commands that run until stopped (watches)."""

from __future__ import annotations

import signal
import threading


def interruptible() -> None:
    """Let SIGINT stop this process even if it started with SIGINT ignored (as a command put in
    the background by a non-interactive shell is): a watch has no other way to be told to end,
    and kubectl's watches end on it the same way."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)

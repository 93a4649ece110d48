"""How a watch ends on Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn


def stop_watch() -> NoReturn:
    """Exit 0 at once, output flushed. Not ``sys.exit``: with a stream still open, gRPC's threads
    can hold the interpreter's shutdown, and a watch interrupted by its user must end."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(0)

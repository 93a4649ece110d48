"""What every `vglobal` command shares: the consoles, how a command fails, the context object
holding the hub connection, and the logging setup of the long-running commands."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console

from vglobal.dial import Dial, DialError
from vglobal.sdk import Client

# Lines are never folded at 80 columns in pipes and logs (rich's width when not on a terminal).
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)
FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def fail(message: str) -> NoReturn:
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    sys.exit(1)


def define_kinds(path: Path) -> None:
    """Take the KindDefinitions of ``path`` as job kinds (``--kinds-file``); a bad one stops here."""
    from vglobal.model.errors import ManifestError
    from vglobal.model.kinds.generic import define_text

    try:
        define_text(path.read_text())
    except (OSError, ManifestError) as exc:
        fail(f"--kinds-file {path}: {exc}")


class Ctx:
    def __init__(self, dial: Dial) -> None:
        self.dial = dial
        self.hub = dial.target
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        if self._client is None:
            try:
                self._client = Client(dial=self.dial)
            except DialError as exc:
                fail(str(exc))
        return self._client


def setup_logging(verbose: bool) -> None:
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    if not sys.stderr.isatty():
        fmt = (
            '{"time": "%(asctime)s", "level": "%(levelname)s", "logger": "%(name)s", '
            '"message": %(message_json)s}'
        )

        class JsonMessage(logging.Formatter):
            def format(self, record: logging.LogRecord) -> str:
                record.message_json = json.dumps(record.getMessage())
                return super().format(record)

        handler = logging.StreamHandler()
        handler.setFormatter(JsonMessage(fmt))
        logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler], force=True)
    else:
        logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format=fmt, force=True)

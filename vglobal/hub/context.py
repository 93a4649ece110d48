"""What every servicer and loop of one hub process shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from vglobal.config import HubSettings
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, Wakeups


@dataclass
class HubContext:
    settings: HubSettings
    engine: Engine
    sessions: sessionmaker[Session]
    wakeups: Wakeups = field(default_factory=lambda: Wakeups([DISPATCH, DELIVER, FENCE]))

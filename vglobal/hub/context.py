"""What every servicer and loop of one hub process shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from vglobal.admission import AdmissionResult, Snapshot
from vglobal.clock import Clock, RealClock
from vglobal.config import HubSettings
from vglobal.hub.notify import DELIVER, DISPATCH, FENCE, JOB_CHANGES, REVISIONS, WORKFLOWS, Wakeups
from vglobal.hub.secret_box import SecretBox


@dataclass
class HubContext:
    settings: HubSettings
    engine: Engine
    sessions: sessionmaker[Session]
    wakeups: Wakeups = field(
        default_factory=lambda: Wakeups([DISPATCH, DELIVER, FENCE, JOB_CHANGES, REVISIONS, WORKFLOWS])
    )
    # What CronJob schedules are read by (tests give the hub a clock they move)
    clock: Clock = field(default_factory=RealClock)
    # The last committed dispatch cycle's input and result, for the forecast loop to replay on
    last_cycle: tuple[Snapshot, AdmissionResult] | None = None
    # Seals and opens Secrets (--secret-keys-file); without keys, Secrets are refused.
    secrets: SecretBox = field(default_factory=lambda: SecretBox([]))

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

"""What the agent keeps of runs that ended, each part bounded whatever the rate of jobs.

A finished run stays, to be reported again to a hub that reconnects, for ``retention`` seconds and
among the newest ``most`` finished runs (a run holds its pods, manifests and events: tens of KiB at
hundreds of jobs a second would grow without end). A run that is gone, expired or rejected, is
remembered by (uid, generation) among the newest ``remembered`` so that a re-sent Dispatch of it is
not run again; older ones are forgotten (a hub sends again only what it has not heard ended).
"""

from __future__ import annotations

from collections import OrderedDict, deque

RETENTION = 600.0
MOST_FINISHED = 20_000
REMEMBERED = 200_000


class Kept:
    def __init__(
        self, retention: float = RETENTION, most: int = MOST_FINISHED, remembered: int = REMEMBERED
    ) -> None:
        self.retention = retention
        self.most = most
        self.remembered = remembered
        # uid -> (generation, when it finished), oldest first: runs reported finished
        self.finished: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self.gone: deque[tuple[str, int]] = deque()  # oldest first

    def reported(self, uid: str, generation: int, finished_at: float) -> None:
        """A finished run was reported; from now on it may expire."""
        had = self.finished.get(uid)
        if had is None or had[0] != generation:  # a new generation's run: queued anew
            self.finished.pop(uid, None)
            self.finished[uid] = (generation, finished_at)

    def due(self, now: float) -> list[tuple[str, int]]:
        """The runs to let go now: past the retention, or beyond the newest ``most``."""
        out = []
        while self.finished:
            uid = next(iter(self.finished))
            gen, at = self.finished[uid]
            if now - at <= self.retention and len(self.finished) <= self.most:
                break
            self.finished.popitem(last=False)
            out.append((uid, gen))
        return out

    def forget(self, uid: str, generation: int) -> list[tuple[str, int]]:
        """Remember a run gone; returns the oldest remembered ones now forgotten."""
        self.gone.append((uid, generation))
        out = []
        while len(self.gone) > self.remembered:
            out.append(self.gone.popleft())
        return out

"""How long a job is expected to run: what it says (``vglobal.io/expected-duration``, else
``activeDeadlineSeconds`` as an upper bound), else what similar jobs took: the median run time of
the last completed jobs of its queue whose names share its stem (``train-resnet-0042`` and
``train-resnet-7f3c`` are both ``train-resnet``), else of its queue."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable

from vglobal.model.duration import parse_duration

EXPECTED_DURATION = "vglobal.io/expected-duration"
# Trailing name parts that number or hash a run (-0042, -7f3c9, -20261206-1200, -abc12)
_RUN_SUFFIX = re.compile(r"(?:[-.](?=[0-9a-z]*[0-9])[0-9a-z]{1,16})+$")


def name_stem(name: str) -> str:
    return _RUN_SUFFIX.sub("", name) or name


class RunTimes:
    """Medians of recent run times, by (queue, stem) and by queue."""

    def __init__(self, history: Iterable[tuple[str, str, float]]) -> None:
        by_stem: dict[tuple[str, str], list[float]] = {}
        by_queue: dict[str, list[float]] = {}
        for queue, name, seconds in history:
            if seconds > 0:
                by_stem.setdefault((queue, name_stem(name)), []).append(seconds)
                by_queue.setdefault(queue, []).append(seconds)
        self._stem = {k: statistics.median(v) for k, v in by_stem.items()}
        self._queue = {k: statistics.median(v) for k, v in by_queue.items()}

    def expected(self, queue: str, name: str, annotation: str | None, deadline: object) -> float | None:
        if annotation:
            try:
                seconds = parse_duration(annotation)
            except ValueError:
                seconds = 0.0
            if seconds > 0:
                return seconds
        stem = self._stem.get((queue, name_stem(name)))
        guess = stem if stem is not None else self._queue.get(queue)
        try:
            limit = float(str(deadline)) if deadline not in (None, "") else None
        except ValueError:
            limit = None
        if limit is not None and limit > 0:
            return limit if guess is None else min(guess, limit)
        return guess

"""Splitting many submissions into SubmitJobs calls the hub takes: at most ``size`` jobs and about
``max_bytes`` of manifests per call (the hub takes 1,000 jobs and 16 MiB per call by default)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

BATCH_SIZE = 500
BATCH_BYTES = 8 * 1024 * 1024


def batches(
    items: Iterable[tuple[str, str]], *, size: int = BATCH_SIZE, max_bytes: int = BATCH_BYTES
) -> Iterator[list[tuple[str, str]]]:
    """(manifest, request_id) pairs in order, grouped; a manifest bigger than ``max_bytes`` goes alone."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    batch: list[tuple[str, str]] = []
    used = 0
    for item in items:
        n = len(item[0]) + len(item[1])
        if batch and (len(batch) >= size or used + n > max_bytes):
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += n
    if batch:
        yield batch

"""Where the public traces the simulator and benchmarks replay come from, and the error that says
so when a file is missing (they are not in the repository: fetch them once, see the README)."""

from __future__ import annotations

from pathlib import Path

# Next to the checkout, as ../shared/data/<trace>/ (bench/ reads them there).
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

SOURCES = {
    "openb": (
        "the Alibaba GPU trace (Alibaba cluster trace GPU v2023): the CSV files of the folder "
        "cluster-trace-gpu-v2023/csv/ of https://github.com/alibaba/clusterdata"
    ),
    "philly": (
        "the Microsoft Philly trace as Pollux uses it: simulator/traces/philly.csv of "
        "https://github.com/petuum/adaptdl (branch osdi21-artifact), saved as pollux_philly.csv, and "
        "the Helios paper's helios_philly_vc.csv"
    ),
    "topology": (
        "the Alibaba Lingjun network layout: topo.csv of "
        "https://github.com/alibaba/alibaba-lingjun-dataset-2023, saved as crux_topo.csv"
    ),
}


class TraceMissing(FileNotFoundError):
    """A trace file is not there; the message says where the trace comes from."""


def need(path: Path, trace: str) -> Path:
    """``path`` if it is a file, else TraceMissing naming the trace's source and where to put it."""
    if path.is_file():
        return path
    raise TraceMissing(
        f"{path}: no such file. It is part of {SOURCES[trace]}; download it and put the files in "
        f"{path.parent}/."
    )

"""SVG drawn on the server: usage bars, a time plot and a DAG, as markup strings for the templates.

Each figure carries a <title> and role="img" so a screen reader announces what it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

BAR_W, BAR_H = 220, 16


def _pct(part: float, whole: float) -> float:
    return 0.0 if whole <= 0 else max(0.0, min(1.0, part / whole))


def usage(label: str, used: float, total: float, width: int = BAR_W) -> Markup:
    """One bar: ``used`` of ``total`` filled."""
    w = _pct(used, total) * width
    title = escape(f"{label}: {used:g} of {total:g}")
    return Markup(
        f'<svg class="bar" width="{width}" height="{BAR_H}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect class="bar-bg" width="{width}" height="{BAR_H}" rx="3"/>'
        f'<rect class="bar-used" width="{w:.1f}" height="{BAR_H}" rx="3"/></svg>'
    )


def quota(label: str, marks: dict[str, float], width: int = BAR_W) -> Markup:
    """A queue's resource as one bar: allocated filled against capability, with guarantee and
    deserved as marks; the scale is the largest of them."""
    scale = max([v for v in marks.values() if v > 0] or [1.0])
    allocated = marks.get("allocated", 0.0)
    parts = [
        f'<svg class="bar" width="{width}" height="{BAR_H + 4}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}: '
        + escape(", ".join(f"{k} {v:g}" for k, v in marks.items()))
        + "</title>",
        f'<rect class="bar-bg" y="2" width="{width}" height="{BAR_H}" rx="3"/>',
        f'<rect class="bar-used" y="2" width="{_pct(allocated, scale) * width:.1f}" '
        f'height="{BAR_H}" rx="3"/>',
    ]
    for name in ("guarantee", "deserved", "capability"):
        value = marks.get(name, 0.0)
        if value > 0:
            x = _pct(value, scale) * (width - 2) + 1
            parts.append(f'<line class="mark-{name}" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{BAR_H + 4}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))


def plot(
    label: str, series: dict[str, Sequence[tuple[float, float]]], width: int = 520, height: int = 140
) -> Markup:
    """Lines of (x, y) points per series name, x in seconds, on shared axes with y from 0."""
    points = [p for s in series.values() for p in s]
    if not points:
        return Markup(f'<p class="muted">{escape(label)}: no samples yet</p>')
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    # At least 1.0, a queue's fair share, so a plot of small shares is not blown up to full height.
    y1 = max([p[1] for p in points] + [1.0])
    pad = 30
    sx = (width - pad - 8) / ((x1 - x0) or 1.0)
    sy = (height - 20) / y1
    out = [
        f'<svg class="plot" width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>",
        f'<line class="axis" x1="{pad}" y1="{height - 10}" x2="{width - 8}" y2="{height - 10}"/>',
        f'<text class="tick" x="2" y="14">{y1:.2g}</text><text class="tick" x="2" y="{height - 10}">0</text>',
    ]
    for i, (name, pts) in enumerate(sorted(series.items())):
        path = " ".join(f"{pad + (x - x0) * sx:.1f},{height - 10 - y * sy:.1f}" for x, y in pts)
        out.append(
            f'<polyline class="line line-{i % 6}" fill="none" points="{path}">'
            f"<title>{escape(name)}</title></polyline>"
        )
        out.append(f'<text class="legend line-{i % 6}" x="{pad + 8 + 120 * i}" y="12">{escape(name)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def dag(label: str, steps: Sequence[tuple[str, str, Sequence[str]]]) -> Markup:
    """Steps (name, phase, depends_on) in columns by depth, an arrow from each dependency."""
    depth: dict[str, int] = {}
    names = {s[0] for s in steps}
    deps = {s[0]: [d for d in s[2] if d in names] for s in steps}

    def level(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name not in depth:
            parents = [d for d in deps.get(name, []) if d not in seen]
            depth[name] = 1 + max((level(d, seen | {name}) for d in parents), default=-1)
        return depth[name]

    for s in steps:
        level(s[0])
    rows: dict[int, int] = {}
    pos: dict[str, tuple[int, int]] = {}
    for name, _, _ in steps:
        col = depth[name]
        pos[name] = (col, rows.get(col, 0))
        rows[col] = rows.get(col, 0) + 1
    bw, bh, gx, gy = 140, 36, 60, 16
    width = (max(depth.values(), default=0) + 1) * (bw + gx)
    height = max(rows.values(), default=1) * (bh + gy) + gy

    def xy(name: str) -> tuple[int, int]:
        col, row = pos[name]
        return 10 + col * (bw + gx), gy + row * (bh + gy)

    out = [
        f'<svg class="dag" width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>"
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
    ]
    for name, targets in deps.items():
        x2, y2 = xy(name)
        for d in targets:
            x1, y1 = xy(d)
            out.append(
                f'<line class="edge" x1="{x1 + bw}" y1="{y1 + bh / 2}" x2="{x2}" y2="{y2 + bh / 2}" '
                'marker-end="url(#arrow)"/>'
            )
    for name, phase, _ in steps:
        x, y = xy(name)
        cls = "phase-" + (phase or "unknown").lower()
        out.append(
            f'<g class="step {cls}" data-step="{escape(name)}">'
            f'<rect x="{x}" y="{y}" width="{bw}" height="{bh}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 15}">{escape(name)}</text>'
            f'<text class="step-phase" x="{x + 8}" y="{y + 30}">{escape(phase)}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))

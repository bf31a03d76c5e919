"""Hand-written inline SVG for ``trace-tasks report``: small, offline, no library, no script.

Every text that reaches the markup goes through :func:`html.escape`; every bar
carries its count in ``data-count`` (and a ``<title>`` a browser shows on
hover), so a test can read the chart back.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

BAR_RGB = "#3b6fd6"
AXIS_RGB = "#999"


def histogram_svg(
    counts: Sequence[int], *, label: str, top_share: float | None = None, width: int = 230, height: int = 120
) -> str:
    """A bar chart of ``counts`` over [0, 1] (bins of equal width), with labelled axes.

    Bar heights are shares of the chart's rows, on the scale ``[0, top_share]``
    (the caller passes one ``top_share`` for every chart of a page, so bars compare
    across charts; ``None``: this chart's largest share). Hovering a bar shows its
    bin, its count and its share.
    """
    bins = max(len(counts), 1)
    total = sum(counts)
    shares = [count / total if total else 0.0 for count in counts]
    top = top_share if top_share is not None and top_share > 0 else (max(shares, default=0.0) or 1.0)
    left, bottom, top_pad = 34, 26, 6  # room for the y labels, the x labels and title, the top label
    plot_w, plot_h = width - left - 2, height - bottom - top_pad
    bar_w = plot_w / bins
    bars = []
    for n, (count, share) in enumerate(zip(counts, shares, strict=True)):
        h = plot_h * min(share / top, 1.0)
        low, high = n / bins, (n + 1) / bins
        bars.append(
            f'<rect class="bar" x="{left + n * bar_w + 0.5:.1f}" y="{top_pad + plot_h - h:.1f}" '
            f'width="{max(bar_w - 1, 0.5):.1f}" height="{h:.1f}" fill="{BAR_RGB}" data-count="{count}">'
            f"<title>{escape(label)}: {low:.1f}-{high:.1f}: {count} rows ({100 * share:.1f}%)</title></rect>"
        )
    base = top_pad + plot_h
    return (
        f'<svg class="hist" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        + "".join(bars)
        + f'<line x1="{left}" y1="{base}" x2="{width - 2}" y2="{base}" stroke="{AXIS_RGB}"/>'
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{base}" stroke="{AXIS_RGB}"/>'
        f'<text x="{left - 3}" y="{top_pad + 8}" font-size="10" text-anchor="end">{100 * top:.0f}%</text>'
        f'<text x="{left - 3}" y="{base}" font-size="10" text-anchor="end">0%</text>'
        f'<text x="{left}" y="{base + 11}" font-size="10">0</text>'
        f'<text x="{left + plot_w / 2}" y="{base + 11}" font-size="10" text-anchor="middle">0.5</text>'
        f'<text x="{width - 2}" y="{base + 11}" font-size="10" text-anchor="end">1</text>'
        f'<text x="{left + plot_w / 2}" y="{height - 2}" font-size="10" text-anchor="middle" class="axis-title">'
        f"reward (n = {total})</text>"
        f'<text x="9" y="{top_pad + plot_h / 2}" font-size="10" text-anchor="middle" class="axis-title" '
        f'transform="rotate(-90 9 {top_pad + plot_h / 2})">share of rows</text>'
        "</svg>"
    )


def delta_bar_svg(
    change: float | None,
    *,
    width: int = 80,
    height: int = 12,
    scale: float = 1.0,
    interval: tuple[float, float] | None = None,
    muted: bool = False,
) -> str:
    """A bar from the middle, right and green for a gain, left and red for a loss; hover: its value.

    ``scale`` is the change drawn at full half-width (default 1: a reward in [-1, 1]); a table of
    small deltas passes the largest bound it shows, so they stay visible. ``interval`` adds a
    whisker from its low to its high bound; ``muted`` draws the bar grey (a change within noise).
    """
    if change is None:
        return ""
    middle = width / 2
    unit = middle / scale if scale > 0 else middle

    def at(v: float) -> float:
        return min(max(middle + v * unit, 0.0), float(width))

    length = abs(at(change) - middle)
    x = middle if change >= 0 else middle - length
    colour = "#aaaaaa" if muted else "#2a8a2a" if change >= 0 else "#c03030"
    whisker = ""
    if interval is not None:
        low, high = at(interval[0]), at(interval[1])
        mid = height / 2
        whisker = (
            f'<line class="interval" x1="{low:.1f}" y1="{mid}" x2="{high:.1f}" y2="{mid}" stroke="#333"/>'
            f'<line x1="{low:.1f}" y1="3" x2="{low:.1f}" y2="{height - 3}" stroke="#333"/>'
            f'<line x1="{high:.1f}" y1="3" x2="{high:.1f}" y2="{height - 3}" stroke="#333"/>'
        )
    return (
        f'<svg class="delta" width="{width}" height="{height}" viewBox="0 0 {width} {height}" data-change="{change:.6f}">'
        f"<title>{change:+.3f}</title>"
        f'<rect x="{x:.1f}" y="2" width="{length:.1f}" height="{height - 4}" fill="{colour}"/>'
        f'<line x1="{middle}" y1="0" x2="{middle}" y2="{height}" stroke="{AXIS_RGB}"/>{whisker}</svg>'
    )


def curve_svg(
    points: Sequence[tuple[str, float, float, float] | None], *, label: str, width: int = 210, height: int = 110
) -> str:
    """A curve over runs on [0, 1]: per run its mean (a dot) and its 95% interval (a whisker); None: a gap.

    ``points`` are (run label, mean, low, high) in run order, one x position
    each; a dot carries ``data-mean``, ``data-low`` and ``data-high`` (a test
    reads the chart back) and shows its run and values on hover.
    """
    left, bottom, top_pad, right = 30, 14, 6, 6
    plot_w, plot_h = width - left - right, height - bottom - top_pad
    step = plot_w / max(len(points) - 1, 1)

    def y(v: float) -> float:
        return top_pad + plot_h * (1.0 - min(max(v, 0.0), 1.0))

    marks: list[str] = []
    path: list[str] = []
    segments: list[list[str]] = []
    for n, point in enumerate(points):
        x = left + (n * step if len(points) > 1 else plot_w / 2)
        if point is None:
            if path:
                segments.append(path)
            path = []
            continue
        run, mean, low, high = point
        path.append(f"{x:.1f},{y(mean):.1f}")
        marks.append(
            f'<line x1="{x:.1f}" y1="{y(low):.1f}" x2="{x:.1f}" y2="{y(high):.1f}" stroke="{BAR_RGB}" stroke-opacity=".45" '
            f'stroke-width="3"/><circle class="point" cx="{x:.1f}" cy="{y(mean):.1f}" r="2.5" fill="{BAR_RGB}" '
            f'data-mean="{mean:.6f}" data-low="{low:.6f}" data-high="{high:.6f}"><title>{escape(label)}, {escape(run)}: '
            f"{mean:.3f} (95% interval {low:.3f} to {high:.3f})</title></circle>"
        )
    if path:
        segments.append(path)
    lines = "".join(
        f'<polyline points="{" ".join(s)}" fill="none" stroke="{BAR_RGB}" stroke-width="1.2"/>' for s in segments if len(s) > 1
    )
    base = top_pad + plot_h
    first = escape(points[0][0]) if points and points[0] else ""
    last = escape(points[-1][0]) if points and points[-1] else ""
    return (
        f'<svg class="curve" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">'
        f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="{AXIS_RGB}"/>'
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{base}" stroke="{AXIS_RGB}"/>'
        f'<line x1="{left}" y1="{y(0.5):.1f}" x2="{width - right}" y2="{y(0.5):.1f}" stroke="#eee"/>'
        f'<text x="{left - 3}" y="{top_pad + 8}" font-size="10" text-anchor="end">1</text>'
        f'<text x="{left - 3}" y="{y(0.5) + 3:.1f}" font-size="10" text-anchor="end">0.5</text>'
        f'<text x="{left - 3}" y="{base}" font-size="10" text-anchor="end">0</text>'
        f'<text x="{left}" y="{height - 2}" font-size="9">{first[:14]}</text>'
        f'<text x="{width - right}" y="{height - 2}" font-size="9" text-anchor="end">{last[:14]}</text>'
        + lines
        + "".join(marks)
        + "</svg>"
    )


def share_svg(ones: int, total: int, *, label: str, width: int = 230, height: int = 40) -> str:
    """A 0/1 component as one bar: the share of rows at 1 (``data-ones``, ``data-total``), the count beside it."""
    share = ones / total if total else 0.0
    plot_w = width - 4
    return (
        f'<svg class="share" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}: {100 * share:.1f}% at 1" data-ones="{ones}" data-total="{total}">'
        f"<title>{escape(label)}: {ones} of {total} rows at 1 ({100 * share:.1f}%), {total - ones} at 0</title>"
        f'<rect x="2" y="4" width="{plot_w}" height="14" fill="#eee"/>'
        f'<rect x="2" y="4" width="{plot_w * share:.1f}" height="14" fill="{BAR_RGB}"/>'
        f'<text x="2" y="32" font-size="11">{100 * share:.0f}% at 1 ({ones} of {total})</text>'
        "</svg>"
    )

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


def histogram_svg(counts: Sequence[int], *, label: str, width: int = 180, height: int = 70) -> str:
    """A bar chart of ``counts`` over [0, 1] (bins of equal width), bars scaled to the largest count."""
    bins = max(len(counts), 1)
    top = max(counts, default=0) or 1
    plot_h = height - 14  # room for the axis labels
    bar_w = width / bins
    bars = []
    for n, count in enumerate(counts):
        h = plot_h * count / top
        low, high = n / bins, (n + 1) / bins
        bars.append(
            f'<rect class="bar" x="{n * bar_w + 0.5:.1f}" y="{plot_h - h:.1f}" width="{max(bar_w - 1, 0.5):.1f}" '
            f'height="{h:.1f}" fill="{BAR_RGB}" data-count="{count}">'
            f"<title>{low:.1f}-{high:.1f}: {count}</title></rect>"
        )
    return (
        f'<svg class="hist" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        + "".join(bars)
        + f'<line x1="0" y1="{plot_h}" x2="{width}" y2="{plot_h}" stroke="{AXIS_RGB}"/>'
        f'<text x="0" y="{height - 2}" font-size="10">0</text>'
        f'<text x="{width}" y="{height - 2}" font-size="10" text-anchor="end">1</text>'
        f'<text x="{width / 2}" y="{height - 2}" font-size="10" text-anchor="middle">max {max(counts, default=0)}</text>'
        "</svg>"
    )


def delta_bar_svg(change: float | None, *, width: int = 80, height: int = 12) -> str:
    """A bar from the middle, right and green for a gain, left and red for a loss (``change`` in [-1, 1])."""
    if change is None:
        return ""
    middle = width / 2
    length = min(abs(change), 1.0) * middle
    x = middle if change >= 0 else middle - length
    colour = "#2a8a2a" if change >= 0 else "#c03030"
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<rect x="{x:.1f}" y="2" width="{length:.1f}" height="{height - 4}" fill="{colour}"/>'
        f'<line x1="{middle}" y1="0" x2="{middle}" y2="{height}" stroke="{AXIS_RGB}"/></svg>'
    )

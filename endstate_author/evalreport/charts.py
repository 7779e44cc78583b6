"""Charts for report.html and compare.html, as static SVG drawn by pygal.

pygal writes plain SVG; its tooltips need a script it would fetch from the network, so that
is switched off (``js=[]``), and the small configuration script it still inlines is taken out:
the page must open with no request leaving the file, and holds no script. The SVG is
inlined in the page, and a chart with no data is a sentence, not an empty frame.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import pygal
from pygal.style import Style

STYLE = Style(
    background="white",
    plot_background="white",
    foreground="#333",
    foreground_strong="#111",
    foreground_subtle="#999",
    colors=("#2f6fb0", "#d2691e", "#3a9d5d", "#b03a48"),
    font_family="system-ui, sans-serif",
)


def _config(chart: pygal.graph.graph.Graph, title: str) -> None:
    chart.title = title
    chart.js = []  # no tooltip script: nothing may be fetched
    chart.disable_xml_declaration = True
    chart.style = STYLE
    chart.width = 520
    chart.height = 300
    chart.explicit_size = True


_SCRIPT = re.compile(r"<script\b.*?</script>", re.S | re.I)


def _svg(chart: pygal.graph.graph.Graph) -> str:
    """The chart's SVG without the configuration script pygal writes into it even with no
    tooltip script: the page has no script at all (its CSP would block one anyway)."""
    return _SCRIPT.sub("", str(chart.render(is_unicode=True)))


def _empty(title: str) -> str:
    return f'<p class="empty">{title}: no data</p>'


def pass_rate_by_category(
    rates: dict[str, float | None], title: str = "Pass rate by category"
) -> str:
    known = {c: r for c, r in rates.items() if r is not None}
    if not known:
        return _empty(title)
    chart = pygal.HorizontalBar(range=(0, 100), show_legend=False)
    _config(chart, title)
    chart.x_labels = list(known)
    chart.add("pass rate (%)", [round(100 * r, 1) for r in known.values()])
    return _svg(chart)


def paired_rates(
    rates_a: dict[str, float | None], rates_b: dict[str, float | None], labels: tuple[str, str]
) -> str:
    """Two runs' pass rate per category, side by side."""
    categories = sorted(set(rates_a) | set(rates_b))
    if not categories:
        return _empty("Pass rate by category")
    chart = pygal.Bar(range=(0, 100))
    _config(chart, "Pass rate by category (%)")
    chart.x_labels = categories
    for label, rates in zip(labels, (rates_a, rates_b), strict=True):
        values = [rates.get(c) for c in categories]
        chart.add(label, [None if v is None else round(100 * v, 1) for v in values])
    return _svg(chart)


def _ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round tick values from ``low`` to ``high`` (1, 2 or 5 times a power of ten apart)."""
    span = high - low
    if span <= 0:
        return [low]
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    return [round(first + i * step, 12) for i in range(int((high - first) / step) + 2)
            if first + i * step <= high + step / 2]  # fmt: skip


def _label(value: float) -> str:
    """An axis label that fits: thousands grouped, no exponent, at most 3 significant digits
    after the point."""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == int(value):
        return f"{int(value)}"
    return f"{value:.3g}"


def _edges(data: list[float], integer: bool) -> list[float]:
    """Bin edges: one bin per value for a few small integers (steps), whole-number bins for
    wider integers (a bin of steps 3.0-6.57 would hold no run at 6.57), else about
    ``log2(n) + 1`` equal bins."""
    low, high = min(data), max(data)
    bins = max(3, min(12, math.ceil(math.log2(len(data))) + 1))
    if integer and high - low <= 15:
        return [v - 0.5 for v in range(int(low), int(high) + 2)]
    if integer:
        width = math.ceil((high - low + 1) / bins)
        return [low + i * width for i in range(math.ceil((high - low + 1) / width) + 1)]
    if high == low:
        high = low + 1
    step = (high - low) / bins
    return [low + i * step for i in range(bins + 1)]


def histogram(title: str, values: Sequence[float], unit: str = "", *,
              integer: bool = False) -> str:  # fmt: skip
    """The distribution of ``values`` (bins by :func:`_edges`); round ticks, labels that fit
    (no exponent, no cut: ``truncate_label=-1``), counts on whole numbers."""
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not data:
        return _empty(title)
    low, high = min(data), max(data)
    edges = _edges(data, integer)
    counts = [0] * (len(edges) - 1)
    for v in data:
        i = next((k for k in range(len(counts)) if v < edges[k + 1]), len(counts) - 1)
        counts[i] += 1
    chart = pygal.Histogram(show_legend=False, truncate_label=-1)
    _config(chart, title + (f" ({unit})" if unit else ""))
    chart.add(title, [(n, edges[i], edges[i + 1]) for i, n in enumerate(counts)])
    if integer and high - low <= 15:
        chart.x_labels = list(range(int(low), int(max(data)) + 1))
    else:
        chart.x_labels = _ticks(edges[0], edges[-1])
    chart.x_value_formatter = _label
    top = max(counts)
    chart.y_labels = [int(t) for t in _ticks(0, top, most=5) if t == int(t)] or [0, top]
    chart.y_title = "runs" if "latency" not in title.lower() else "calls"
    return _svg(chart)

"""Charts for report.html and compare.html, as static SVG drawn by pygal.

pygal writes plain SVG; its tooltips need a script it would fetch from the network, so that
is switched off (``js=[]``): the page must open with no request leaving the file. The SVG is
inlined in the page, and a chart with no data is a sentence, not an empty frame.
"""

from __future__ import annotations

import math
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


def _svg(chart: pygal.graph.graph.Graph) -> str:
    return str(chart.render(is_unicode=True))


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


def histogram(title: str, values: Sequence[float], unit: str = "") -> str:
    """The distribution of ``values`` in up to ten equal bins."""
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not data:
        return _empty(title)
    low, high = min(data), max(data)
    if high == low:
        high = low + 1
    bins = min(10, max(1, len(set(data))))
    step = (high - low) / bins
    counts = [0] * bins
    for v in data:
        counts[min(bins - 1, int((v - low) / step))] += 1
    chart = pygal.Histogram(show_legend=False)
    _config(chart, title + (f" ({unit})" if unit else ""))
    chart.add(title, [(n, low + i * step, low + (i + 1) * step) for i, n in enumerate(counts)])
    return _svg(chart)

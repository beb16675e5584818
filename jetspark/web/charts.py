"""Small charts drawn as SVG documents on the server: no script, no library, nothing fetched.

The job page shows them as images (`<img src=...svg>`), which a browser never runs code in, and
asks for them again every few seconds. `rate_chart` draws a vertex's items per second in and out
over the last minutes; `duration_chart` the durations of the last snapshots or epochs as bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 300, 110
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 22, 18
IN_COLOUR, OUT_COLOUR, BAR_COLOUR = "#1f6fb5", "#d9822b", "#5a8f3d"
STYLE = "font: 10px system-ui, sans-serif; fill: #444"
#: The shortest time axis of a rate chart (seconds): a new job's first samples do not fill it.
MIN_SPAN = 60.0


def _frame(title: str, body: str, top_label: str, x_left: str, x_right: str) -> str:
    plot_bottom = HEIGHT - BOTTOM
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title, quote=True)}">'
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>'
        f'<text x="{LEFT}" y="13" style="{STYLE}; font-weight: 600">{escape(title)}</text>'
        f'<line x1="{LEFT}" y1="{plot_bottom}" x2="{WIDTH - RIGHT}" y2="{plot_bottom}" stroke="#bbb"/>'
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{plot_bottom}" stroke="#bbb"/>'
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end" style="{STYLE}">{escape(top_label)}</text>'
        f'<text x="{LEFT - 4}" y="{plot_bottom}" text-anchor="end" style="{STYLE}">0</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 4}" style="{STYLE}">{escape(x_left)}</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 4}" text-anchor="end" style="{STYLE}">{escape(x_right)}</text>'
        f"{body}</svg>"
    )


def _short(value: float) -> str:
    """1234 -> 1.2k, 2500000 -> 2.5M: an axis label that fits."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def rate_chart(
    title: str,
    times: Sequence[float],
    rates_in: Sequence[float],
    rates_out: Sequence[float],
    now: float,
    span: float,
) -> str:
    """Items per second in (blue) and out (orange) at `times` (wall clock), up to `now`: over
    the seconds the samples cover, at least a minute and at most `span`."""
    span = min(max(now - times[0], MIN_SPAN) if times else MIN_SPAN, span)
    peak = max([*rates_in, *rates_out, 0.0])
    top = peak * 1.1 if peak > 0 else 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def points(values: Sequence[float]) -> str:
        return " ".join(
            f"{LEFT + plot_w * (1 - min(max(now - t, 0.0), span) / span):.1f},"
            f"{TOP + plot_h * (1 - v / top):.1f}"
            for t, v in zip(times, values)
        )

    if times:
        body = (
            f'<polyline class="in" points="{points(rates_in)}" fill="none" stroke="{IN_COLOUR}" stroke-width="1.5"/>'
            f'<polyline class="out" points="{points(rates_out)}" fill="none" stroke="{OUT_COLOUR}" '
            'stroke-width="1.5" stroke-dasharray="4 2"/>'
        )
    else:
        body = f'<text x="{LEFT + 8}" y="{TOP + plot_h / 2}" style="{STYLE}">no samples yet</text>'
    legend = (
        f'<text x="{WIDTH - RIGHT}" y="13" text-anchor="end" style="{STYLE}">'
        f'<tspan fill="{IN_COLOUR}">in/s</tspan> <tspan fill="{OUT_COLOUR}">out/s</tspan></text>'
    )
    return _frame(title, body + legend, _short(top), _ago(span), "now")


def _ago(seconds: float) -> str:
    return f"-{seconds / 60:.1f} min" if seconds >= 120 else f"-{seconds:.0f} s"


def duration_chart(title: str, labels: Sequence[str], seconds: Sequence[float]) -> str:
    """One bar per duration (oldest left), labelled with the first and last of `labels`."""
    peak = max([*seconds, 0.0])
    top = peak * 1.1 if peak > 0 else 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(seconds), 1)
    bars = "".join(
        f'<rect class="bar" x="{LEFT + i * slot + slot * 0.15:.1f}" y="{TOP + plot_h * (1 - s / top):.1f}" '
        f'width="{slot * 0.7:.1f}" height="{plot_h * s / top:.1f}" fill="{BAR_COLOUR}"><title>'
        f"{escape(label)}: {s:.3g} s</title></rect>"
        for i, (label, s) in enumerate(zip(labels, seconds))
    )
    if not seconds:
        bars = f'<text x="{LEFT + 8}" y="{TOP + plot_h / 2}" style="{STYLE}">none yet</text>'
    first, last = (labels[0], labels[-1]) if labels else ("", "")
    top_label = f"{top * 1000:.3g} ms" if top < 1 else f"{_short(top)} s"
    return _frame(title, bars, top_label, first, last)

"""Inline SVG charts for the report: axes, ticks whose labels never overlap, points, lines, bars.

No plotting library: the page must build on a CPU-only CI box with jinja2 alone and open offline.
A `Chart` is a plot area with an x and a y `Axis` (linear, logarithmic, or categorical); marks are
appended in data coordinates and `Chart.svg()` returns the markup. Tick labels are placed from
their estimated box (characters x font size), keeping only labels at least `MIN_LABEL_GAP` pixels
apart, so dense axes thin out instead of printing over each other."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

# Colours match style.css (--agree etc.); SVG attributes cannot read CSS variables portably
# when a plot is saved on its own as an .svg, so they are repeated here.
VERDICT_COLOURS = {"agree": "#2e7d32", "finding": "#b26a00", "resolved": "#1565c0", "diverge": "#c62828"}
# Series colours for lines that are not verdicts (predicted curves, baselines, rungs).
PALETTE = ("#0b5cad", "#8250df", "#bf3989", "#1a7f37", "#9a6700", "#cf222e", "#0969da", "#57606a", "#953800", "#116329")

TICK_FONT_PX = 10.5  # svg .tick in style.css
CHAR_WIDTH_EM = 0.62  # the widest monospace digit box is ~0.6 em; a margin on top
MIN_LABEL_GAP = 6.0  # pixels of white space between two neighbouring tick labels


def label_width(text: str, font_px: float = TICK_FONT_PX) -> float:
    """Estimated width of a monospace label: what the overlap check and the browser test both use."""
    return len(text) * font_px * CHAR_WIDTH_EM


def _n(value: float) -> str:
    """A coordinate to a tenth of a pixel, a whole one without its '.0' (~6,000 of them in a full report)."""
    text = f"{value:.1f}"
    return "0" if text in ("0.0", "-0.0") else text[:-2] if text.endswith(".0") else text


@dataclass
class Axis:
    """One axis: `lo`..`hi` in data units mapped onto `length` pixels; `log` for ratios, times and sizes."""

    lo: float
    hi: float
    log: bool = False
    label: str = ""
    format_tick: Callable[[float], str] = field(default=lambda v: f"{v:g}")
    categories: Sequence[str] = ()  # categorical: value i sits at the centre of slot i
    unit_step: float = 0.0  # linear axis: ticks at powers of two of this (e.g. GiB) instead of 1-2-5
    binary: bool = False  # log axis: ticks at powers of two (bytes) instead of 1-2-5 per decade

    @classmethod
    def fit(cls, values: Sequence[float], *, log: bool = False, label: str = "", pad: float = 0.06,
            include_zero: bool = False, format_tick: Callable[[float], str] | None = None, binary: bool = False) -> Axis:
        """An axis spanning `values` with `pad` of the span either side (positive values only when log)."""
        vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        if not vals:
            vals = [1.0, 10.0] if log else [0.0, 1.0]
        lo, hi = min(vals), max(vals)
        if include_zero and not log:
            lo = min(lo, 0.0)
        if log:
            llo, lhi = math.log10(lo), math.log10(hi)
            span = max(lhi - llo, 0.3)
            mid = (llo + lhi) / 2 if lhi - llo < 0.3 else None
            if mid is not None:
                llo, lhi = mid - span / 2, mid + span / 2
            lo, hi = 10 ** (llo - pad * span), 10 ** (lhi + pad * span)
        else:
            span = (hi - lo) or abs(hi) or 1.0
            lo = lo if include_zero and lo == 0 else lo - pad * span
            hi = hi + pad * span
        return cls(lo, hi, log=log, label=label, format_tick=format_tick or (lambda v: f"{v:g}"), binary=binary)

    @classmethod
    def categorical(cls, categories: Sequence[str], label: str = "") -> Axis:
        return cls(-0.5, len(categories) - 0.5, label=label, categories=tuple(categories))

    def fraction(self, value: float) -> float:
        if self.log:
            value = max(value, self.lo * 1e-3)
            return (math.log10(value) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return (value - self.lo) / ((self.hi - self.lo) or 1.0)

    def candidate_ticks(self) -> list[float]:
        """Round values inside the axis: 1-2-5 per decade on a log axis, a nice step on a linear one."""
        if self.categories:
            return [float(i) for i in range(len(self.categories))]
        ticks: list[float]
        if self.log and self.binary:  # sizes in bytes: powers of two read as round KiB/MiB/GiB
            k0, k1 = math.floor(math.log2(self.lo)), math.ceil(math.log2(self.hi))
            every = max(1, math.ceil((k1 - k0) / 8))
            ticks = [2.0**k for k in range(k0 - k0 % every, k1 + 1, every)]
        elif self.log:
            k0, k1 = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
            decades = math.log10(self.hi / self.lo)
            mults: tuple[float, ...] = (1,) if decades > 4 else (1, 2, 5) if decades > 1.2 else (1, 1.5, 2, 3, 5, 7)
            ticks = [m * 10.0**k for k in range(k0, k1 + 1) for m in mults]
        elif self.unit_step:  # steps that are round in the display unit (GiB for bytes)
            raw = (self.hi - self.lo) / 6 / self.unit_step
            step = self.unit_step * next(m for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if m >= raw)
            ticks = [i * step for i in range(math.ceil(self.lo / step), int(self.hi / step) + 1)]
        else:
            raw = (self.hi - self.lo) / 6
            mag = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
            step = next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)
            start = math.ceil(self.lo / step) * step
            ticks = [start + i * step for i in range(int((self.hi - start) / step) + 1)]
            ticks = [0.0 if abs(t) < step * 1e-9 else t for t in ticks]
        return [t for t in ticks if self.lo <= t <= self.hi]

    def tick_text(self, value: float) -> str:
        if self.categories:
            return self.categories[round(value)]
        return self.format_tick(value)


def spaced_labels(ticks: Sequence[tuple[float, str]], *, horizontal: bool, font_px: float = TICK_FONT_PX,
                  min_gap: float = MIN_LABEL_GAP) -> list[tuple[float, str]]:
    """Ticks (pixel position, text) whose label boxes keep `min_gap` pixels between neighbours.

    Horizontal labels (on an x axis, centred on the tick) occupy their width; labels beside a
    y axis occupy one line of height. Walks in pixel order, keeping a label only if it clears the
    last one kept: the first and the round decades survive, the in-betweens thin out."""
    kept: list[tuple[float, str]] = []
    last_end = -math.inf
    for pos, text in sorted(ticks):
        if not text:
            continue
        half = (label_width(text, font_px) if horizontal else font_px * 1.2) / 2
        if pos - half >= last_end + min_gap:
            kept.append((pos, text))
            last_end = pos + half
    return kept


@dataclass
class Chart:
    """A plot area of `width` x `height` pixels plus margins, with marks added in data coordinates."""

    x: Axis
    y: Axis
    title: str
    aria: str  # what the plot shows, for screen readers and for the browser test
    width: float = 380
    height: float = 230
    left: float = 70
    right: float = 14
    top: float = 30
    bottom: float = 42
    marks: list[str] = field(default_factory=list)
    legend: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, colour, text)
    x_label_rotate: bool = False
    _y_title_x: float = field(default=13.0, init=False, repr=False)

    def __post_init__(self) -> None:
        # room for the widest y tick label and the rotated axis title beside it
        widest = max((label_width(self.y.tick_text(t)) for t in self.y.candidate_ticks()), default=0.0)
        self.left = max(self.left, widest + 30)
        categories = self.x.categories
        if categories and any(label_width(c) > self.width / len(categories) - MIN_LABEL_GAP for c in categories):
            self.x_label_rotate = True
        if self.x_label_rotate and categories:
            # a label turned 40 degrees reaches cos(40) of its length left of its tick: the first
            # categories' labels must not leave the picture
            slot = self.width / len(categories)
            reach = max(label_width(c) * 0.77 - (i + 0.5) * slot for i, c in enumerate(categories))
            self.left = max(self.left, reach + 4)
        self._y_title_x = max(13.0, self.left - widest - 17)  # beside its tick labels, however wide the margin

    def px(self, value: float) -> float:
        return self.left + self.x.fraction(value) * self.width

    def py(self, value: float) -> float:
        return self.top + self.height - self.y.fraction(value) * self.height

    # ---- marks ----------------------------------------------------------------------
    def point(self, x: float, y: float, colour: str, tip: str, *, r: float = 4.2, shape: str = "circle",
              outline: str = "", row: int | None = None, what: str = "") -> None:
        """A marker; `outline` rings it in a second colour (a verdict other than agree on a series point). With `row`
        (a reconciliation's row in the page's table, html.py's anchor rec-<row>) the mark carries data-rec instead of
        its <title>: the page's script makes the tooltip from that row, led by `what` where given (the mark's label in
        its plot; else the row's name), ~0.3 MB less over the plots."""
        cx, cy = self.px(x), self.py(y)

        def tail(tag: str) -> str:  # the mark's end: its tooltip, or the row the page's script makes it from
            label = f' data-what="{escape(what)}"' if what else ""
            return f' data-rec="{row}"{label}/>' if row is not None else f"><title>{escape(tip)}</title></{tag}>"
        if outline:
            self.marks.append(f'<circle class="ring" cx="{_n(cx)}" cy="{_n(cy)}" r="{r + 2.6}" style="stroke:{outline}"/>')
        if shape == "diamond":
            d = r * 1.25
            self.marks.append(f'<path class="mark" d="M{_n(cx)},{_n(cy - d)}l{_n(d)},{_n(d)}l{_n(-d)},{_n(d)}l{_n(-d)},{_n(-d)}z" '
                              f'fill="{colour}"' + tail("path"))
        elif shape == "triangle":
            d = r * 1.3
            self.marks.append(f'<path class="mark" d="M{_n(cx)},{_n(cy - d)}l{_n(d)},{_n(1.7 * d)}h{_n(-2 * d)}z" '
                              f'fill="{colour}"' + tail("path"))
        elif shape == "wedge":  # a triangle pointing down
            d = r * 1.3
            self.marks.append(f'<path class="mark" d="M{_n(cx)},{_n(cy + d)}l{_n(d)},{_n(-1.7 * d)}h{_n(-2 * d)}z" '
                              f'fill="{colour}"' + tail("path"))
        elif shape == "square":
            d = r * 0.95
            self.marks.append(f'<rect class="mark" x="{_n(cx - d)}" y="{_n(cy - d)}" width="{_n(2 * d)}" height="{_n(2 * d)}" '
                              f'fill="{colour}"' + tail("rect"))
        elif shape == "ring":
            self.marks.append(f'<circle class="ring" cx="{_n(cx)}" cy="{_n(cy)}" r="{r}" style="stroke:{colour}"'
                              + tail("circle"))
        elif shape == "cross":  # a filled plus sign
            self.marks.append(f'<path class="mark" d="{_cross_path(cx, cy, r * 1.25)}" fill="{colour}"'
                              + tail("path"))
        else:
            self.marks.append(f'<circle cx="{_n(cx)}" cy="{_n(cy)}" r="{r}" fill="{colour}"' + tail("circle"))

    def line(self, points: Sequence[tuple[float, float]], colour: str, *, dash: str = "", width: float = 1.6,
             tip: str = "") -> None:
        if len(points) < 2:
            return
        path = " ".join(f"{_n(self.px(x))},{_n(self.py(y))}" for x, y in points)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        title = f"<title>{escape(tip)}</title>" if tip else ""
        self.marks.append(f'<polyline class="series" clip-path="url(#CLIP)" points="{path}" stroke="{colour}" '
                          f'stroke-width="{width}"{dashed}>{title}</polyline>')

    def whiskers(self, spans: Sequence[tuple[float, float, float]]) -> None:
        """Vertical segments (x, y0, y1), all in one path styled by svg .whisker (style.css): a scatter plot's ~500
        tolerance whiskers as one element, not one titled polyline each (0.2 MB); the points' tooltips say them."""
        if spans:
            d = "".join(f"M{_n(self.px(x))},{_n(self.py(y0))}V{_n(self.py(y1))}" for x, y0, y1 in spans)
            self.marks.append(f'<path class="whisker" clip-path="url(#CLIP)" d="{d}"/>')

    def hline(self, y: float, colour: str, text: str, *, dash: str = "5 4") -> None:
        self.line([(self.x.lo, y), (self.x.hi, y)], colour, dash=dash, tip=text)

    def vline(self, x: float, colour: str, text: str, *, dash: str = "3 3") -> None:
        self.line([(x, self.y.lo), (x, self.y.hi)], colour, dash=dash, tip=text)

    def bar(self, x0: float, x1: float, y0: float, y1: float, colour: str, tip: str, *, opacity: float = 1.0) -> None:
        left, right = sorted((self.px(x0), self.px(x1)))
        top, bottom = sorted((self.py(y1), self.py(y0)))
        alpha = f' fill-opacity="{opacity}"' if opacity < 1 else ""
        self.marks.append(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(max(right - left, 0.8))}" '
                          f'height="{_n(max(bottom - top, 0.8))}" fill="{colour}"{alpha}><title>{escape(tip)}</title></rect>')

    def key(self, kind: str, colour: str, text: str) -> None:
        """A legend entry: kind is 'dot', 'line', 'dash', 'ring', 'diamond', 'triangle', 'wedge', 'square', 'cross' or
        'box'."""
        if (kind, colour, text) not in self.legend:
            self.legend.append((kind, colour, text))

    # ---- output ---------------------------------------------------------------------
    def _legend_rows(self) -> list[list[tuple[str, str, str, float]]]:
        rows: list[list[tuple[str, str, str, float]]] = [[]]
        used, full = 0.0, self.left + self.width
        for kind, colour, text in self.legend:
            w = 22 + label_width(text, 11)
            if rows[-1] and used + w > full:
                rows.append([])
                used = 0.0
            rows[-1].append((kind, colour, text, used))
            used += w + 10
        return [r for r in rows if r]

    def svg(self, clip_id: str) -> Markup:
        legend_rows = self._legend_rows()
        x_ticks = [(self.px(t), self.x.tick_text(t)) for t in self.x.candidate_ticks()]
        y_ticks = [(self.py(t), self.y.tick_text(t)) for t in self.y.candidate_ticks()]
        rotated = self.x_label_rotate
        # a label turned 40 degrees reaches sin(40) of its length below the axis
        x_room = max((label_width(t) for _, t in x_ticks), default=0) * 0.65 if rotated else 0
        # wide enough for the title (bold 12 px sans, up to ~7.8 px a character) and the legend
        total_w = max(self.left + self.width + self.right, self.left + len(self.title) * 7.8 + 4,
                      max((off + 22 + label_width(t, 11) for row in legend_rows for _, _, t, off in row), default=0))
        legend_h = 16 * len(legend_rows)
        total_h = self.top + self.height + self.bottom + x_room + legend_h
        out = [(f'<svg class="plot" viewBox="0 0 {_n(total_w)} {_n(total_h)}" width="{_n(total_w)}" '
                f'height="{_n(total_h)}" role="img" aria-label="{escape(self.aria)}">'),
               f'<text class="plot-title" x="{_n(self.left)}" y="16">{escape(self.title)}</text>',
               (f'<clipPath id="{clip_id}"><rect x="{_n(self.left)}" y="{_n(self.top)}" width="{_n(self.width)}" '
                f'height="{_n(self.height)}"/></clipPath>'),
               f'<rect class="frame" x="{_n(self.left)}" y="{_n(self.top)}" width="{_n(self.width)}" height="{_n(self.height)}"/>']
        base = self.top + self.height
        # the grid as one path of segments: a tall plot has a hundred lines of it
        grid = [f"M{_n(pos)},{_n(self.top)}V{_n(base)}" for pos, _ in x_ticks if not self.x.categories]
        grid += [f"M{_n(self.left)},{_n(pos)}H{_n(self.left + self.width)}" for pos, _ in y_ticks]
        if grid:
            out.append(f'<path class="grid" d="{"".join(grid)}"/>')
        if rotated:  # a rotated label occupies one line of height along the axis
            for pos, text in spaced_labels(x_ticks, horizontal=False):
                out.append(f'<text class="tick" transform="translate({_n(pos + 3.5)} {_n(base + 8)}) rotate(-40)" '
                           f'text-anchor="end">{escape(text)}</text>')
        else:
            for pos, text in spaced_labels(x_ticks, horizontal=True):
                out.append(f'<text class="tick" x="{_n(pos)}" y="{_n(base + 14)}" text-anchor="middle">{escape(text)}</text>')
        for pos, text in spaced_labels(y_ticks, horizontal=False):
            out.append(f'<text class="tick" x="{_n(self.left - 5)}" y="{_n(pos + 3.5)}" text-anchor="end">{escape(text)}</text>')
        out += [m.replace("url(#CLIP)", f"url(#{clip_id})") for m in self.marks]
        if self.x.label:
            out.append(f'<text class="axis" x="{_n(self.left + self.width / 2)}" y="{_n(base + 30 + x_room)}" '
                       f'text-anchor="middle">{escape(self.x.label)}</text>')
        if self.y.label:
            out.append(f'<text class="axis" transform="translate({_n(self._y_title_x)} {_n(self.top + self.height / 2)}) rotate(-90)" '
                       f'text-anchor="middle">{escape(self.y.label)}</text>')
        y0 = base + self.bottom + x_room + 4
        for i, row in enumerate(legend_rows):
            y = y0 + 16 * i
            for kind, colour, text, offset in row:
                x = offset + 4
                out.append(_legend_glyph(kind, colour, x, y))
                out.append(f'<text class="legend-text" x="{_n(x + 20)}" y="{_n(y + 4)}">{escape(text)}</text>')
        out.append("</svg>")
        return Markup("\n".join(out))


def _legend_glyph(kind: str, colour: str, x: float, y: float) -> str:
    if kind in ("line", "dash"):
        dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
        return f'<line x1="{_n(x)}" y1="{_n(y)}" x2="{_n(x + 16)}" y2="{_n(y)}" stroke="{colour}" stroke-width="1.8"{dash}/>'
    if kind == "box":
        return f'<rect x="{_n(x + 2)}" y="{_n(y - 5)}" width="12" height="10" fill="{colour}"/>'
    if kind == "ring":
        return f'<circle class="ring" cx="{_n(x + 8)}" cy="{_n(y)}" r="4" style="stroke:{colour}"/>'
    if kind == "triangle":
        return f'<path d="M{_n(x + 8)},{_n(y - 5)}l5,8.5h-10z" fill="{colour}"/>'
    if kind == "wedge":
        return f'<path d="M{_n(x + 8)},{_n(y + 5)}l5,-8.5h-10z" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{_n(x + 4)}" y="{_n(y - 4)}" width="8" height="8" fill="{colour}"/>'
    if kind == "diamond":
        return f'<path d="M{_n(x + 8)},{_n(y - 5)}l5,5l-5,5l-5,-5z" fill="{colour}"/>'
    if kind == "cross":
        return f'<path d="{_cross_path(x + 8, y, 5)}" fill="{colour}"/>'
    return f'<circle cx="{_n(x + 8)}" cy="{_n(y)}" r="4" fill="{colour}"/>'


def _cross_path(cx: float, cy: float, d: float) -> str:
    """A plus sign of half-size d and arm width 2d/3, as one closed path."""
    t = d / 3
    return (f"M{_n(cx - t)},{_n(cy - d)}h{_n(2 * t)}v{_n(d - t)}h{_n(d - t)}v{_n(2 * t)}h{_n(t - d)}v{_n(d - t)}"
            f"h{_n(-2 * t)}v{_n(t - d)}h{_n(t - d)}v{_n(-2 * t)}h{_n(d - t)}z")

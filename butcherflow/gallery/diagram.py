"""The data flow of a compiled block, drawn as an SVG written by hand (no graphviz binary).

The block's torch.fx graph is read back into the integrator's terms: one box per field call
(`k2 = field(y2)`), one box per weighted sum with its coefficients (`y_next = y + 1/6·k1 + ...`;
the chain of `torch.add` nodes that computes it in place is folded into one box), boxes for other
modules (a stage gate), and the input and output. Coefficient arithmetic (learned scalars, gate
outputs) becomes the text of the sums that use it.

Layout: boxes in one column in program order (the order of `block.code`); an edge between
neighbours is a straight arrow, a longer edge runs in a lane beside the column: states (the
input and the sums) on the left, field outputs on the right. Edges from one source share a lane,
like a bus, so a state reused by every stage reads as one line with branches.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from html import escape
from typing import Any, Literal, final

import torch
import torch.fx as fx
from torch import nn

from ..nn import Field

Kind = Literal["input", "field", "module", "sum", "op", "output"]

CHAR = 7.2  # px per character of 12 px monospace text
LINE = 15  # px per text line
GAP = 20  # px between boxes
LANE = 13  # px between lanes
WRAP = 64  # characters per line of a sum's text
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


@final
@dataclass(frozen=True)
class Box:
    """One drawn node: `lines` of text; `target` is the called module (fields and modules)."""

    key: str
    kind: Kind
    lines: tuple[str, ...]
    target: str | None = None


@final
@dataclass(frozen=True)
class Diagram:
    """Boxes in program order, edges `(source, target)` as box indices, and the legend lines
    `(target, text)` for every called module."""

    boxes: tuple[Box, ...]
    edges: tuple[tuple[int, int], ...]
    legend: tuple[tuple[str, str], ...]

    @property
    def field_boxes(self) -> int:
        return sum(1 for box in self.boxes if box.kind == "field")


def number(value: float) -> str:
    """A coefficient as the exact fraction it rounds from, when there is a short one."""
    if value == int(value) and abs(value) < 1e6:
        text = str(int(value))
    else:
        fraction = Fraction(value).limit_denominator(10_000)
        exact = float(fraction) == value
        text = f"{fraction.numerator}/{fraction.denominator}" if exact else f"{value:.6g}"
    return text.replace("-", "−")


def _is_add(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target in (torch.add, operator.add)


def _is_mul(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is operator.mul


class _Reader:
    """Classifies the graph's nodes: vectors (states and stage outputs), coefficients, modules."""

    def __init__(self, program: fx.GraphModule) -> None:
        self.program = program
        self.nodes = list(program.graph.nodes)
        self.vector: dict[fx.Node, bool] = {}
        self.is_field: dict[fx.Node, bool] = {}
        for node in self.nodes:
            if node.op == "call_module":
                module = program.get_submodule(str(node.target))
                self.is_field[node] = isinstance(module, Field)
            self.vector[node] = self._vector(node)

    def _vector(self, node: fx.Node) -> bool:
        if node.op == "placeholder":
            return node.name != "ctx"
        if node.op == "call_module":
            # a module whose output is only unpacked (a gate's tuple) yields coefficients
            return self.is_field[node] or not all(
                u.op == "call_function" and u.target is operator.getitem for u in node.users
            )
        if node.op == "call_function":
            if node.target is operator.getitem:
                return False
            return any(self.vector.get(arg, False) for arg in node.all_input_nodes)
        return False

    def coefficient_text(self, value: Any, *, wrap: bool = False) -> str:
        """A scalar coefficient (constant, parameter, gate output, arithmetic on those)."""
        if isinstance(value, (int, float)):
            return number(float(value))
        if not isinstance(value, fx.Node):
            return str(value)
        if value.op == "call_function" and value.target in (operator.mul, torch.mul):
            a, b = value.args[0], value.args[1]
            if isinstance(a, (int, float)) and float(a) == -1.0:
                return "−" + self.coefficient_text(b, wrap=True)
            text = f"{self.coefficient_text(a, wrap=True)}·{self.coefficient_text(b, wrap=True)}"
            return text
        if value.op == "call_function" and value.target in (operator.add, torch.add):
            a, b = value.args[0], value.args[1]
            right = self.coefficient_text(b)
            text = (
                f"{self.coefficient_text(a)} − {right[1:]}"
                if right.startswith("−")
                else f"{self.coefficient_text(a)} + {right}"
            )
            return f"({text})" if wrap else text
        if value.op == "call_function" and value.target is operator.sub:
            right = self.coefficient_text(value.args[1], wrap=True)
            text = f"{self.coefficient_text(value.args[0])} − {right}"
            return f"({text})" if wrap else text
        if value.op == "call_function" and value.target is operator.neg:
            return "−" + self.coefficient_text(value.args[0], wrap=True)
        if value.op == "call_function" and value.target is operator.pow:
            return f"{self.coefficient_text(value.args[0], wrap=True)}^{value.args[1]}"
        return value.name

    def modules_behind(self, value: Any) -> set[fx.Node]:
        """The drawn non-field module nodes a coefficient depends on (a gate)."""
        if not isinstance(value, fx.Node):
            return set()
        if value.op == "call_module" and not self.vector[value]:
            return {value}
        found: set[fx.Node] = set()
        for arg in value.all_input_nodes:
            if not self.vector.get(arg, False):
                found |= self.modules_behind(arg)
        return found

    def is_sum(self, node: fx.Node) -> bool:
        return _is_add(node) and self.vector[node]

    def folded(self, node: fx.Node) -> bool:
        """A partial sum whose only use is the next add of the same chain (not drawn)."""
        users = list(node.users)
        return self.is_sum(node) and len(users) == 1 and self.is_sum(users[0])

    def is_term(self, node: fx.Node) -> bool:
        """`c * v` with v a vector and c a coefficient, used only inside sums."""
        if not (_is_mul(node) and self.vector[node]):
            return False
        a, b = node.args[0], node.args[1]
        vectors = [x for x in (a, b) if isinstance(x, fx.Node) and self.vector[x]]
        return len(vectors) == 1 and all(self.is_sum(u) for u in node.users)

    def terms(self, node: fx.Node) -> list[tuple[Any, fx.Node]]:
        """The (coefficient, vector) terms of a drawn sum, partial sums folded in."""
        a = node.args[0]
        b = node.args[1]
        alpha = node.kwargs.get("alpha", 1.0)
        left = (
            self.terms(a)
            if isinstance(a, fx.Node) and self.is_sum(a) and self.folded(a)
            else self._term(a, 1.0)
        )
        return [*left, *self._term(b, alpha)]

    def _term(self, value: Any, alpha: Any) -> list[tuple[Any, fx.Node]]:
        if not isinstance(value, fx.Node):
            return []
        if self.is_term(value):
            a, b = value.args[0], value.args[1]
            vector, coefficient = (a, b) if isinstance(a, fx.Node) and self.vector[a] else (b, a)
            assert isinstance(vector, fx.Node)
            return [(coefficient if alpha == 1.0 else (alpha, coefficient), vector)]
        return [(alpha, value)]


def _sum_text(name: str, reader: _Reader, terms: Sequence[tuple[Any, fx.Node]]) -> list[str]:
    parts: list[str] = []
    for coefficient, vector in terms:
        if isinstance(coefficient, tuple):
            text = "·".join(reader.coefficient_text(c, wrap=True) for c in coefficient)
        else:
            text = reader.coefficient_text(coefficient, wrap=True)
        if text == "1":
            parts.append(f"+ {vector.name}")
        elif text.startswith("−"):
            magnitude = text[1:]
            parts.append(f"− {vector.name}" if magnitude == "1" else f"− {magnitude}·{vector.name}")
        else:
            parts.append(f"+ {text}·{vector.name}")
    first = parts[0][2:] if parts and parts[0].startswith("+ ") else (parts[0] if parts else "")
    pieces = [f"{name} = {first}", *parts[1:]]
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1]) + 1 + len(piece) <= WRAP:
            lines[-1] += " " + piece
        else:
            lines.append(piece if not lines else "    " + piece)
    return lines


def read_block(program: fx.GraphModule) -> Diagram:
    """The diagram of a compiled block's program (`block.program`).

    **Arguments:**

    - `program`: the torch.fx `GraphModule` of a `CompiledBlock`.

    **Returns:** a `Diagram` with one `"field"` box per field call of the program.
    """
    reader = _Reader(program)
    boxes: list[Box] = []
    index: dict[fx.Node, int] = {}
    edges: list[tuple[int, int]] = []
    calls: dict[str, int] = {}

    def connect(sources: Iterable[fx.Node], target: int) -> None:
        for source in sources:
            if source in index and (index[source], target) not in edges:
                edges.append((index[source], target))

    for node in reader.nodes:
        vector_args = [a for a in node.all_input_nodes if reader.vector.get(a, False)]
        if node.op == "placeholder" and reader.vector[node]:
            index[node] = len(boxes)
            boxes.append(Box(node.name, "input", (f"{node.name} (input)",)))
        elif node.op == "call_module":
            target = str(node.target)
            calls[target] = calls.get(target, 0) + 1
            shown = ", ".join(a.name for a in vector_args)
            kind: Kind = "field" if reader.is_field[node] else "module"
            outputs = node.name
            if not reader.vector[node]:  # a tuple unpacked by getitem: name its parts
                outputs = ", ".join(u.name for u in node.users)
            index[node] = len(boxes)
            boxes.append(Box(node.name, kind, (f"{outputs} = {target}({shown})",), target))
            connect(vector_args, index[node])
        elif reader.is_sum(node) and not reader.folded(node):
            terms = reader.terms(node)
            index[node] = len(boxes)
            boxes.append(Box(node.name, "sum", tuple(_sum_text(node.name, reader, terms))))
            connect([v for _, v in terms], index[node])
            gates: set[fx.Node] = set()
            for coefficient, _ in terms:
                for c in coefficient if isinstance(coefficient, tuple) else (coefficient,):
                    gates |= reader.modules_behind(c)
            connect(sorted(gates, key=reader.nodes.index), index[node])
        elif (
            node.op == "call_function"
            and reader.vector[node]
            and not (reader.is_sum(node) or reader.is_term(node))
        ):
            name = getattr(node.target, "__name__", str(node.target))
            shown = ", ".join(a.name for a in vector_args)
            index[node] = len(boxes)
            boxes.append(Box(node.name, "op", (f"{node.name} = {name}({shown})",)))
            connect(vector_args, index[node])
        elif node.op == "output":
            result = node.args[0]
            boxes.append(Box("output", "output", ("output",)))
            if isinstance(result, fx.Node):
                connect([result], len(boxes) - 1)
    legend = tuple(
        (target, _describe(program.get_submodule(target), calls[target])) for target in calls
    )
    return Diagram(tuple(boxes), tuple(edges), legend)


def _describe(module: nn.Module, calls: int) -> str:
    params = sum(p.numel() for p in module.parameters() if p.requires_grad)
    what = f"{module.name} field" if isinstance(module, Field) else type(module).__name__
    shared = f", one module shared by all {calls} calls" if calls > 1 else ""
    return f"{what}: {params:,} parameters{shared}"


# -- drawing ---------------------------------------------------------------------------------


def _size(box: Box) -> tuple[float, float]:
    width = max(len(line) for line in box.lines) * CHAR + 20
    return max(width, 70.0), LINE * len(box.lines) + 11


def _lanes(spans: list[tuple[int, int, int]]) -> dict[int, int]:
    """Greedy lane colouring of edge spans `(start, end, source)`: spans of different sources
    that overlap get different lanes; spans of one source may share a lane (a bus)."""
    lanes: list[list[tuple[int, int, int]]] = []
    chosen: dict[int, int] = {}
    for number_, (start, end, source) in sorted(
        enumerate(spans), key=lambda item: (item[1][2], item[1][0])
    ):
        for lane, taken in enumerate(lanes):
            if all(s == source or end <= a or start >= b for a, b, s in taken):
                taken.append((start, end, source))
                chosen[number_] = lane
                break
        else:
            lanes.append([(start, end, source)])
            chosen[number_] = len(lanes) - 1
    return chosen


Edge = tuple[int, int]


@final
@dataclass(frozen=True)
class _Layout:
    """Where `render_svg` puts things: box sizes and tops, the centre line, which side and lane
    each long edge runs in, the height at which it reaches its box, and a colour per field."""

    sizes: list[tuple[float, float]]
    tops: list[float]
    bottom: float
    half: float
    center: float
    right_edge: float
    side: dict[Edge, str]
    lane_of: dict[Edge, int]
    arrive_y: dict[Edge, float]
    colours: dict[str, str]


def _layout(diagram: Diagram, title: str) -> _Layout:
    sizes = [_size(box) for box in diagram.boxes]
    half = max(w for w, _ in sizes) / 2
    tops: list[float] = []
    y = 34.0 if title else 12.0
    for _, h in sizes:
        tops.append(y)
        y += h + GAP
    long_edges = [(s, t) for s, t in diagram.edges if t != s + 1]
    side = {
        (s, t): ("left" if diagram.boxes[s].kind in ("input", "sum", "op") else "right")
        for s, t in long_edges
    }
    lane_of: dict[Edge, int] = {}
    width_lanes = {"left": 0, "right": 0}
    for which in ("left", "right"):
        edges = [e for e in long_edges if side[e] == which]
        chosen = _lanes([(s, t, s) for s, t in edges])
        for i, edge in enumerate(edges):
            lane_of[edge] = chosen[i]
        width_lanes[which] = 1 + max(chosen.values(), default=-1)
    center = 16 + LANE * width_lanes["left"] + half
    colours: dict[str, str] = {}
    for target, _ in diagram.legend:
        colours[target] = PALETTE[len(colours) % len(PALETTE)]
    # arrival points: spread the long edges reaching one box on one side over its height
    arrivals: dict[tuple[int, str], list[Edge]] = {}
    for edge in long_edges:
        arrivals.setdefault((edge[1], side[edge]), []).append(edge)
    arrive_y: dict[Edge, float] = {}
    for (reached, _), reaching in arrivals.items():
        reaching.sort(key=lambda e: e[0])
        top, h = tops[reached], sizes[reached][1]
        for i, edge in enumerate(reaching):
            arrive_y[edge] = top + h * (i + 1) / (len(reaching) + 1)
    right_edge = center + half + 16 + LANE * width_lanes["right"]
    return _Layout(sizes, tops, y, half, center, right_edge, side, lane_of, arrive_y, colours)


def render_svg(diagram: Diagram, title: str = "") -> str:
    """The diagram as a standalone SVG document (no external resources)."""
    at = _layout(diagram, title)
    legend_top = at.bottom + 8
    legend_h = 20 * len(diagram.legend) + (8 if diagram.legend else 0)
    legend_w = max((len(t) + len(d) + 10 for t, d in diagram.legend), default=0) * CHAR + 40
    total_w = max(at.right_edge, legend_w, len(title) * 8.0 + 24)
    total_h = legend_top + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {total_w:.0f} {total_h:.0f}" '
        f'width="{total_w:.0f}" height="{total_h:.0f}" font-family="DejaVu Sans Mono, '
        f'Menlo, Consolas, monospace" font-size="12" role="img">',
        f"<title>{escape(title or 'data flow of the compiled block')}</title>",
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" '
        'fill="#555"/></marker></defs>',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    if title:
        out.append(
            f'<text x="12" y="20" font-size="13" font-weight="bold" fill="#222">'
            f"{escape(title)}</text>"
        )
    out += [_edge_path(diagram, at, edge) for edge in diagram.edges]
    for box, top, size in zip(diagram.boxes, at.tops, at.sizes, strict=True):
        out += _box_shapes(box, top, size, at)
    for i, (target, text) in enumerate(diagram.legend):
        yy = legend_top + 8 + 20 * i
        colour = at.colours[target]
        out.append(
            f'<rect x="12" y="{yy:.1f}" width="14" height="14" rx="2" fill="{colour}" '
            f'fill-opacity="0.16" stroke="{colour}" stroke-width="1.5"/>'
        )
        out.append(
            f'<text x="34" y="{yy + 11:.1f}" fill="#222">self.{escape(target)}: '
            f"{escape(text)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _edge_path(diagram: Diagram, at: _Layout, edge: Edge) -> str:
    """An edge: straight down to the next box, or out to its lane, along it and back in."""
    s, t = edge
    sizes, tops = at.sizes, at.tops
    if t == s + 1:
        x = at.center
        y1, y2 = tops[s] + sizes[s][1], tops[t]
        return (
            f'<path d="M{x:.1f},{y1:.1f} L{x:.1f},{y2 - 1:.1f}" stroke="#555" '
            f'fill="none" marker-end="url(#arrow)"/>'
        )
    sign = -1 if at.side[edge] == "left" else 1
    lane_x = at.center + sign * (at.half + 14 + LANE * at.lane_of[edge])
    x1 = at.center + sign * sizes[s][0] / 2
    x2 = at.center + sign * sizes[t][0] / 2
    y1 = tops[s] + sizes[s][1] / 2
    colour = at.colours.get(diagram.boxes[s].target or "", "#777")
    return (
        f'<path d="M{x1:.1f},{y1:.1f} H{lane_x:.1f} V{at.arrive_y[edge]:.1f} H{x2 + sign:.1f}" '
        f'stroke="{colour}" stroke-width="1.2" fill="none" opacity="0.85" '
        f'marker-end="url(#arrow)"/>'
    )


def _box_shapes(box: Box, top: float, size: tuple[float, float], at: _Layout) -> list[str]:
    """A box's outline (by kind: a field or module call, a sum, an op, the input or output)
    and its lines of text."""
    w, h = size
    x = at.center - w / 2
    place = f'x="{x:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}"'
    if box.kind == "field" or box.kind == "module":
        colour = at.colours[box.target or ""]
        css = "field-call" if box.kind == "field" else "module-call"
        dash = "" if box.kind == "field" else ' stroke-dasharray="4 2"'
        outline = (
            f'<rect class="{css}" {place} rx="4" fill="{colour}" fill-opacity="0.16" '
            f'stroke="{colour}" stroke-width="1.5"{dash}/>'
        )
    elif box.kind == "sum":
        outline = f'<rect class="sum" {place} rx="10" fill="#f6f6f6" stroke="#777"/>'
    elif box.kind == "op":
        outline = f'<rect class="op" {place} fill="#fff" stroke="#777" stroke-dasharray="2 2"/>'
    else:
        outline = f'<rect class="{box.kind}" {place} rx="{h / 2:.1f}" fill="#333"/>'
    fill = "#fff" if box.kind in ("input", "output") else "#111"
    shapes = [outline]
    for i, line in enumerate(box.lines):
        anchor = 'text-anchor="middle"' if len(box.lines) == 1 else ""
        tx = at.center if len(box.lines) == 1 else x + 10
        shapes.append(
            f'<text x="{tx:.1f}" y="{top + 17 + i * LINE:.1f}" fill="{fill}" {anchor} '
            f'xml:space="preserve">{escape(line)}</text>'
        )
    return shapes


def block_svg(program: fx.GraphModule, title: str = "") -> str:
    """`render_svg(read_block(program), title)`."""
    return render_svg(read_block(program), title)

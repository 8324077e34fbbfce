"""What a person sees on a page: the judgements of the tests that look (tests/ui/test_*_sight.py).

A ``hidden`` attribute, a class or a DOM node proves nothing about the screen: a
``display: flex`` rule paints a "hidden" panel, an absolutely positioned row with no
``top`` prints over a heading. These judgements ask the browser what it painted —
computed style, bounding boxes, and which element is hit at a point — the way a
person's eye would, and each returns the problems in words (an empty list: it
looks right), so a failing test says what is wrong where.

- :func:`painted` / :func:`unpainted`: an element is on screen (displayed, visible,
  with an area, and the element found at its centre is it or inside it), or not.
- :func:`only_painted`: of a set of panels, the active one is the only one on screen.
- :func:`overlapping`: no two visible blocks of a selector cover each other.
- :func:`sideways`: nothing makes the page scroll sideways.
- :func:`clipped`: no text cut off by an ``overflow: hidden`` box (an ellipsis is meant).
- :func:`looks_right`: the last three together; :func:`assert_looks_right` fails with them.
- :func:`match_reference`: a screenshot compared with a committed reference, the
  differing pixels saved as a picture when it does not match.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

# One description of an element for every message: tag, id, classes, and a bit of its text.
_DESCRIBE = """
const describe = (el) => {
  if (!el) return "nothing";
  let s = el.tagName.toLowerCase();
  if (el.id) s += "#" + el.id;
  for (const c of el.classList) s += "." + c;
  const text = (el.innerText || el.value || "").trim().replace(/\\s+/g, " ");
  return text ? `${s} "${text.slice(0, 40)}"` : s;
};
const shown = (el) => {
  const style = getComputedStyle(el);
  const box = el.getBoundingClientRect();
  return style.display !== "none" && style.visibility === "visible" && Number(style.opacity) > 0
    && box.width > 0 && box.height > 0;
};
"""

_PAINTED = (
    "(selector) => {"
    + _DESCRIBE
    + """
  const el = document.querySelector(selector);
  if (!el) return `${selector}: no such element`;
  if (!shown(el)) {
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    return `${selector}: not shown (display ${style.display}, visibility ${style.visibility}, `
      + `${Math.round(box.width)}x${Math.round(box.height)} px)`;
  }
  el.scrollIntoView({ block: "nearest", inline: "nearest" });
  const box = el.getBoundingClientRect();
  const x = Math.min(Math.max(box.left + box.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(box.top + Math.min(box.height, innerHeight) / 2, 0), innerHeight - 1);
  const hit = document.elementFromPoint(x, y);
  if (hit === null || !(el === hit || el.contains(hit))) {
    return `${selector}: covered at its centre (${Math.round(x)}, ${Math.round(y)}) by ${describe(hit)}`;
  }
  return null;
}"""
)

_UNPAINTED = (
    "(selector) => {"
    + _DESCRIBE
    + """
  const el = document.querySelector(selector);
  if (!el || !shown(el)) return null;
  const box = el.getBoundingClientRect();
  return `${selector} is on screen (${Math.round(box.width)}x${Math.round(box.height)} px at `
    + `${Math.round(box.left)}, ${Math.round(box.top)}) though it should not be: ${describe(el)}`;
}"""
)

_OVERLAPPING = (
    "(selector) => {"
    + _DESCRIBE
    + """
  const els = [...document.querySelectorAll(selector)].filter(shown);
  const out = [];
  for (let i = 0; i < els.length; i++) {
    for (let j = i + 1; j < els.length; j++) {
      const [a, b] = [els[i], els[j]];
      if (a.contains(b) || b.contains(a)) continue;
      const p = a.getBoundingClientRect(), q = b.getBoundingClientRect();
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 1 && h > 1) {
        out.push(`${describe(a)} and ${describe(b)} overlap by ${Math.round(w)}x${Math.round(h)} px`);
      }
    }
  }
  return out;
}"""
)

_SIDEWAYS = (
    "() => {"
    + _DESCRIBE
    + """
  const root = document.documentElement;
  if (root.scrollWidth <= root.clientWidth) return [];
  const out = [`the page scrolls sideways: ${root.scrollWidth} px wide in a ${root.clientWidth} px window`];
  // what runs past the edge and is not cut off by a box of its own inside the window
  const inside = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible" && up.getBoundingClientRect().right <= root.clientWidth + 1) return true;
    }
    return false;
  };
  const past = [...document.body.querySelectorAll("*")].filter(
    (el) => shown(el) && el.getBoundingClientRect().right > root.clientWidth + 1 && !inside(el));
  // the outermost offenders say where it comes from; their children only repeat it
  for (const el of past.filter((el) => !past.includes(el.parentElement)).slice(0, 5)) {
    out.push(`${describe(el)} reaches ${Math.round(el.getBoundingClientRect().right)} px`);
  }
  return out;
}"""
)

_CLIPPED = (
    "(root) => {"
    + _DESCRIBE
    + """
  const out = [];
  for (const el of document.querySelectorAll(`${root}, ${root} *`)) {
    if (!shown(el) || el.closest(".visually-hidden")) continue;
    const style = getComputedStyle(el);
    if (!["hidden", "clip"].includes(style.overflowX)) continue;
    if (style.textOverflow === "ellipsis") continue;
    if (!(el.innerText || "").trim()) continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      out.push(`${describe(el)}: text cut off (${el.scrollWidth} px of it in ${el.clientWidth} px)`);
    }
  }
  return out;
}"""
)


def painted(page: Any, selector: str) -> str | None:
    """Why the element ``selector`` is not on screen for a person (``None``: it is).
    It is scrolled into view first, as a person would scroll to it."""
    problem: str | None = page.evaluate(_PAINTED, selector)
    return problem


def unpainted(page: Any, selector: str) -> str | None:
    """Why the element ``selector`` is on screen though it should not be (``None``: it is not)."""
    problem: str | None = page.evaluate(_UNPAINTED, selector)
    return problem


def only_painted(page: Any, active: str, panels: list[str]) -> list[str]:
    """Of ``panels`` (selectors), ``active`` is painted and no other is."""
    problems = [painted(page, active)]
    problems += [unpainted(page, p) for p in panels if p != active]
    return [p for p in problems if p is not None]


def overlapping(page: Any, selector: str) -> list[str]:
    """Each pair of visible elements matched by ``selector`` (neither inside the other)
    whose boxes cover each other by more than a pixel each way."""
    found: list[str] = page.evaluate(_OVERLAPPING, selector)
    return found


def sideways(page: Any) -> list[str]:
    """Whether the page scrolls sideways, and the outermost elements past the window's edge."""
    found: list[str] = page.evaluate(_SIDEWAYS)
    return found


def clipped(page: Any, root: str = "body") -> list[str]:
    """Text under ``root`` cut off by an ``overflow: hidden`` box that shows no ellipsis."""
    found: list[str] = page.evaluate(_CLIPPED, root)
    return found


def looks_right(page: Any, blocks: list[str], root: str = "body") -> list[str]:
    """Every problem a person would see: ``blocks`` (selectors, each judged on its own)
    overlapping, sideways scrolling, clipped text."""
    problems = [p for selector in blocks for p in overlapping(page, selector)]
    return problems + sideways(page) + clipped(page, root)


def assert_looks_right(page: Any, where: str, blocks: list[str], root: str = "body") -> None:
    problems = looks_right(page, blocks, root)
    assert not problems, f"{where}:\n  " + "\n  ".join(problems)


# -- screenshots against references ---------------------------------------------------------

REFERENCES = Path(__file__).resolve().parents[1] / "ui" / "references"
ARTEFACTS = Path(os.environ.get("AGUI_ARTEFACTS", Path(__file__).resolve().parents[2] / "build"))
TOLERANCE = 0.005  # a ratio of the pixels: anti-aliasing may move, a block may not
CHANNEL_SLACK = 24  # a pixel differs when a channel moves by more than this


# Both pictures decoded and compared by the browser (a canvas each): no image library.
_COMPARE = """async ([now, before, slack]) => {
  const load = (src) => new Promise((ok, fail) => {
    const img = new Image();
    img.onload = () => ok(img);
    img.onerror = () => fail(new Error("not a PNG"));
    img.src = src;
  });
  const [a, b] = await Promise.all([load(now), load(before)]);
  if (a.width !== b.width || a.height !== b.height) {
    return { size: [a.width, a.height], before: [b.width, b.height] };
  }
  const pixels = (img) => {
    const c = new OffscreenCanvas(img.width, img.height);
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    return g.getImageData(0, 0, img.width, img.height);
  };
  const p = pixels(a), q = pixels(b);
  const out = new OffscreenCanvas(a.width, a.height);
  const g = out.getContext("2d");
  const diff = g.createImageData(a.width, a.height);
  let moved = 0;
  for (let i = 0; i < p.data.length; i += 4) {
    const d = Math.max(Math.abs(p.data[i] - q.data[i]), Math.abs(p.data[i + 1] - q.data[i + 1]),
                       Math.abs(p.data[i + 2] - q.data[i + 2]));
    const faded = (v) => 255 - (255 - v) * 0.3;
    if (d > slack) moved++;
    diff.data[i] = d > slack ? 255 : faded(p.data[i]);
    diff.data[i + 1] = d > slack ? 0 : faded(p.data[i + 1]);
    diff.data[i + 2] = d > slack ? 0 : faded(p.data[i + 2]);
    diff.data[i + 3] = 255;
  }
  g.putImageData(diff, 0, 0);
  const blob = await out.convertToBlob({ type: "image/png" });
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return { ratio: moved / (a.width * a.height), diff: btoa(binary) };
}"""


def match_reference(page: Any, name: str, *, mask: list[Any] | None = None) -> None:
    """Compare a screenshot of ``page`` with ``tests/ui/references/NAME``.

    The screenshot is kept under ``build/ui-shots/`` (``AGUI_ARTEFACTS``) either way;
    when more than :data:`TOLERANCE` of the pixels differ, a picture of the difference
    (the differing pixels red over a faded shot) is saved beside it and the test fails
    naming both. ``mask``: locators of what changes from run to run (a port, an id),
    painted over in one colour. ``AGUI_UPDATE_REFERENCES=1`` writes the reference."""
    shots = ARTEFACTS / "ui-shots"
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / name
    page.screenshot(path=str(shot), mask=mask or [], mask_color="#888888", animations="disabled")
    reference = REFERENCES / name
    if os.environ.get("AGUI_UPDATE_REFERENCES") == "1":
        REFERENCES.mkdir(parents=True, exist_ok=True)
        reference.write_bytes(shot.read_bytes())
        return
    assert reference.exists(), (
        f"no reference {reference} (make one with AGUI_UPDATE_REFERENCES=1; the shot: {shot})"
    )
    as_url = lambda path: "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()  # noqa: E731
    blank = page.context.new_page()
    try:
        found = blank.evaluate(_COMPARE, [as_url(shot), as_url(reference), CHANNEL_SLACK])
    finally:
        blank.close()
    assert "ratio" in found, (
        f"{name}: {found['size']} px now, {found['before']} px in the reference {reference}"
    )
    if found["ratio"] <= TOLERANCE:
        return
    diff = shots / f"{Path(name).stem}.diff.png"
    diff.write_bytes(base64.b64decode(found["diff"]))
    raise AssertionError(
        f"{name}: {found['ratio']:.2%} of the pixels differ from {reference} (tolerance "
        f"{TOLERANCE:.1%}); the shot: {shot}, the difference in red: {diff}"
    )

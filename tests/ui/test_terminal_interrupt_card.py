"""An interrupt's card shows its answer schema whole (issue 36, "smaller"): as indented
JSON wrapped in the card, never one line cut at the card's edge with an ellipsis."""

from __future__ import annotations

import io

import orjson
from rich.console import Console

from agui_tools.app._interrupts import Interrupt
from agui_tools.ui.terminal import TerminalUI

SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "whether the refund goes ahead"},
        "note": {"type": "string", "maxLength": 200},
    },
    "required": ["approved"],
}


def test_the_answer_schema_is_shown_whole_and_readable_at_80_columns() -> None:
    out = io.StringIO()
    ui = TerminalUI(Console(file=out, width=80, highlight=False))
    ui.show_interrupt(Interrupt(id="int-1", reason="approval", response_schema=SCHEMA))
    text = out.getvalue()
    assert "…" not in text, text
    # what the card shows of the schema, its frame taken off, is the schema
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if "answer schema" in line)
    column = lines[first].index("{")
    shown = [line[column:].rstrip(" │╯─") for line in lines[first:]]
    assert orjson.loads("\n".join(shown)) == SCHEMA
    assert '"maxLength": 200' in text  # one member a line

"""The case catalogue: what ``agui-tools check`` asks an agent, and how it judges the answer.

Sections, in the order they run: ``input`` (how the agent meets good, bad and
unusual run input), ``lifecycle`` (the shape of its runs), ``frontend`` (the
frontend-tool round trip), ``history`` (a continuation that leaves a call
unanswered), ``interrupts`` (when the agent interrupts), ``transport`` (the
HTTP + SSE binding, the binary binding and the resumable extension when the
agent offers them). Cases
marked ``late`` run after all others, because they judge every stream the
others received. Each section is a module registering its cases in
:data:`~agui_tools.check._catalogue.CASES`; importing them here, in this order,
is the catalogue's order.
"""

from __future__ import annotations

from importlib import import_module
from typing import Final

from ._catalogue import CASES, PAGES, Case

__all__ = [
    "CASES",
    "DEFAULT_INTERRUPT_PROMPT",
    "PAGES",
    "SECTIONS",
    "Case",
    "basic_run",
    "sample_payload",
]

SECTION_MODULES: Final = (
    "_cases_input",
    "_cases_frontend",
    "_cases_interrupts",
    "_cases_transport",
    "_cases_resumable",
)
"""The section modules in the order the sections run: each registers its cases on import,
so this order (not the import sorter's) is the catalogue's."""
for _module in SECTION_MODULES:
    import_module(f"{__package__}.{_module}")

SECTIONS: Final = tuple(dict.fromkeys(c.section for c in CASES))

from ._cases_input import basic_run  # noqa: E402 (after the sections registered, in order)
from ._cases_interrupts import DEFAULT_INTERRUPT_PROMPT, sample_payload  # noqa: E402

"""The case catalogue, in run order: ``input``, ``lifecycle``, ``frontend``, ``history``,
``interrupts``, ``transport``; ``late`` cases run last, judging every stream received.

Each section module registers its cases in :data:`~agui_tools.check._catalogue.CASES`;
``transport`` includes the binary binding and the resumable extension when offered;
importing them here, in this order, is the catalogue's order.
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
"""The report's sections, in the order their cases run."""

from ._cases_input import basic_run  # noqa: E402 (after the sections registered, in order)
from ._cases_interrupts import DEFAULT_INTERRUPT_PROMPT, sample_payload  # noqa: E402

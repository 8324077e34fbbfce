"""What a signed receipt costs per decision (docs/receipts.md, "Cost").

Side by side in one process: the receipt's own parts — make and sign one
statement, verify one receipt (the agent's side) — and a whole decision in a
``Conversation`` (a run with one side-effecting call folded, the call approved
and executed, the next input made) without a signer and with one. Each figure
is the median of several rounds of the best-of-repeats in ``bench/harness.py``.

``python -m bench.receipts`` prints the Markdown table.
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from typing import Any

from agui_tools.agent import verify_receipt
from agui_tools.app import Driver, Keyring, Signer
from agui_tools.app._consent import UNAUTHENTICATED_USER
from agui_tools.app._conversation import Conversation
from agui_tools.app._tools import ToolSpec
from agui_tools.wire._canonical import canonical_hash

from .harness import Result, measure

BATCH = 200
ROUNDS = 5
ARGS = {"to": "IBAN DE89 3704 0044 0532 0130 00", "cents": 125000, "memo": "rent"}
TOOL = ToolSpec(
    "transfer",
    "Transfer money.",
    parameters={"type": "object", "properties": {"to": {"type": "string"}}},
    side_effects=True,
)


def _decision(signer: Signer | None) -> None:
    conv = Conversation(thread_id="t", tools=[TOOL], signer=signer)
    inp = conv.next_input(user="pay rent")
    ids = {"threadId": inp["threadId"], "runId": inp["runId"]}
    conv.receive_many(
        [
            {"type": "RUN_STARTED", **ids},
            {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "transfer"},
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": str(ARGS).replace("'", '"')},
            {"type": "TOOL_CALL_END", "toolCallId": "c1"},
            {"type": "RUN_FINISHED", **ids},
        ]
    )
    driver = Driver(conv)
    driver.end_run()
    driver.approve("c1")
    driver.execute("c1", lambda a: "done")
    conv.next_input(user="thanks")


def results() -> list[Result]:
    signer = Signer.generate()
    keys = Keyring.of(signer)
    digest = canonical_hash(ARGS)
    receipt = signer.sign(
        signer.statement(
            "approved",
            thread_id="t",
            principal=UNAUTHENTICATED_USER,
            tool_call_id="c1",
            arguments_hash=digest,
        )
    )
    now = datetime.now(UTC)

    def sign() -> None:
        for _ in range(BATCH):
            signer.sign(
                signer.statement(
                    "approved",
                    thread_id="t",
                    principal=UNAUTHENTICATED_USER,
                    tool_call_id="c1",
                    arguments_hash=canonical_hash(ARGS),
                )
            )

    def verify() -> None:
        for _ in range(BATCH):
            verify_receipt(receipt, keys=keys, thread_id="t", call_id="c1", arguments=ARGS, now=now)

    def plain() -> None:
        for _ in range(BATCH // 4):
            _decision(None)

    def signed() -> None:
        for _ in range(BATCH // 4):
            _decision(signer)

    cases: list[tuple[str, int, Any]] = [
        ("a decision in a Conversation, no signer", BATCH // 4, plain),
        ("a decision in a Conversation, signed receipt", BATCH // 4, signed),
        ("make + sign one receipt", BATCH, sign),
        ("verify one receipt (agent side)", BATCH, verify),
    ]
    rounds: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(ROUNDS):
        for name, count, fn in cases:  # interleaved, so load hits every case alike
            rounds[name].append(measure(name, count, fn, repeats=3).seconds / count)
    return [Result(name, 1, statistics.median(rounds[name])) for name, _, _ in cases]


def report(found: list[Result]) -> str:
    base = found[0].seconds
    rows = [
        "| per decision | µs | vs a decision without receipts |",
        "|---|---:|---:|",
    ]
    for r in found:
        rows.append(f"| {r.name} | {r.seconds * 1e6:,.0f} | {r.seconds / base:.2f}× |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(report(results()))

"""The consumer pipeline, rule by rule: one or more cases per consumer-binding
rule of ``spec/RULES.md``, in that file's test notation (see :mod:`tests.helpers.dsl`).

Every case id starts with its rule id, so ``pytest -k CHUNK-11`` runs one
rule's cases; :func:`cases_by_rule` lists rule → case ids for the docs.

Verdicts: ``"pass"`` — consumed, and quiet (no warning at all unless the case
names one in ``also_warn``); ``("fail", RULE)`` — rejected under RULE (or one
of several acceptable IDs where two rows of the index state the same rule, e.g.
``TEXT-8`` and ``STREAM-2``) on the marked event, or the last one;
``("warn", RULE)`` — consumed, with a RULE warning and nothing else.

The "beyond the official client" checks (TOOL-8, TOOL-10, EVT-7, EVT-8, FE-2,
FE-3, FE-5, SUB-4, SUB-14, TEXT-3) appear twice through :func:`beyond`: a
warning by default and a violation under ``strict=True``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.dsl import (
    ABSENT,
    ADELTA,
    ASNAP,
    CANCELLED,
    CUSTOM,
    DELTA,
    MC,
    ME,
    MK,
    MS,
    MSNAP,
    RAW,
    RE,
    REN,
    REV,
    RF,
    RMC,
    RME,
    RMK,
    RMS,
    RS,
    RST,
    SE,
    SF,
    SNAP,
    SS,
    STF,
    STS,
    TA,
    TE,
    TK,
    TR,
    TS,
    Args,
    CallMeta,
    Case,
    MsgMeta,
    Outcome,
    Text,
    That,
    X,
    assistant,
    beyond,
    by_rule,
    case,
    check_case,
    codes,
    interrupt,
    run_case,
    run_input,
    success,
)

# acceptable rule ids where the index states one rule in two rows
TEXT_REOPEN = ("TEXT-8", "STREAM-2")
TEXT_NOT_OPEN = ("TEXT-8", "STREAM-3")
TEXT_LEFT_OPEN = ("TEXT-8", "STREAM-4")
NULL_TAG = "SUB-1"  # "MUST NOT be spelled as null" — the specific rule (EVT-5 is the general one)

FRONTEND = run_input(tools=["confirm_order"])
TEXT_PART = {"type": "text", "text": "Invoice attached."}
DOC_PART = {
    "type": "document",
    "source": {"type": "url", "value": "https://e.x/i.pdf", "mimeType": "application/pdf"},
    "metadata": {"title": "INV-2291"},
}


def _first(o: Outcome, code: str, ident_field: str, ident: str) -> dict[str, Any]:
    return o.of(ident_field, ident, code)[0]


# == 2. STREAM ======================================================================

STREAM = [
    case(
        "STREAM-1",
        "call-with-zero-args",
        [RS(), TS("c1"), TE("c1"), RF()],
        types="RS TS TE RF",
        status=["success"],
        pending=[["c1"]],
    ),
    case(
        "STREAM-1",
        "message-triad",
        [RS(), MS("m1"), MC("m1", "Hello, "), MC("m1", "world."), ME("m1"), RF()],
        types="RS MS MC MC ME RF",
        checks=[Text("m1", "Hello, world.")],
    ),
    case(
        "STREAM-1",
        "reasoning-message-triad",
        [RS(), RMS("r1"), RMC("r1", "hm"), RME("r1"), RF()],
        types="RS RMS RMC RME RF",
    ),
    case(
        "STREAM-2", "tool-call-opened-twice", [RS(), TS("c1"), TS("c1")], expect=("fail", "TOOL-20")
    ),
    case(
        "STREAM-2", "message-opened-twice", [RS(), MS("m1"), MS("m1")], expect=("fail", TEXT_REOPEN)
    ),
    case(
        "STREAM-2",
        "reasoning-message-opened-twice",
        [RS(), RMS("r1"), RMS("r1")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "STREAM-2",
        "message-and-call-ids-are-separate-namespaces",
        [RS(), MS("x"), TS("x"), TE("x"), ME("x"), RF()],
    ),
    case("STREAM-3", "args-without-start", [RS(), TA("c9", "{}")], expect=("fail", "TOOL-20")),
    case("STREAM-3", "end-without-start", [RS(), TE("c9")], expect=("fail", "TOOL-20")),
    case(
        "STREAM-3", "content-without-start", [RS(), MC("m9", "x")], expect=("fail", TEXT_NOT_OPEN)
    ),
    case(
        "STREAM-3",
        "reasoning-content-without-start",
        [RS(), RMC("r9", "x")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "STREAM-4",
        "call-open-at-run-finished",
        [RS(), TS("c1"), TA("c1", "{}"), RF()],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "STREAM-4",
        "message-open-at-run-finished",
        [RS(), MS("m1"), MC("m1", "x"), RF()],
        expect=("fail", TEXT_LEFT_OPEN),
    ),
    case(
        "STREAM-4",
        "reasoning-message-open-at-run-finished",
        [RS(), RMS("r1"), RF()],
        expect=("fail", "REAS-4"),
    ),
    case(
        "STREAM-5",
        "args-concatenate-in-arrival-order",
        [RS(), TS("c1", "search"), TA("c1", '{"q":'), TA("c1", '"x"}'), TE("c1"), RF()],
        checks=[Args("c1", '{"q":"x"}')],
    ),
    case(
        "STREAM-5",
        "text-concatenates-in-arrival-order",
        [RS(), MS("m1"), MC("m1", "a"), MC("m1", "b"), MC("m1", "c"), ME("m1"), RF()],
        checks=[Text("m1", "abc")],
    ),
    case(
        "STREAM-6",
        "call-opens-while-message-streams",
        [
            RS(),
            MS("m1"),
            TS("c1", pm="m1"),
            MC("m1", "a"),
            TA("c1", "{}"),
            TE("c1"),
            ME("m1"),
            RF(),
        ],
        types="RS MS TS MC TA TE ME RF",
    ),
    case(
        "STREAM-6",
        "messages-calls-reasoning-steps-interleave",
        [
            RS(),
            STS("plan"),
            MS("m1"),
            RMS("r1"),
            TS("c1"),
            TS("c2"),
            MC("m1", "a"),
            RMC("r1", "b"),
            TA("c2", "{}"),
            TA("c1", "{}"),
            STF("plan"),
            TE("c1"),
            ME("m1"),
            RME("r1"),
            TE("c2"),
            RF(),
        ],
    ),
    case(
        "STREAM-7",
        "standalone-events-inside-an-open-call",
        [
            RS(),
            TS("c1"),
            SNAP(),
            DELTA(),
            MSNAP(),
            ASNAP(),
            ADELTA(),
            CUSTOM(),
            RAW(),
            REV("c1", subtype="tool-call"),
            TA("c1", "{}"),
            TE("c1"),
            RF(),
        ],
        types="RS TS SNAP DELTA MSNAP ASNAP ADELTA CUSTOM RAW REV TA TE RF",
        checks=[Args("c1", "{}")],
    ),
    case(
        "STREAM-7",
        "standalone-events-inside-an-open-message",
        [RS(), MS("m1"), MC("m1", "a"), CUSTOM(), SNAP(), MC("m1", "b"), ME("m1"), RF()],
        checks=[Text("m1", "ab")],
    ),
]

# == 3. CHUNK =======================================================================

# events that arrive in a lane and close its chunk stream (CHUNK-11, second
# bullet): (name, events before the chunk stream opens, the closing events)
CLOSERS: list[tuple[str, list[Any], list[Any]]] = [
    ("text-message-start", [], [MS("m2")]),
    ("text-message-content", [MS("m2")], [MC("m2", "x")]),
    ("text-message-end", [MS("m2")], [ME("m2")]),
    ("tool-call-start", [], [TS("c9")]),
    ("tool-call-args", [TS("c9")], [TA("c9", "{}")]),
    ("tool-call-end", [TS("c9")], [TE("c9")]),
    ("tool-call-chunk", [], [TK("c9", "f", "{}")]),
    ("tool-call-result", [TS("c0"), TE("c0")], [TR("m9", "c0")]),
    ("step-started", [], [STS("plan")]),
    ("step-finished", [STS("plan")], [STF("plan")]),
    ("state-snapshot", [], [SNAP()]),
    ("state-delta", [], [DELTA()]),
    ("custom", [], [CUSTOM()]),
    ("reasoning-start", [], [RST("span1")]),
    ("reasoning-end", [RST("span1")], [REN("span1")]),
    ("reasoning-message-start", [], [RMS("r1")]),
    ("reasoning-message-content", [RMS("r1")], [RMC("r1", "hm")]),
    ("reasoning-message-end", [RMS("r1")], [RME("r1")]),
    ("reasoning-message-chunk", [], [RMK("r1", "hm")]),
]
# the four events that stand aside and close nothing
STAND_ASIDE: list[tuple[str, Any]] = [
    ("raw", RAW()),
    ("activity-snapshot", ASNAP()),
    ("activity-delta", ADELTA()),
    ("reasoning-encrypted-value", REV("m1")),
]

CHUNK = [
    case(
        "CHUNK-1",
        "tool-chunks-expand-to-start-args-end",
        [RS(), TK("c1", "f", '{"a":'), TK(delta="1}"), RF()],
        types="RS TS TA TA TE RF",
        checks=[Args("c1", '{"a":1}')],
    ),
    case(
        "CHUNK-1",
        "text-chunks-expand-to-start-content-end",
        [RS(), MK("m1", "Hi"), MK(delta=" there"), RF()],
        types="RS MS MC MC ME RF",
        checks=[Text("m1", "Hi there")],
    ),
    case(
        "CHUNK-1",
        "reasoning-chunks-expand-with-reasoning-role",
        [RS(), RMK("r1", "think"), RMK(delta="ing"), RF()],
        types="RS RMS RMC RMC RME RF",
        checks=[
            That("RMS role", lambda o: _first(o, "RMS", "messageId", "r1")["role"], "reasoning"),
        ],
    ),
    case(
        "CHUNK-2",
        "malformed-delta-on-a-chunk-rejected",
        [RS(), MK("m1", 5)],
        expect=("fail", "PROC-2"),
        types="RS",
    ),
    case(
        "CHUNK-2",
        "malformed-id-on-a-chunk-rejected",
        [RS(), TK(42, "f", "{}")],
        expect=("fail", "PROC-2"),
        types="RS",
    ),
    case(
        "CHUNK-2",
        "malformed-role-on-a-chunk-not-defaulted",
        [RS(), MK("m1", "x", role=7)],
        expect=("fail", "PROC-2"),
        types="RS",
    ),
    case(
        "CHUNK-2",
        "null-role-on-a-chunk-not-defaulted",
        [RS(), MK("m1", "x", role=None)],
        expect=("fail", "EVT-5"),
        types="RS",
    ),
    # an unrecognised role is judged the same whether sent as a chunk or a start (PROC-8)
    case(
        "CHUNK-2",
        "unknown-role-on-a-chunk-judged-like-on-a-start",
        [RS(), X(MK("m1", "x", role="narrator")), RF()],
        expect=("warn", "PROC-5"),
    ),
    case(
        "CHUNK-3",
        "explicit-args-end-the-shorthand",
        [RS(), TK("c1", "f", "{"), TA("c1", "}")],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "CHUNK-3",
        "explicit-end-on-a-chunk-opened-call",
        [RS(), TK("c1", "f", "{}"), TE("c1")],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "CHUNK-3",
        "explicit-end-on-a-chunk-opened-message",
        [RS(), MK("m1", "a"), ME("m1")],
        expect=("fail", TEXT_NOT_OPEN),
    ),
    case(
        "CHUNK-3",
        "explicit-content-ends-the-text-shorthand",
        [RS(), MK("m1", "a"), MC("m1", "b")],
        expect=("fail", TEXT_NOT_OPEN),
    ),
    case(
        "CHUNK-3",
        "chunk-cannot-continue-an-explicitly-opened-message",
        [RS(), MS("m1"), MK("m1", "x")],
        expect=("fail", TEXT_REOPEN),
    ),
    case(
        "CHUNK-3",
        "chunk-cannot-continue-an-explicitly-opened-call",
        [RS(), TS("c1", "f"), TK("c1", "f", "{}")],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "CHUNK-3",
        "nameless-chunk-cannot-continue-an-explicitly-opened-call",
        [RS(), TS("c1", "f"), TK("c1", delta="{}")],
        expect=("fail", ("CHUNK-3", "CHUNK-6", "TOOL-20")),
    ),
    case(
        "CHUNK-4",
        "first-text-chunk-without-message-id",
        [RS(), MK(delta="hi")],
        expect=("fail", "CHUNK-4"),
    ),
    case(
        "CHUNK-4",
        "first-text-chunk-with-role-but-no-id",
        [RS(), MK(role="assistant", delta="hi")],
        expect=("fail", "CHUNK-4"),
    ),
    case(
        "CHUNK-4",
        "absent-role-on-first-chunk-means-assistant",
        [RS(), MK("m1", "a"), MK("m1", "b", role="assistant"), RF()],
        checks=[Text("m1", "ab")],
    ),
    case(
        "CHUNK-5",
        "first-reasoning-chunk-without-message-id",
        [RS(), RMK(delta="hm")],
        expect=("fail", "CHUNK-5"),
    ),
    case(
        "CHUNK-6",
        "first-tool-chunk-without-name",
        [RS(), TK("c1", delta="{}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-6",
        "first-tool-chunk-without-id",
        [RS(), TK(name="f", delta="{}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-6",
        "first-tool-chunk-with-neither",
        [RS(), TK(delta="{}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-7",
        "no-message-id-invented",
        [RS(), MK(delta="hi")],
        expect=("fail", "CHUNK-4"),
        types="RS",
    ),
    case(
        "CHUNK-7",
        "no-tool-call-id-invented",
        [RS(), TK(name="f", delta="{}")],
        expect=("fail", "CHUNK-6"),
        types="RS",
    ),
    case(
        "CHUNK-8",
        "tool-continuation-omits-id-and-name",
        [RS(), TK("c1", "f", "{"), TK(delta="}"), RF()],
        types="RS TS TA TA TE RF",
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-8",
        "tool-continuation-repeats-id",
        [RS(), TK("c1", "f", "{"), TK("c1", delta="}"), RF()],
        types="RS TS TA TA TE RF",
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-8",
        "text-continuation-omits-id",
        [RS(), MK("m1", "a"), MK(delta="b"), MK(delta="c"), RF()],
        types="RS MS MC MC MC ME RF",
        checks=[Text("m1", "abc")],
    ),
    case(
        "CHUNK-9",
        "new-call-id-closes-the-previous-call-first",
        [RS(), TK("c1", "a", "{}"), TK("c2", "b", "{}"), RF()],
        types="RS TS TA TE TS TA TE RF",
        checks=[
            That(
                "order by id",
                lambda o: [e.get("toolCallId") for e in o.delivered[1:-1]],
                ["c1", "c1", "c1", "c2", "c2", "c2"],
            ),
            Args("c1", "{}"),
            Args("c2", "{}"),
        ],
    ),
    case(
        "CHUNK-9",
        "new-message-id-closes-the-previous-message-first",
        [RS(), MK("m1", "a"), MK("m2", "b"), RF()],
        types="RS MS MC ME MS MC ME RF",
        checks=[Text("m1", "a"), Text("m2", "b")],
    ),
    case(
        "CHUNK-9",
        "a-different-id-is-a-first-chunk-and-needs-a-name",
        [RS(), TK("c1", "f", "{"), TK("c2", delta="}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-10",
        "conflicting-tool-name",
        [RS(), TK("c1", "search", "{"), TK("c1", "delete", "}")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "conflicting-tool-name-on-an-id-less-continuation",
        [RS(), TK("c1", "search", "{"), TK(name="delete", delta="}")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "conflicting-parent-message-id",
        [RS(), TK("c1", "f", "{", pm="m1"), TK("c1", delta="}", pm="m2")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "conflicting-role",
        [RS(), MK("m1", "a", role="user"), MK("m1", "b", role="assistant")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "role-conflicting-with-one-established-by-omission",
        [RS(), MK("m1", "a"), MK("m1", "b", role="user")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "conflicting-name",
        [RS(), MK("m1", "a", name="bob"), MK("m1", "b", name="alice")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "CHUNK-10",
        "identical-tool-repeat-accepted",
        [RS(), TK("c1", "f", "{", pm="m1"), TK("c1", "f", "}", pm="m1"), RF()],
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-10",
        "identical-text-repeat-accepted",
        [
            RS(),
            MK("m1", "a", role="user", name="bob"),
            MK("m1", "b", role="user", name="bob"),
            RF(),
        ],
        checks=[Text("m1", "ab")],
    ),
    # -- CHUNK-11 (a): a chunk opening a different item in the same lane
    case(
        "CHUNK-11",
        "text-chunk-closes-a-tool-chunk-stream",
        [RS(), TK("c1", "f", "{"), MK("m1", "x"), TK(delta="}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-11",
        "tool-chunk-closes-a-text-chunk-stream",
        [RS(), MK("m1", "Half "), TK("c1", "f", "{}"), MK(delta="and half.")],
        expect=("fail", "CHUNK-4"),
    ),
    case(
        "CHUNK-11",
        "text-chunk-of-another-message-closes-the-first",
        [RS(), MK("m1", "Half "), MK("m2", "x"), MK(delta="y"), RF()],
        types="RS MS MC ME MS MC MC ME RF",
        checks=[Text("m1", "Half "), Text("m2", "xy")],
    ),
    # -- CHUNK-11 (b): a message/tool/step/state/custom/reasoning event in the lane
    *[
        case(
            "CHUNK-11",
            f"{name}-closes-the-chunk-stream",
            [RS(), *before, MK("m1", "Half "), *closer, MK(delta="and half.")],
            expect=("fail", "CHUNK-4"),
        )
        for name, before, closer in CLOSERS
    ],
    case(
        "CHUNK-11",
        "custom-end-is-synthesized-before-the-closer",
        [RS(), MK("m1", "a"), CUSTOM(), RF()],
        types="RS MS MC ME CUSTOM RF",
    ),
    case(
        "CHUNK-11",
        "custom-closes-a-tool-chunk-stream",
        [RS(), TK("c1", "f", "{"), CUSTOM(), TK(delta="}")],
        expect=("fail", "CHUNK-6"),
    ),
    *[
        case(
            "CHUNK-11",
            f"{name}-stands-aside",
            [RS(), MK("m1", "Half "), event, MK(delta="and half."), RF()],
            types=f"RS MS MC {codes([event])} MC ME RF",
            checks=[Text("m1", "Half and half.")],
        )
        for name, event in STAND_ASIDE
    ],
    case(
        "CHUNK-11",
        "raw-stands-aside-for-a-tool-chunk-stream",
        [RS(), TK("c1", "f", "{"), RAW(), TK(delta="}"), RF()],
        types="RS TS TA RAW TA TE RF",
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-11",
        "subagent-started-opens-a-new-lane-and-closes-nothing",
        [RS(), MK("m1", "Half "), SS("s1"), MK(delta="and half."), SF("s1"), RF()],
        types="RS MS MC SS MC SF ME RF",
        checks=[Text("m1", "Half and half.")],
    ),
    case(
        "CHUNK-11",
        "subagent-started-while-subagent-chunk-stream-open",
        [
            RS(),
            SS("s1"),
            TK("c1", "f", "{", s="s1"),
            SS("s2"),
            TK(delta="}", s="s1"),
            SF("s2"),
            SF("s1"),
            RF(),
        ],
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-11",
        "event-in-another-lane-does-not-close",
        [RS(), MK("m1", "a"), CUSTOM(s="s1"), SNAP(s="s1"), MK(delta="b"), RF()],
        types="RS MS MC CUSTOM SNAP MC ME RF",
        checks=[Text("m1", "ab")],
    ),
    # -- CHUNK-11 (c): run-level events close every lane; a subagent's end closes its lane
    case(
        "CHUNK-11",
        "run-finished-closes-every-lane",
        [RS(), TK("c1", "f", "{}", s="s1"), MK("m1", "a"), RF()],
        checks=[
            That(
                "TE and ME come before RF",
                lambda o: sorted(codes(o.delivered[-3:-1]).split()),
                ["ME", "TE"],
            ),
            That("last is RF", lambda o: o.delivered[-1]["type"], "RUN_FINISHED"),
        ],
    ),
    case(
        "CHUNK-11",
        "run-error-closes-every-lane",
        [RS(), MK("m1", "a"), TK("c1", "f", "{", s="s1"), RE()],
        status=["error"],
        checks=[
            That(
                "both ends synthesized before RUN_ERROR",
                lambda o: sorted(codes(o.delivered[-3:-1]).split()),
                ["ME", "TE"],
            ),
        ],
    ),
    case(
        "CHUNK-11",
        "messages-snapshot-closes-every-lane",
        [RS(), SS("s1"), TK("c1", "f", "{}", s="s1"), MK("m1", "a"), MSNAP(), SF("s1"), RF()],
        checks=[
            That(
                "both ends synthesized before MESSAGES_SNAPSHOT",
                lambda o: [*sorted(codes(o.delivered[-5:-3]).split()), codes(o.delivered[-3:])],
                ["ME", "TE", "MSNAP SF RF"],
            ),
        ],
    ),
    case(
        "CHUNK-11",
        "run-started-closes-every-lane-before-the-nested-run-is-judged",
        [RS("r1"), TK("c1", "f", "{", s="s1"), MK("m1", "a"), RS("r2")],
        expect=("fail", "RUN-13"),
        checks=[
            That(
                "both ends synthesized and verified before the violation",
                lambda o: sorted(codes(o.delivered[-2:]).split()),
                ["ME", "TE"],
            ),
        ],
    ),
    case(
        "CHUNK-11",
        "messages-snapshot-ends-the-shorthand",
        [RS(), MK("m1", "Half "), MSNAP(), MK(delta="and half.")],
        expect=("fail", "CHUNK-4"),
    ),
    case(
        "CHUNK-11",
        "subagent-finished-closes-its-lane",
        [RS(), SS("s1"), TK("c1", "f", "{", s="s1"), SF("s1"), TK(delta="}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-11",
        "subagent-error-closes-its-lane",
        [RS(), SS("s1"), MK("m1", "a", s="s1"), SE("s1"), MK(delta="b")],
        expect=("fail", "CHUNK-4"),
    ),
    case(
        "CHUNK-12",
        "ambiguous-tool-continuation-rejected",
        [
            RS(),
            SS("s1"),
            SS("s2"),
            TK("c1", "f", "{", s="s1"),
            TK("c2", "g", "{", s="s2"),
            TK(delta="x"),
        ],
        expect=("fail", "CHUNK-12"),
    ),
    case(
        "CHUNK-12",
        "ambiguous-text-continuation-rejected",
        [RS(), MK("m1", "a", s="s1"), MK("m2", "b", s="s2"), MK(delta="c")],
        expect=("fail", "CHUNK-12"),
    ),
    case(
        "CHUNK-12",
        "parent-stream-preferred",
        [
            RS(),
            SS("s1"),
            TK("c1", "f", "{", s="s1"),
            TK("c2", "g", "{"),
            TK(delta="}"),
            TK(delta="}", s="s1"),
            SF("s1"),
            RF(),
        ],
        checks=[Args("c1", "{}"), Args("c2", "{}")],
    ),
    case(
        "CHUNK-12",
        "sole-open-stream-continued",
        [RS(), SS("s1"), TK("c1", "f", "{", s="s1"), TK(delta="}"), SF("s1"), RF()],
        checks=[Args("c1", "{}")],
    ),
    case(
        "CHUNK-12",
        "streams-of-another-kind-are-no-candidates",
        [RS(), MK("m1", "a", s="s1"), MK("m2", "b", s="s2"), TK(delta="x")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "CHUNK-13",
        "unattributed-parallel-continuation-rejected",
        [RS(), MK("m1", "a", s="s1"), MK("m2", "b", s="s2"), MK(delta="c", s="s2"), MK(delta="d")],
        expect=("fail", "CHUNK-12"),
    ),
    case(
        "CHUNK-13",
        "attributed-parallel-continuations-accepted",
        [
            RS(),
            MK("m1", "a", s="s1"),
            MK("m2", "b", s="s2"),
            MK(delta="c", s="s2"),
            MK(delta="d", s="s1"),
            RF(),
        ],
        checks=[Text("m1", "ad"), Text("m2", "bc")],
    ),
    case(
        "CHUNK-14",
        "subagent-finished-closes-its-open-chunk-stream",
        [RS(), SS("s1"), TK("c1", "f", "{}", s="s1"), SF("s1"), RF()],
        types="RS SS TS TA TE SF RF",
    ),
    case(
        "CHUNK-14",
        "subagent-error-closes-its-open-chunk-stream",
        [RS(), SS("s1"), MK("m1", "a", s="s1"), SE("s1"), RF()],
        types="RS SS MS MC ME SE RF",
    ),
    case(
        "CHUNK-14",
        "synthesized-end-carries-the-owner",
        [RS(), SS("s1"), TK("c1", "f", "{}", s="s1"), SF("s1"), RF()],
        checks=[
            That(
                "TE attribution",
                lambda o: _first(o, "TE", "toolCallId", "c1").get("subagentRunId"),
                "s1",
            )
        ],
    ),
    case(
        "CHUNK-15",
        "metadata-only-continuation-reaches-the-call",
        [RS(), TK("c1", "f", "{}"), TK(metadata={"finish": "tool_calls"}), RF()],
        checks=[Args("c1", "{}"), CallMeta("c1", {"finish": "tool_calls"})],
    ),
    case(
        "CHUNK-15",
        "metadata-only-continuation-reaches-the-message",
        [RS(), MK("m1", "hi", metadata={"a": 1}), MK(metadata={"a": 2, "usage": 7}), RF()],
        checks=[Text("m1", "hi"), MsgMeta("m1", {"a": 2, "usage": 7})],
    ),
    case(
        "CHUNK-15",
        "chunk-metadata-applies-to-its-synthesized-events",
        [RS(), TK("c1", "f", "{}", metadata={"k": "v"}), RF()],
        checks=[
            That(
                "TS metadata",
                lambda o: _first(o, "TS", "toolCallId", "c1").get("metadata"),
                {"k": "v"},
            ),
        ],
    ),
    case(
        "CHUNK-15",
        "chunk-metadata-merges-last-write-wins-without-recursion",
        [
            RS(),
            TK("c1", "f", "{", metadata={"x": [1, 2], "y": {"a": 1}}),
            TK(delta="}", metadata={"x": [3], "y": {"b": 2}}),
            RF(),
        ],
        checks=[CallMeta("c1", {"x": [3], "y": {"b": 2}})],
    ),
    case(
        "CHUNK-16",
        "chunk-timestamp-not-carried",
        [RS(), TK("c1", "f", "{", timestamp=5), TK(delta="}", timestamp=6), RF()],
        checks=[
            That(
                "no synthesized event carries a chunk's timestamp",
                lambda o: [e for e in o.of("toolCallId", "c1") if "timestamp" in e],
                [],
            ),
        ],
    ),
    case(
        "CHUNK-16",
        "unknown-field-on-a-chunk-stripped-before-expansion",
        [RS(), X(TK("c1", "f", "{}", futureField=1)), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        checks=[
            That(
                "no synthesized event carries the unknown field",
                lambda o: [e for e in o.of("toolCallId", "c1") if "futureField" in e],
                [],
            ),
        ],
    ),
    case(
        "CHUNK-16",
        "raw-event-and-attribution-carried",
        [RS(), TK("c1", "f", "{}", rawEvent={"p": 1}, s="s1"), RF()],
        checks=[
            That(
                "TS rawEvent",
                lambda o: _first(o, "TS", "toolCallId", "c1").get("rawEvent"),
                {"p": 1},
            ),
            That(
                "every synthesized event attributed",
                lambda o: {e.get("subagentRunId") for e in o.of("toolCallId", "c1")},
                {"s1"},
            ),
        ],
    ),
]

# == 4. TEXT ========================================================================

TEXT = [
    case(
        "TEXT-1",
        "absent-role-is-assistant-on-reopen",
        [RS(), MS("m1"), ME("m1"), MS("m1", role="assistant"), ME("m1"), RF()],
        strict=True,
    ),
    case(
        "TEXT-1",
        "every-text-role-accepted",
        [
            RS(),
            *[
                e
                for i, r in enumerate(("developer", "system", "assistant", "user"))
                for e in (MS(f"m{i}", role=r), MC(f"m{i}", r), ME(f"m{i}"))
            ],
            RF(),
        ],
    ),
    case(
        "TEXT-2",
        "reopened-message-appends",
        [RS(), MS("m1"), MC("m1", "a"), ME("m1"), MS("m1"), MC("m1", "b"), ME("m1"), RF()],
        checks=[Text("m1", "ab")],
    ),
    case(
        "TEXT-2",
        "closed-message-reopened-by-a-chunk",
        [RS(), MS("m1"), MC("m1", "a"), ME("m1"), MK("m1", "b"), RF()],
        types="RS MS MC ME MS MC ME RF",
        checks=[Text("m1", "ab")],
    ),
    case(
        "TEXT-2",
        "reopened-in-a-later-run",
        [
            RS("r1"),
            MS("m1"),
            MC("m1", "a"),
            ME("m1"),
            RF("r1"),
            RS("r2"),
            MS("m1"),
            MC("m1", "b"),
            ME("m1"),
            RF("r2"),
        ],
        status=["success", "success"],
        checks=[Text("m1", "ab")],
    ),
    *beyond(
        "TEXT-3",
        "reopen-with-another-role",
        [RS(), MS("m1", role="assistant"), ME("m1"), X(MS("m1", role="user")), ME("m1"), RF()],
    ),
    *beyond(
        "TEXT-3",
        "reopen-with-another-role-than-established-by-omission",
        [RS(), MS("m1"), ME("m1"), X(MS("m1", role="user")), ME("m1"), RF()],
    ),
    *beyond(
        "TEXT-3",
        "reopen-with-another-name",
        [RS(), MS("m1", name="bob"), ME("m1"), X(MS("m1", name="alice")), ME("m1"), RF()],
    ),
    *beyond(
        "TEXT-3",
        "reopen-of-a-history-message-with-another-role",
        [RS(), X(MS("u1", role="assistant")), ME("u1"), RF()],
        run_input=run_input(messages=[{"id": "u1", "role": "user", "content": "hi"}]),
    ),
    # an absent role on the reopening start *means* assistant (TEXT-1), so a
    # role-less reopen of a user message disagrees with it as much as an explicit one
    *beyond(
        "TEXT-3",
        "role-less-reopen-of-a-user-message",
        [RS(), MS("m1", role="user"), ME("m1"), X(MS("m1")), ME("m1"), RF()],
    ),
    case(
        "TEXT-4",
        "reopen-under-another-owner-in-the-same-run",
        [RS(), MS("m1", s="s1"), ME("m1"), MS("m1", s="s2")],
        expect=("fail", "TEXT-4"),
    ),
    case(
        "TEXT-4",
        "reopen-under-the-same-owner",
        [RS(), MS("m1", s="s1"), ME("m1"), MS("m1", s="s1"), MC("m1", "x"), ME("m1"), RF()],
    ),
    case(
        "TEXT-4",
        "reasoning-message-reopened-under-another-owner",
        [RS(), RMS("r1", s="s1"), RME("r1"), RMS("r1", s="s2")],
        expect=("fail", "TEXT-4"),
    ),
    case(
        "TEXT-4",
        "chunk-reopen-under-another-owner",
        [RS(), MK("m1", "a", s="s1"), CUSTOM(s="s1"), MK("m1", "b", s="s2")],
        expect=("fail", "TEXT-4"),
    ),
    case(
        "TEXT-5",
        "closed-message-content-cannot-change",
        [RS(), MS("m1"), MC("m1", "a"), ME("m1"), MC("m1", "b")],
        expect=("fail", TEXT_NOT_OPEN),
    ),
    case(
        "TEXT-6",
        "text-chunks-expanded",
        [RS(), MK("m1", "a", role="user"), MK(delta="b"), RF()],
        types="RS MS MC MC ME RF",
        checks=[
            That("MS role", lambda o: _first(o, "MS", "messageId", "m1").get("role"), "user"),
            Text("m1", "ab"),
        ],
    ),
    case(
        "TEXT-7",
        "metadata-merges-key-by-key-last-write-wins",
        [
            RS(),
            MS("m1", metadata={"a": 1}),
            MC("m1", "x", metadata={"b": 1}),
            ME("m1", metadata={"a": 2}),
            RF(),
        ],
        checks=[MsgMeta("m1", {"a": 2, "b": 1})],
    ),
    case("TEXT-8", "start-while-open", [RS(), MS("m1"), MS("m1")], expect=("fail", TEXT_REOPEN)),
    case("TEXT-8", "content-not-open", [RS(), MC("m1", "x")], expect=("fail", TEXT_NOT_OPEN)),
    case("TEXT-8", "end-not-open", [RS(), ME("m1")], expect=("fail", TEXT_NOT_OPEN)),
    case(
        "TEXT-8", "end-twice", [RS(), MS("m1"), ME("m1"), ME("m1")], expect=("fail", TEXT_NOT_OPEN)
    ),
    case("TEXT-8", "open-at-run-finished", [RS(), MS("m1"), RF()], expect=("fail", TEXT_LEFT_OPEN)),
    case(
        "TEXT-9",
        "empty-delta-keep-alive",
        [RS(), MS("m1"), MC("m1", ""), MC("m1", "a"), MC("m1", ""), ME("m1"), RF()],
        checks=[Text("m1", "a")],
    ),
    case(
        "TEXT-9",
        "empty-delta-on-a-chunk",
        [RS(), MK("m1", ""), MK(delta=""), RF()],
        checks=[Text("m1", "")],
    ),
]

# == 5. TOOL ========================================================================

TOOL = [
    case(
        "TOOL-1",
        "triad-matched-by-tool-call-id",
        [
            RS(),
            TS("c1", "search"),
            TS("c2", "lookup"),
            TA("c2", "{}"),
            TA("c1", "[]"),
            TE("c1"),
            TE("c2"),
            RF(),
        ],
        checks=[Args("c1", "[]"), Args("c2", "{}")],
    ),
    case(
        "TOOL-2",
        "start-without-tool-call-name",
        [RS(), TS("c1", ABSENT)],
        expect=("fail", "TOOL-2"),
    ),
    case(
        "TOOL-2", "start-without-tool-call-id", [RS(), TS(ABSENT, "f")], expect=("fail", "TOOL-2")
    ),
    case("TOOL-2", "numeric-tool-call-name", [RS(), TS("c1", 5)], expect=("fail", "TOOL-2")),
    case(
        "TOOL-2",
        "parent-message-id-optional",
        [RS(), TS("c1", "f"), TE("c1"), TS("c2", "f", pm="m-unknown"), TE("c2"), RF()],
    ),
    case(
        "TOOL-3",
        "call-attributed-against-its-parent-message",
        [RS(), MS("m1", s="s1"), ME("m1"), TS("c1", pm="m1", s="s2")],
        expect=("fail", "SUB-12"),
    ),
    case(
        "TOOL-3",
        "call-agreeing-with-its-parent-message",
        [RS(), MS("m1", s="s1"), ME("m1"), TS("c1", pm="m1", s="s1"), TE("c1"), RF()],
    ),
    case(
        "TOOL-4",
        "empty-args-delta",
        [RS(), TS("c1"), TA("c1", ""), TA("c1", "{}"), TA("c1", ""), TE("c1"), RF()],
        checks=[Args("c1", "{}")],
    ),
    case(
        "TOOL-5",
        "end-delivered-only-once-the-chunked-call-is-complete",
        [RS(), TK("c1", "f", '{"a":'), TK(delta="1}"), RF()],
        checks=[
            That(
                "delivered per frame",
                lambda o: [codes(f) for f in o.frames],
                ["RS", "TS TA", "TA", "TE RF"],
            ),
        ],
    ),
    case(
        "TOOL-6",
        "unparseable-arguments-are-not-a-violation",
        [RS(), TS("c1"), TA("c1", "{not json"), TE("c1"), RF()],
        checks=[Args("c1", "{not json")],
    ),
    case(
        "TOOL-6",
        "call-cut-off-mid-arguments-closes-like-any-other",
        [RS(), TS("c1"), TA("c1", '{"a'), TE("c1"), RF(outcome=CANCELLED)],
        status=["cancelled"],
        checks=[Args("c1", '{"a')],
    ),
    case(
        "TOOL-7",
        "reopened-call-appends-arguments",
        [
            RS(),
            TS("c1", "f"),
            TA("c1", '{"a":'),
            TE("c1"),
            TS("c1", "f"),
            TA("c1", "1}"),
            TE("c1"),
            RF(),
        ],
        pending=[["c1"]],
        checks=[Args("c1", '{"a":1}')],
    ),
    case(
        "TOOL-7",
        "closed-call-reopened-by-a-chunk",
        [RS(), TS("c1", "f"), TA("c1", '{"a":'), TE("c1"), TK("c1", "f", "1}"), RF()],
        strict=True,
        checks=[Args("c1", '{"a":1}')],
    ),
    case(
        "TOOL-7",
        "reopened-in-a-later-run",
        [
            RS("r1"),
            TS("c1", "f"),
            TA("c1", '{"a":'),
            TE("c1"),
            RF("r1"),
            RS("r2"),
            TS("c1", "f"),
            TA("c1", "1}"),
            TE("c1"),
            RF("r2"),
        ],
        checks=[Args("c1", '{"a":1}')],
    ),
    case(
        "TOOL-7",
        "reopened-call-from-history",
        [RS(), TS("c0", "search", pm="a0"), TA("c0", "x"), TE("c0"), RF()],
        strict=True,
        run_input=run_input(messages=[assistant("a0", ("c0", "search"))]),
    ),
    *beyond(
        "TOOL-8",
        "reopen-with-another-name",
        [RS(), TS("c1", "a"), TE("c1"), X(TS("c1", "b")), TE("c1"), RF()],
    ),
    *beyond(
        "TOOL-8",
        "reopen-with-another-parent-message",
        [RS(), TS("c1", pm="m1"), TE("c1"), X(TS("c1", pm="m2")), TE("c1"), RF()],
    ),
    *beyond(
        "TOOL-8",
        "reopen-under-another-owner",
        [RS(), TS("c1", s="s1"), TE("c1"), X(TS("c1", s="s2")), TE("c1"), RF()],
    ),
    *beyond(
        "TOOL-8",
        "reopen-of-a-history-call-with-another-name",
        [RS(), X(TS("c0", "delete", pm="a0")), TE("c0"), RF()],
        run_input=run_input(messages=[assistant("a0", ("c0", "search"))]),
    ),
    case(
        "TOOL-9",
        "continuation-with-conflicting-parent-message-id",
        [RS(), TK("c1", "f", "{", pm="m1"), TK(delta="}", pm="m2")],
        expect=("fail", "CHUNK-10"),
    ),
    case(
        "TOOL-9",
        "first-chunk-must-carry-the-name",
        [RS(), TK("c1", delta="{}")],
        expect=("fail", "CHUNK-6"),
    ),
    case(
        "TOOL-10",
        "result-does-not-reopen-the-call",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1"), TA("c1", "x")],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "TOOL-10",
        "result-answers-a-closed-call",
        [RS(), TS("c1"), TA("c1", "{}"), TE("c1"), TR("m2", "c1", "3 results"), RF()],
        pending=[[]],
        types="RS TS TA TE TR RF",
    ),
    case(
        "TOOL-10",
        "result-without-message-id",
        [RS(), TS("c1"), TE("c1"), TR(ABSENT, "c1")],
        expect=("fail", "TOOL-10"),
    ),
    case(
        "TOOL-10",
        "result-without-tool-call-id",
        [RS(), TS("c1"), TE("c1"), TR("m2", ABSENT)],
        expect=("fail", "TOOL-10"),
    ),
    case(
        "TOOL-10",
        "result-without-content",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", ABSENT)],
        expect=("fail", "TOOL-12"),
    ),
    case(
        "TOOL-10",
        "result-for-a-history-call-is-quiet",
        [RS(), TR("m2", "c0"), RF()],
        strict=True,
        run_input=run_input(messages=[assistant("a0", ("c0", "search"))]),
    ),
    *beyond("TOOL-10", "result-for-an-unknown-call", [RS(), X(TR("m2", "c9")), RF()]),
    *beyond(
        "TOOL-10",
        "result-while-the-call-is-open",
        [RS(), TS("c1"), X(TR("m2", "c1")), TE("c1"), RF()],
    ),
    *beyond(
        "TOOL-10",
        "second-result-for-one-call",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1"), X(TR("m3", "c1")), RF()],
    ),
    *beyond(
        "TOOL-10",
        "result-for-a-call-answered-in-history",
        [RS(), X(TR("m2", "c0")), RF()],
        run_input=run_input(
            messages=[
                assistant("a0", ("c0", "search")),
                {"id": "t0", "role": "tool", "toolCallId": "c0", "content": "done"},
            ]
        ),
    ),
    case(
        "TOOL-11",
        "agent-executed-result-in-the-same-run",
        [RS(), TS("c1", "search"), TE("c1"), TR("m2", "c1"), RF()],
        pending=[[]],
    ),
    case(
        "TOOL-11",
        "client-executed-call-left-unanswered",
        [RS(), TS("c1", "confirm_order"), TE("c1"), RF()],
        run_input=FRONTEND,
        pending=[["c1"]],
    ),
    case(
        "TOOL-12",
        "object-content-rejected",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", {"a": 1})],
        expect=("fail", "TOOL-12"),
    ),
    case(
        "TOOL-12",
        "numeric-content-rejected",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", 42)],
        expect=("fail", "TOOL-12"),
    ),
    case(
        "TOOL-12",
        "text-part-without-text-rejected",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", [{"type": "text"}])],
        expect=("fail", "TOOL-12"),
    ),
    case(
        "TOOL-12",
        "parts-delivered-unchanged",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", [TEXT_PART, DOC_PART]), RF()],
        checks=[
            That(
                "result content",
                lambda o: _first(o, "TR", "toolCallId", "c1")["content"],
                [TEXT_PART, DOC_PART],
            )
        ],
    ),
    case(
        "TOOL-12",
        "empty-string-content-accepted",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1", ""), RF()],
    ),
    case(
        "TOOL-12",
        "file-source-passes-through-opaque",
        [
            RS(),
            TS("c1"),
            TE("c1"),
            TR("m2", "c1", [{"type": "document", "source": {"type": "file", "value": "file-abc"}}]),
            RF(),
        ],
    ),
    case("TOOL-20", "end-twice", [RS(), TS("c1"), TE("c1"), TE("c1")], expect=("fail", "TOOL-20")),
    case(
        "TOOL-20",
        "args-after-end",
        [RS(), TS("c1"), TE("c1"), TA("c1", "x")],
        expect=("fail", "TOOL-20"),
    ),
    case("TOOL-20", "start-while-open", [RS(), TS("c1"), TS("c1")], expect=("fail", "TOOL-20")),
    case("TOOL-20", "open-at-run-finished", [RS(), TS("c1"), RF()], expect=("fail", "TOOL-20")),
    case(
        "TOOL-20",
        "open-at-cancelled-run-finished",
        [RS(), TS("c1"), RF(outcome=CANCELLED)],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "TOOL-26",
        "arguments-kept-as-written",
        [RS(), TS("c1", "f"), TA("c1", ' {"a" : 1 ,'), TA("c1", "}\n"), TE("c1"), RF()],
        checks=[
            That(
                "assembled ToolCall",
                lambda o: o.tool_call("c1"),
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": ' {"a" : 1 ,}\n'},
                },
            )
        ],
    ),
    case(
        "TOOL-26",
        "chunked-arguments-kept-as-written",
        [RS(), TK("c1", "f", "{'single'"), TK(delta=": quotes}"), RF()],
        checks=[
            That(
                "assembled ToolCall",
                lambda o: o.tool_call("c1")["function"],
                {"name": "f", "arguments": "{'single': quotes}"},
            )
        ],
    ),
]

# == 6. FE ==========================================================================

FE = [
    *beyond(
        "FE-2",
        "producer-answers-a-frontend-call",
        [RS(), TS("c1", "confirm_order"), TE("c1"), X(TR("m2", "c1")), RF()],
        run_input=FRONTEND,
    ),
    case(
        "FE-2",
        "backend-result-is-quiet",
        [RS(), TS("c1", "search"), TE("c1"), TR("m2", "c1"), RF()],
        run_input=FRONTEND,
        strict=True,
    ),
    *beyond(
        "FE-3",
        "frontend-call-reported-as-interrupt",
        [RS(), TS("c1", "confirm_order"), TE("c1"), X(RF(outcome=interrupt("i1")))],
        run_input=FRONTEND,
        status=["interrupt"],
        pending=[["c1"]],
    ),
    case(
        "FE-3",
        "frontend-call-with-no-outcome",
        [RS(), TS("c1", "confirm_order"), TE("c1"), RF()],
        run_input=FRONTEND,
        strict=True,
        status=["success"],
        pending=[["c1"]],
    ),
    case(
        "FE-3",
        "frontend-call-with-success-outcome",
        [RS(), TS("c1", "confirm_order"), TE("c1"), RF(outcome=success("c1"))],
        run_input=FRONTEND,
        strict=True,
        status=["success"],
        pending=[["c1"]],
    ),
    case(
        "FE-3",
        "interrupt-for-a-backend-call-is-quiet",
        [RS(), TS("c1", "search"), TE("c1"), RF(outcome=interrupt("i1", toolCallId="c1"))],
        run_input=FRONTEND,
        strict=True,
        status=["interrupt"],
    ),
    *beyond(
        "FE-5",
        "pending-list-names-an-answered-call",
        [
            RS(),
            TS("c1"),
            TE("c1"),
            TS("c2"),
            TE("c2"),
            TR("m3", "c2"),
            X(RF(outcome=success("c1", "c2"))),
        ],
    ),
    *beyond(
        "FE-5",
        "pending-list-misses-a-call",
        [RS(), TS("c1"), TE("c1"), TS("c2"), TE("c2"), X(RF(outcome=success("c1")))],
    ),
    *beyond(
        "FE-5", "pending-list-names-a-call-never-started", [RS(), X(RF(outcome=success("c9")))]
    ),
    case(
        "FE-5",
        "exact-pending-list-accepted",
        [RS(), TS("c1"), TE("c1"), TS("c2"), TE("c2"), TR("m3", "c2"), RF(outcome=success("c1"))],
        strict=True,
        pending=[["c1"]],
    ),
    case(
        "FE-6",
        "absent-list-is-not-nothing-pending",
        [RS(), TS("c1"), TE("c1"), RF()],
        status=["success"],
        pending=[["c1"]],
    ),
    case(
        "FE-6",
        "empty-list-is-derived-from-the-stream",
        [RS(), TS("c1"), TE("c1"), RF(outcome={"type": "success", "pendingToolCallIds": []})],
        pending=[["c1"]],
    ),
    case(
        "FE-6",
        "answered-calls-are-not-pending",
        [RS(), TS("c1"), TE("c1"), TS("c2"), TE("c2"), TR("m3", "c2"), RF()],
        pending=[["c1"]],
    ),
    case(
        "FE-6",
        "pending-in-the-order-made",
        [RS(), TS("c2"), TS("c1"), TE("c1"), TE("c2"), TS("c3"), TE("c3"), RF()],
        pending=[["c2", "c1", "c3"]],
    ),
    case(
        "FE-6",
        "pending-per-run",
        [RS("r1"), TS("c1"), TE("c1"), RF("r1"), RS("r2"), TS("c2"), TE("c2"), RF("r2")],
        pending=[["c1"], ["c2"]],
    ),
    case(
        "FE-6",
        "chunked-calls-pending",
        [RS(), TK("c1", "confirm_order", "{}"), RF()],
        run_input=FRONTEND,
        pending=[["c1"]],
    ),
    case(
        "FE-14",
        "pending-list-on-an-interrupt-outcome-is-stripped",
        [
            RS(),
            TS("c1", "search"),
            TE("c1"),
            X(RF(outcome={**interrupt("i1"), "pendingToolCallIds": ["c1"]})),
        ],
        expect=("warn", ("PROC-1", "PROC-3")),
        status=["interrupt"],
        pending=[["c1"]],
    ),
    case(
        "FE-7",
        "interrupted-run-pending-derived",
        [
            RS(),
            TS("c1", "search"),
            TE("c1"),
            TS("c2", "search"),
            TE("c2"),
            TR("m3", "c2"),
            RF(outcome=interrupt("i1", toolCallId="c1")),
        ],
        status=["interrupt"],
        pending=[["c1"]],
    ),
    case(
        "FE-11",
        "unadvertised-tool-is-not-a-violation",
        [RS(), TS("c1", "unknown_tool"), TE("c1"), RF()],
        run_input=FRONTEND,
        strict=True,
        pending=[["c1"]],
    ),
    case(
        "FE-11",
        "no-tools-advertised",
        [RS(), TS("c1", "anything"), TE("c1"), RF()],
        run_input=run_input(),
        strict=True,
    ),
    case(
        "FE-12",
        "backend-tool-answered-in-stream",
        [RS(), TS("c1", "search"), TA("c1", '{"q":"x"}'), TE("c1"), TR("m2", "c1", "found"), RF()],
        run_input=FRONTEND,
        strict=True,
        status=["success"],
        pending=[[]],
    ),
]

# == 8. RUN / STEP ==================================================================

RUN = [
    case("RUN-1", "tool-call-first", [TS("c1")], expect=("fail", "RUN-1")),
    case("RUN-1", "text-message-first", [MS("m1")], expect=("fail", "RUN-1")),
    case("RUN-1", "chunk-first", [MK("m1", "hi")], expect=("fail", "RUN-1")),
    case("RUN-1", "custom-first", [CUSTOM()], expect=("fail", "RUN-1")),
    case("RUN-1", "raw-first", [RAW()], expect=("fail", "RUN-1")),
    case("RUN-1", "state-snapshot-first", [SNAP()], expect=("fail", "RUN-1")),
    case("RUN-1", "run-finished-first", [RF()], expect=("fail", "RUN-1")),
    case("RUN-1", "run-error-first", [RE("unreachable")], status=["error"]),
    case(
        "RUN-1",
        "run-error-first-then-a-run",
        [RE("unreachable"), RS(), RF()],
        status=["error", "success"],
    ),
    case("RUN-3", "absent-outcome-means-success", [RS(), RF()], status=["success"]),
    case("RUN-3", "success-outcome", [RS(), RF(outcome={"type": "success"})], status=["success"]),
    case("RUN-3", "cancelled-outcome", [RS(), RF(outcome=CANCELLED)], status=["cancelled"]),
    case(
        "RUN-3",
        "interrupt-outcome",
        [RS(), RF(outcome=interrupt("i1", message="Approve?"))],
        status=["interrupt"],
        checks=[
            That("interrupt ids", lambda o: [i["id"] for i in o.result.runs[0].interrupts], ["i1"])
        ],
    ),
    case(
        "RUN-4",
        "unknown-outcome-stripped-to-success",
        [RS(), X(RF(outcome={"type": "paused"}))],
        expect=("warn", "PROC-5"),
        status=["success"],
        checks=[That("outcome stripped", lambda o: "outcome" in o.delivered[-1], False)],
    ),
    case(
        "RUN-4",
        "outcome-array-fatal",
        [RS(), RF(outcome=[{"type": "success"}])],
        expect=("fail", "RUN-4"),
    ),
    case(
        "RUN-4",
        "outcome-without-type-fatal",
        [RS(), RF(outcome={"pendingToolCallIds": []})],
        expect=("fail", "RUN-4"),
    ),
    case(
        "RUN-4",
        "malformed-pending-list-fatal",
        [RS(), RF(outcome={"type": "success", "pendingToolCallIds": "c1"})],
        expect=("fail", "RUN-4"),
    ),
    case(
        "RUN-4",
        "null-outcome-is-a-retired-spelling",
        [RS(), X(RF(outcome=None))],
        expect=("warn", "VER-4"),
        status=["success"],
    ),
    case(
        "RUN-9",
        "no-run-finished-synthesized-for-an-abandoned-stream",
        [RS(), TS("c1"), TA("c1", '{"a')],
        types="RS TS TA",
        status=["truncated"],
        pending=[["c1"]],
    ),
    case(
        "RUN-9",
        "open-chunk-stream-not-closed-at-end-of-stream",
        [RS(), MK("m1", "a")],
        types="RS MS MC",
        status=["truncated"],
    ),
    case(
        "RUN-10",
        "run-error-is-a-failed-run-not-a-rejected-stream",
        [RS(), MS("m1"), MC("m1", "partial"), RE("model overloaded", code="E_OVERLOAD")],
        status=["error"],
        checks=[
            That(
                "run error surfaced",
                lambda o: o.result.runs[0].error,
                {"message": "model overloaded", "code": "E_OVERLOAD"},
            ),
            That("no rejection", lambda o: o.result.error, None),
        ],
    ),
    case("RUN-10", "run-error-without-message", [RS(), RE(ABSENT)], expect=("fail", "PROC-2")),
    case("RUN-12", "event-after-run-finished", [RS(), RF(), TS("c1")], expect=("fail", "RUN-12")),
    case("RUN-12", "custom-after-run-finished", [RS(), RF(), CUSTOM()], expect=("fail", "RUN-12")),
    case("RUN-12", "raw-after-run-finished", [RS(), RF(), RAW()], expect=("fail", "RUN-12")),
    case("RUN-12", "run-finished-twice", [RS(), RF(), RF()], expect=("fail", "RUN-12")),
    case("RUN-12", "late-run-error-fails-the-run", [RS(), RF(), RE()], status=["error"]),
    case(
        "RUN-12",
        "late-run-error-after-an-interrupted-run",
        [RS(), RF(outcome=interrupt("i1")), RE()],
        status=["error"],
    ),
    case(
        "RUN-12",
        "nothing-after-a-late-run-error",
        [RS(), RF(), RE(), RE()],
        expect=("fail", "RUN-12"),
    ),
    case("RUN-12", "event-after-run-error", [RS(), RE(), MS("m1")], expect=("fail", "RUN-12")),
    case("RUN-12", "run-error-after-run-error", [RS(), RE(), RE()], expect=("fail", "RUN-12")),
    case(
        "RUN-12",
        "run-error-then-new-run",
        [RS("r1"), RE(), RS("r2"), TS("c1"), TE("c1"), RF("r2")],
        status=["error", "success"],
    ),
    case(
        "RUN-12",
        "runs-in-sequence",
        [RS("r1"), RF("r1"), RS("r2"), RF("r2"), RS("r3"), RF("r3")],
        status=["success", "success", "success"],
    ),
    case("RUN-13", "nested-run-started", [RS("r1"), RS("r2")], expect=("fail", "RUN-13")),
    case(
        "RUN-13",
        "nested-run-started-with-a-chunk-stream-open",
        [RS("r1"), MK("m1", "a"), RS("r2")],
        expect=("fail", "RUN-13"),
    ),
    case(
        "RUN-15",
        "run-error-abandons-everything-open",
        [RS(), TS("c1"), MS("m1"), RMS("r1"), RST("sp"), STS("plan"), SS("s1"), RE()],
        status=["error"],
    ),
    case(
        "RUN-15",
        "abandoned-call-not-open-in-the-next-run",
        [RS("r1"), TS("c1"), RE(), RS("r2"), TA("c1", "x")],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "RUN-15",
        "abandoned-message-not-open-in-the-next-run",
        [RS("r1"), MS("m1"), RE(), RS("r2"), MC("m1", "x")],
        expect=("fail", TEXT_NOT_OPEN),
    ),
    case(
        "RUN-15",
        "abandoned-step-not-open-in-the-next-run",
        [RS("r1"), STS("plan"), RE(), RS("r2"), STF("plan")],
        expect=("fail", "STEP-1"),
    ),
    case(
        "RUN-15",
        "abandoned-span-not-open-in-the-next-run",
        [RS("r1"), RST("sp"), RE(), RS("r2"), REN("sp")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "RUN-15",
        "abandoned-subagent-not-active-in-the-next-run",
        [RS("r1"), SS("s1"), RE(), RS("r2"), SF("s1")],
        expect=("fail", "SUB-6"),
    ),
    case(
        "RUN-15",
        "new-run-starts-with-nothing-open",
        [
            RS("r1"),
            TS("c1"),
            STS("plan"),
            SS("s1"),
            RE(),
            RS("r2"),
            TS("c1"),
            TE("c1"),
            STS("plan"),
            STF("plan"),
            SS("s9"),
            SF("s9"),
            RF("r2"),
        ],
        status=["error", "success"],
    ),
    case(
        "RUN-16",
        "failed-stream-keeps-what-it-delivered",
        [RS(), MS("m1"), MC("m1", "a"), TS("c1"), TS("c1")],
        expect=("fail", "TOOL-20"),
        types="RS MS MC TS",
    ),
    case(
        "RUN-16",
        "events-of-the-failing-frame-verified-before-the-violation-stay-delivered",
        [RS(), MK("m1", "a"), RF(run="other")],
        expect=("fail", "INPUT-3"),
        types="RS MS MC ME",
    ),
    case(
        "RUN-16",
        "rejected-stream-not-presented-as-a-run-error",
        [RS(), TS("c1"), TS("c1")],
        expect=("fail", "TOOL-20"),
        checks=[
            That("run not reported as RUN_ERROR", lambda o: o.result.runs[0].status != "error"),
            That("no run error", lambda o: o.result.runs[0].error, None),
        ],
    ),
    case("STEP-1", "finished-without-start", [RS(), STF("plan")], expect=("fail", "STEP-1")),
    case("STEP-1", "started-twice", [RS(), STS("plan"), STS("plan")], expect=("fail", "STEP-1")),
    case(
        "STEP-1",
        "finished-twice",
        [RS(), STS("plan"), STF("plan"), STF("plan")],
        expect=("fail", "STEP-1"),
    ),
    case(
        "STEP-1",
        "reopened-after-close",
        [RS(), STS("plan"), STF("plan"), STS("plan"), STF("plan"), RF()],
    ),
    case(
        "STEP-1",
        "finished-under-another-owner",
        [RS(), STS("plan"), STF("plan", s="s1")],
        expect=("fail", "STEP-1"),
    ),
    case(
        "STEP-1",
        "same-name-open-per-owner",
        [RS(), STS("plan"), STS("plan", s="s1"), STF("plan", s="s1"), STF("plan"), RF()],
    ),
    case("STEP-2", "open-at-run-finished", [RS(), STS("plan"), RF()], expect=("fail", "STEP-2")),
    case(
        "STEP-2",
        "steps-overlap-each-other-and-calls",
        [RS(), STS("a"), TS("c1"), STS("b"), STF("a"), TE("c1"), STF("b"), RF()],
    ),
]

# == 10. SUB ========================================================================

SUB = [
    case("SUB-1", "null-tag-on-a-call", [RS(), TS("c1", s=None)], expect=("fail", NULL_TAG)),
    case("SUB-1", "null-tag-on-a-message", [RS(), MS("m1", s=None)], expect=("fail", NULL_TAG)),
    # a tag of the wrong type is a malformed known value (PROC-2); SUB-1 is about the null spelling
    case("SUB-1", "numeric-tag", [RS(), TS("c1", s=1)], expect=("fail", "PROC-2")),
    case(
        "SUB-1",
        "null-tag-on-a-chunk",
        [RS(), TK("c1", "f", "{}", s=None)],
        expect=("fail", NULL_TAG),
    ),
    case("SUB-3", "started-without-name", [RS(), SS("s1", ABSENT)], expect=("fail", "SUB-3")),
    case("SUB-3", "started-without-id", [RS(), SS(ABSENT)], expect=("fail", "SUB-3")),
    case("SUB-3", "finished-without-id", [RS(), SS("s1"), SF(ABSENT)], expect=("fail", "SUB-3")),
    case("SUB-3", "error-without-id", [RS(), SS("s1"), SE(ABSENT)], expect=("fail", "SUB-3")),
    case(
        "SUB-3",
        "error-without-message",
        [RS(), SS("s1"), SE("s1", ABSENT)],
        expect=("fail", "PROC-2"),
    ),
    case("SUB-5", "announced-while-active", [RS(), SS("s1"), SS("s1")], expect=("fail", "SUB-5")),
    case(
        "SUB-5",
        "reused-after-finishing",
        [RS(), SS("s1"), SF("s1"), SS("s1")],
        expect=("fail", "SUB-5"),
    ),
    case(
        "SUB-5",
        "reused-after-error",
        [RS(), SS("s1"), SE("s1"), SS("s1")],
        expect=("fail", "SUB-5"),
    ),
    case(
        "SUB-5",
        "id-may-reappear-in-a-later-run",
        [
            RS("r1"),
            SS("s1"),
            SF("s1", outcome={"type": "suspended"}),
            RF("r1", outcome=interrupt("i1")),
            RS("r2"),
            SS("s1"),
            SF("s1"),
            RF("r2"),
        ],
        status=["interrupt", "success"],
    ),
    case("SUB-6", "active-at-run-finished", [RS(), SS("s1"), RF()], expect=("fail", "SUB-6")),
    case("SUB-6", "finished-never-started", [RS(), SF("s9")], expect=("fail", "SUB-6")),
    case("SUB-6", "error-never-started", [RS(), SE("s9")], expect=("fail", "SUB-6")),
    case("SUB-6", "finished-twice", [RS(), SS("s1"), SF("s1"), SF("s1")], expect=("fail", "SUB-6")),
    case("SUB-6", "closed-before-run-finished", [RS(), SS("s1"), SF("s1"), RF()]),
    case(
        "SUB-7",
        "unannounced-attribution-accepted",
        [
            RS(),
            TS("c1", s="s1"),
            TA("c1", "{}", s="s1"),
            TE("c1", s="s1"),
            MS("m1", s="s2"),
            MC("m1", "x", s="s2"),
            ME("m1", s="s2"),
            STS("p", s="s2"),
            STF("p", s="s2"),
            RF(),
        ],
    ),
    case(
        "SUB-8",
        "subagent-error-ends-the-invocation-not-the-run",
        [
            RS(),
            SS("s1"),
            TS("c1", s="s1"),
            TE("c1"),
            SE("s1", code="E1"),
            MS("m1"),
            MC("m1", "recovered"),
            ME("m1"),
            RF(),
        ],
        status=["success"],
    ),
    case(
        "SUB-10",
        "untagged-continuations-accepted",
        [
            RS(),
            TS("c1", s="s1"),
            TA("c1", "{}"),
            TE("c1"),
            MS("m1", s="s1"),
            MC("m1", "x"),
            ME("m1"),
            RMS("r1", s="s1"),
            RMC("r1", "y"),
            RME("r1"),
            RF(),
        ],
    ),
    case(
        "SUB-10",
        "tagged-continuations-accepted",
        [RS(), TS("c1", s="s1"), TA("c1", "{}", s="s1"), TE("c1", s="s1"), RF()],
    ),
    case(
        "SUB-11",
        "end-tag-disagrees-with-the-opener",
        [RS(), TS("c1", s="s1"), TA("c1", "{}"), TE("c1", s="s2")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-11",
        "args-tag-disagrees-with-the-opener",
        [RS(), TS("c1", s="s1"), TA("c1", "{}", s="s2")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-11",
        "tagged-continuation-of-a-parent-message",
        [RS(), MS("m1"), MC("m1", "x", s="s1")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-11",
        "reasoning-content-tag-disagrees",
        [RS(), RMS("r1", s="s1"), RMC("r1", "x", s="s2")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-11",
        "chunk-continuation-tag-disagrees",
        [RS(), TK("c1", "f", "{", s="s1"), TK("c1", delta="}", s="s2")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-12",
        "call-attributed-against-its-message",
        [RS(), MS("m1", s="s1"), ME("m1"), TS("c1", pm="m1", s="s2")],
        expect=("fail", "SUB-12"),
    ),
    case(
        "SUB-12",
        "call-tagged-while-its-message-is-the-parents",
        [RS(), MS("m1"), TS("c1", pm="m1", s="s1")],
        expect=("fail", "SUB-12"),
    ),
    case(
        "SUB-12",
        "untagged-call-inherits-its-messages-owner",
        [
            RS(),
            MS("m1", s="s1"),
            TS("c1", pm="m1"),
            TA("c1", "{}", s="s1"),
            TE("c1", s="s1"),
            ME("m1"),
            RF(),
        ],
    ),
    case(
        "SUB-12",
        "inherited-owner-judges-continuations",
        [RS(), MS("m1", s="s1"), TS("c1", pm="m1"), TE("c1", s="s2")],
        expect=("fail", "SUB-11"),
    ),
    case(
        "SUB-15",
        "another-invocation-ending-closes-nothing",
        [
            RS(),
            SS("s1"),
            SS("s2"),
            TS("c1", s="s1"),
            MS("m2", s="s2"),
            ME("m2", s="s2"),
            SF("s2"),
            TA("c1", "{}", s="s1"),
            TE("c1", s="s1"),
            SF("s1"),
            RF(),
        ],
    ),
    case(
        "SUB-15",
        "another-invocation-ending-keeps-a-chunk-stream-open",
        [
            RS(),
            SS("s1"),
            SS("s2"),
            TK("c1", "f", "{", s="s1"),
            SE("s2"),
            TK(delta="}", s="s1"),
            SF("s1"),
            RF(),
        ],
        checks=[Args("c1", "{}"), That("one TE", lambda o: len(o.of("toolCallId", "c1", "TE")), 1)],
    ),
    case(
        "SUB-15",
        "invocations-interleave",
        [
            RS(),
            SS("s1"),
            SS("s2"),
            MS("m1", s="s1"),
            MS("m2", s="s2"),
            MC("m1", "a", s="s1"),
            MC("m2", "b", s="s2"),
            ME("m2", s="s2"),
            MC("m1", "c"),
            ME("m1"),
            SF("s2"),
            SF("s1"),
            RF(),
        ],
        checks=[Text("m1", "ac"), Text("m2", "b")],
    ),
    case(
        "SUB-17",
        "run-error-abandons-active-invocations",
        [RS(), SS("s1"), SS("s2"), TS("c1", s="s1"), RE()],
        status=["error"],
    ),
    *beyond(
        "SUB-4",
        "announced-after-attributed-events",
        [RS(), TS("c1", s="s1"), TE("c1", s="s1"), X(SS("s1")), SF("s1"), RF()],
    ),
    case(
        "SUB-4",
        "announced-before-attributed-events",
        [RS(), SS("s1"), TS("c1", s="s1"), TE("c1", s="s1"), SF("s1"), RF()],
        strict=True,
    ),
    *beyond(
        "SUB-14",
        "parent-invocation-never-announced",
        [RS(), X(SS("s2", parentSubagentRunId="s1")), SF("s2"), RF()],
    ),
    case(
        "SUB-14",
        "nested-invocation-names-an-announced-parent",
        [RS(), SS("s1"), SS("s2", parentSubagentRunId="s1"), SF("s2"), SF("s1"), RF()],
        strict=True,
    ),
]

# == 9. INT =========================================================================

INT = [
    case(
        "INT-1",
        "interrupt-outcome-without-interrupts",
        [RS(), RF(outcome={"type": "interrupt", "interrupts": []})],
        expect=("fail", "INT-1"),
    ),
    case(
        "INT-1",
        "interrupt-outcome-with-one-interrupt",
        [RS(), RF(outcome=interrupt("i1", toolCallId="c0", responseSchema={"type": "object"}))],
        status=["interrupt"],
        checks=[
            That("interrupts", lambda o: [i["id"] for i in o.result.runs[0].interrupts], ["i1"])
        ],
    ),
    case(
        "INT-3",
        "duplicate-interrupt-id",
        [RS(), RF(outcome=interrupt("i1", "i1"))],
        expect=("fail", "INT-3"),
    ),
    case(
        "INT-3",
        "unique-interrupt-ids",
        [RS(), RF(outcome=interrupt("i1", "i2"))],
        status=["interrupt"],
        checks=[
            That(
                "interrupts", lambda o: [i["id"] for i in o.result.runs[0].interrupts], ["i1", "i2"]
            )
        ],
    ),
    case(
        "INT-3",
        "ids-may-repeat-across-runs",
        [RS("r1"), RF("r1", outcome=interrupt("i1")), RS("r2"), RF("r2", outcome=interrupt("i1"))],
        status=["interrupt", "interrupt"],
    ),
]

# == 15. REAS =======================================================================

REAS = [
    case("REAS-4", "orphan-content", [RS(), RMC("r9", "x")], expect=("fail", "REAS-4")),
    case("REAS-4", "orphan-end", [RS(), RME("r9")], expect=("fail", "REAS-4")),
    case(
        "REAS-4",
        "message-reopened-while-open",
        [RS(), RMS("r1"), RMS("r1")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "REAS-4", "message-open-at-run-finished", [RS(), RMS("r1"), RF()], expect=("fail", "REAS-4")
    ),
    case("REAS-4", "span-end-without-start", [RS(), REN("sp")], expect=("fail", "REAS-4")),
    case(
        "REAS-4",
        "span-reopened-while-open",
        [RS(), RST("sp"), RST("sp")],
        expect=("fail", "REAS-4"),
    ),
    case("REAS-4", "span-open-at-run-finished", [RS(), RST("sp"), RF()], expect=("fail", "REAS-4")),
    case(
        "REAS-4",
        "fragment-naming-a-span-is-orphaned",
        [RS(), RST("sp"), RMC("sp", "x")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "REAS-4",
        "wrong-role-on-reasoning-message-start",
        [RS(), RMS("r1", role="assistant")],
        expect=("fail", "REAS-4"),
    ),
    case(
        "REAS-4",
        "span-and-message-may-share-an-id",
        [RS(), RST("x"), RMS("x"), RMC("x", "hm"), RME("x"), REN("x"), RF()],
    ),
    case(
        "REAS-4",
        "span-with-several-messages",
        [
            RS(),
            RST("sp"),
            RMS("r1"),
            RME("r1"),
            RMK("r2", "a"),
            REV("r2"),
            RMS("r3"),
            RME("r3"),
            REN("sp"),
            RF(),
        ],
    ),
]

# == 1. EVT =========================================================================

EVT = [
    case(
        "EVT-3",
        "timestamps-do-not-reorder",
        [
            RS(),
            MS("m1", timestamp=200),
            MC("m1", "a", timestamp=100),
            MC("m1", "b", timestamp=50),
            ME("m1", timestamp=10),
            RF(timestamp=0),
        ],
        types="RS MS MC MC ME RF",
        checks=[Text("m1", "ab")],
    ),
    case(
        "EVT-4",
        "raw-event-does-not-close-a-call",
        [RS(), TS("c1", rawEvent={"type": "TOOL_CALL_END", "toolCallId": "c1"}), RF()],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "EVT-4",
        "raw-event-does-not-finish-a-run",
        [
            RS(),
            CUSTOM(rawEvent={"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
            TS("c1"),
            TE("c1"),
            RF(),
        ],
    ),
    case(
        "EVT-4",
        "raw-passthrough-does-not-close-a-call",
        [RS(), TS("c1"), RAW({"type": "TOOL_CALL_END", "toolCallId": "c1"}), RF()],
        expect=("fail", "TOOL-20"),
    ),
    case(
        "EVT-5", "null-optional-field-fatal", [RS(), MS("m1", name=None)], expect=("fail", "EVT-5")
    ),
    case("EVT-5", "null-parent-run-id-fatal", [RS(parentRunId=None)], expect=("fail", "EVT-5")),
    case("EVT-5", "null-delta-on-a-chunk-fatal", [RS(), MK("m1", None)], expect=("fail", "EVT-5")),
    case(
        "EVT-5",
        "registered-null-parent-message-id-on-a-chunk-translated",
        [RS(), X(TK("c1", "f", "{}", pm=None)), RF()],
        expect=("warn", "VER-4"),
    ),
    case(
        "EVT-5",
        "null-metadata-is-not-a-registered-spelling",
        [RS(), MS("m1", metadata=None)],
        expect=("fail", "META-1"),
    ),
    case(
        "EVT-5",
        "registered-null-parent-message-id-translated",
        [RS(), X(TS("c1", pm=None)), TE("c1"), RF()],
        expect=("warn", "VER-4"),
        checks=[
            That(
                "parentMessageId omitted",
                lambda o: "parentMessageId" in _first(o, "TS", "toolCallId", "c1"),
                False,
            )
        ],
    ),
    case(
        "EVT-5",
        "registered-null-result-translated",
        [RS(), X(RF(result=None))],
        expect=("warn", "VER-4"),
    ),
    case(
        "EVT-5",
        "registered-null-raw-event-translated",
        [RS(), X(CUSTOM(rawEvent=None)), RF()],
        expect=("warn", "VER-4"),
    ),
    case(
        "EVT-5", "required-json-payloads-may-be-null", [RS(), CUSTOM(value=None), SNAP(None), RF()]
    ),
    case(
        "EVT-6",
        "null-under-metadata-preserved",
        [RS(), TS("c1", metadata={"k": None}), TE("c1"), RF()],
        checks=[CallMeta("c1", {"k": None})],
    ),
    *beyond("EVT-7", "run-id-reused-on-the-thread", [RS("r"), RF("r"), X(RS("r")), RF("r")]),
    case("EVT-7", "distinct-run-ids", [RS("r1"), RF("r1"), RS("r2"), RF("r2")], strict=True),
    *beyond(
        "EVT-8",
        "result-reuses-the-assistant-message-id",
        [RS(), MS("m1"), ME("m1"), TS("c1", pm="m1"), TE("c1"), X(TR("m1", "c1")), RF()],
    ),
    *beyond(
        "EVT-8",
        "text-message-reuses-a-tool-message-id",
        [RS(), TS("c1"), TE("c1"), TR("m2", "c1"), X(MS("m2")), ME("m2"), RF()],
    ),
    *beyond(
        "EVT-8",
        "result-reuses-a-history-message-id",
        [RS(), TS("c1"), TE("c1"), X(TR("u1", "c1")), RF()],
        run_input=run_input(messages=[{"id": "u1", "role": "user", "content": "hi"}]),
    ),
    case(
        "EVT-10",
        "identifiers-are-opaque",
        [
            RS(run="run:1/2", thread="thr/1"),
            TS("call_1:sub"),
            TS("call_1"),
            TE("call_1:sub"),
            SS("s/1"),
            TS("call_1/s", s="s/1"),
            TE("call_1/s"),
            SF("s/1"),
            TE("call_1"),
            RF(run="run:1/2", thread="thr/1"),
        ],
        pending=[["call_1:sub", "call_1", "call_1/s"]],
    ),
    case(
        "EVT-10",
        "prefix-ids-are-distinct",
        [RS(), MS("m1"), MS("m1:reopen"), ME("m1"), MC("m1:reopen", "x"), ME("m1:reopen"), RF()],
    ),
    case(
        "EVT-12",
        "every-family-accepted-quietly",
        [
            RS(protocolVersion="1.0"),
            STS("plan"),
            MS("m1"),
            MC("m1", "a"),
            ME("m1"),
            TS("c1"),
            TA("c1", "{}"),
            TE("c1"),
            TR("m2", "c1"),
            RST("sp"),
            RMS("r1"),
            RMC("r1", "b"),
            RME("r1"),
            REV("r1"),
            REN("sp"),
            SNAP(),
            DELTA(),
            MSNAP(),
            ASNAP(),
            ADELTA(),
            RAW(),
            CUSTOM(),
            SS("s1"),
            SF("s1"),
            SS("s2"),
            SE("s2"),
            STF("plan"),
            RF(),
        ],
    ),
    case(
        "EVT-12",
        "activity-events-for-a-client-with-no-activity-ui",
        [RS(), ASNAP("a1"), ADELTA("a1"), ASNAP("a1", replace=False), RF()],
    ),
    case(
        "EVT-12",
        "chunk-families-accepted-quietly",
        [RS(), MK("m1", "a"), TK("c1", "f", "{}"), RMK("r1", "b"), RF()],
    ),
]

# == 11. META =======================================================================

META = [
    case(
        "META-1",
        "null-metadata-on-a-call",
        [RS(), TS("c1", metadata=None)],
        expect=("fail", "META-1"),
    ),
    case("META-1", "array-metadata", [RS(), TS("c1", metadata=[])], expect=("fail", "META-1")),
    case("META-1", "string-metadata", [RS(), MS("m1", metadata="x")], expect=("fail", "META-1")),
    case(
        "META-1",
        "null-metadata-on-a-chunk",
        [RS(), MK("m1", "a", metadata=None)],
        expect=("fail", "META-1"),
    ),
    case(
        "META-1",
        "null-metadata-on-run-finished",
        [RS(), RF(metadata=None)],
        expect=("fail", "META-1"),
    ),
    case(
        "META-1",
        "object-metadata-accepted",
        [RS(metadata={}), TS("c1", metadata={"ag-ui": 1, "acme.x": {"y": None}}), TE("c1"), RF()],
    ),
]

# == 12. PROC =======================================================================

UNKNOWN_EVENT = {"type": "TOOL_CALL_PROGRESS", "toolCallId": "c1", "percent": 50}

PROC = [
    case(
        "PROC-1",
        "unknown-event-type-dropped",
        [RS(), X(UNKNOWN_EVENT), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        types="RS RF",
        checks=[
            That(
                "warning names the type",
                lambda o: any("TOOL_CALL_PROGRESS" in w.message for w in o.warnings),
            )
        ],
    ),
    case(
        "PROC-1",
        "unknown-property-stripped",
        [RS(), X(TS("c1", foo=1)), TE("c1"), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
    ),
    case(
        "PROC-1",
        "unknown-union-member-stripped",
        [
            RS(),
            TS("c1"),
            TE("c1"),
            X(TR("m2", "c1", [TEXT_PART, {"type": "hologram", "x": 1}])),
            RF(),
        ],
        expect=("warn", "PROC-5"),
    ),
    case(
        "PROC-1",
        "dropped-event-does-not-close-a-chunk-stream",
        [RS(), MK("m1", "a"), X(UNKNOWN_EVENT), MK(delta="b"), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        types="RS MS MC MC ME RF",
        checks=[Text("m1", "ab")],
    ),
    case(
        "PROC-1",
        "unknown-event-before-run-started-is-dropped-not-fatal",
        [X(UNKNOWN_EVENT), RS(), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        types="RS RF",
    ),
    case("PROC-2", "numeric-delta", [RS(), TS("c1"), TA("c1", 5)], expect=("fail", "PROC-2")),
    case("PROC-2", "numeric-message-id", [RS(), MS(42)], expect=("fail", "PROC-2")),
    case(
        "PROC-2", "string-timestamp", [RS(), MS("m1", timestamp="noon")], expect=("fail", "PROC-2")
    ),
    case(
        "PROC-2", "fractional-timestamp", [RS(), MS("m1", timestamp=1.5)], expect=("fail", "PROC-2")
    ),
    case("PROC-2", "numeric-tool-call-id", [RS(), TS(42)], expect=("fail", ("PROC-2", "TOOL-2"))),
    case("PROC-2", "missing-type", [RS(), {"messageId": "m1"}], expect=("fail", "PROC-2")),
    case(
        "PROC-2",
        "missing-required-field",
        [RS(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"}],
        expect=("fail", "PROC-2"),
    ),
    case("PROC-2", "malformed-value-on-a-run-started", [RS(run=7)], expect=("fail", "PROC-2")),
    case(
        "PROC-3",
        "stripped-property-never-reaches-the-application",
        [RS(), X(TS("c1", futureProp={"a": 1})), TE("c1"), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        checks=[
            That(
                "delivered start",
                lambda o: _first(o, "TS", "toolCallId", "c1"),
                {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
            ),
            That("warning names the path", lambda o: [w.path for w in o.warnings], ["/futureProp"]),
        ],
    ),
    case(
        "PROC-3",
        "dropped-event-never-reaches-the-application",
        [RS(), X(UNKNOWN_EVENT), RF()],
        expect=("warn", ("PROC-1", "PROC-3")),
        checks=[
            That(
                "never delivered",
                lambda o: [
                    e
                    for e in o.delivered
                    if e is UNKNOWN_EVENT or e.get("type") == "TOOL_CALL_PROGRESS"
                ],
                [],
            )
        ],
    ),
    case(
        "PROC-4",
        "patch-operation-extras-preserved",
        [RS(), DELTA({"op": "remove", "path": "/x", "value": 1, "note": "left over"}), RF()],
        checks=[
            That(
                "delta op kept whole",
                lambda o: o.delivered[1]["delta"],
                [{"op": "remove", "path": "/x", "value": 1, "note": "left over"}],
            )
        ],
    ),
    case(
        "PROC-4",
        "unknown-metadata-keys-preserved",
        [RS(), MS("m1", metadata={"acme.trace": "abc", "n": None}), ME("m1"), RF()],
        checks=[MsgMeta("m1", {"acme.trace": "abc", "n": None})],
    ),
    case(
        "PROC-4",
        "open-state-preserved",
        [RS(), SNAP({"anything": {"goes": [None, 1]}}), RF()],
        checks=[
            That(
                "snapshot", lambda o: o.delivered[1]["snapshot"], {"anything": {"goes": [None, 1]}}
            )
        ],
    ),
    case(
        "PROC-5",
        "unknown-element-dropped-from-a-list",
        [RS(), TS("c1"), TE("c1"), X(TR("m2", "c1", [TEXT_PART, {"type": "hologram"}])), RF()],
        expect=("warn", "PROC-5"),
        checks=[
            That("content", lambda o: _first(o, "TR", "toolCallId", "c1")["content"], [TEXT_PART])
        ],
    ),
    case(
        "PROC-5",
        "unknown-source-in-a-required-position-removes-the-part",
        [
            RS(),
            TS("c1"),
            TE("c1"),
            X(
                TR(
                    "m2",
                    "c1",
                    [TEXT_PART, {"type": "image", "source": {"type": "s3", "value": "b/k"}}],
                )
            ),
            RF(),
        ],
        expect=("warn", "PROC-5"),
        checks=[
            That("content", lambda o: _first(o, "TR", "toolCallId", "c1")["content"], [TEXT_PART])
        ],
    ),
    case(
        "PROC-5",
        "unknown-member-in-an-optional-position-removes-the-field",
        [RS(), X(RF(outcome={"type": "paused"}))],
        expect=("warn", "PROC-5"),
        status=["success"],
    ),
    case(
        "PROC-5",
        "unknown-member-in-a-required-position-removes-the-event",
        [RS(), X(REV("m1", subtype="future-thing")), RF()],
        expect=("warn", "PROC-5"),
        types="RS RF",
    ),
    case(
        "PROC-5",
        "unknown-element-dropped-from-a-snapshot-message",
        [
            RS(),
            X(
                MSNAP(
                    {
                        "id": "t1",
                        "role": "tool",
                        "toolCallId": "c0",
                        "content": [TEXT_PART, {"type": "hologram"}],
                    }
                )
            ),
            RF(),
        ],
        expect=("warn", "PROC-5"),
        checks=[That("content", lambda o: o.delivered[1]["messages"][0]["content"], [TEXT_PART])],
    ),
]

# == 14. TRANS / 7. INPUT ============================================================

TRANS = [
    case(
        "TRANS-2",
        "truncated-run-is-not-a-success",
        [RS(), MS("m1"), MC("m1", "a"), ME("m1")],
        types="RS MS MC ME",
        status=["truncated"],
    ),
    case(
        "TRANS-2",
        "truncated-run-keeps-its-pending-calls",
        [RS(), TS("c1"), TE("c1")],
        types="RS TS TE",
        status=["truncated"],
        pending=[["c1"]],
    ),
    case(
        "TRANS-2",
        "only-the-last-run-is-truncated",
        [RS("r1"), RF("r1"), RS("r2"), TS("c1")],
        types="RS RF RS TS",
        status=["success", "truncated"],
    ),
    case("TRANS-2", "run-error-is-a-terminal-event", [RS(), RE()], types="RS RE", status=["error"]),
    case("TRANS-2", "late-run-error-is-a-terminal-event", [RS(), RF(), RE()], status=["error"]),
    case(
        "INPUT-3",
        "run-finished-with-another-run-id",
        [RS("r1"), RF("r2")],
        expect=("fail", "INPUT-3"),
    ),
    case(
        "INPUT-3",
        "run-finished-with-another-thread-id",
        [RS(), RF(thread="u")],
        expect=("fail", "INPUT-3"),
    ),
    case(
        "INPUT-3",
        "second-run-on-another-thread",
        [RS("r1"), RF("r1"), RS("r2", thread="u")],
        expect=("fail", "INPUT-3"),
    ),
    case(
        "INPUT-3",
        "run-on-a-thread-other-than-the-inputs",
        [RS(thread="u")],
        expect=("fail", "INPUT-3"),
        run_input=run_input(thread="t"),
    ),
    case(
        "INPUT-3",
        "replayed-run-carries-its-own-run-id",
        [RS("old"), RF("old"), RS("r"), RF("r")],
        run_input=run_input(),
        status=["success", "success"],
    ),
]

CASES: list[Case] = [
    *STREAM,
    *CHUNK,
    *TEXT,
    *TOOL,
    *FE,
    *RUN,
    *SUB,
    *INT,
    *REAS,
    *EVT,
    *META,
    *PROC,
    *TRANS,
]


def cases_by_rule() -> dict[str, list[str]]:
    """Rule id → the ids of the cases that exercise it, in table order."""
    return by_rule(CASES)


# == the tests =======================================================================


def _param(c: Case) -> Any:
    marks = [pytest.mark.xfail(reason=c.xfail, strict=True)] if c.xfail else []
    return pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("c", [_param(c) for c in CASES])
def test_rule(c: Case) -> None:
    check_case(c, run_case(c))


def test_every_rule_the_same_as_json_text() -> None:
    """The same verdict when every event arrives as JSON text (the decoder's own path).

    One test for the whole table, so the suite stays fast; it names every case
    that differs. Cases expected to fail (xfail) are left to :func:`test_rule`.
    """
    broken = []
    for c in CASES:
        if c.xfail:
            continue
        try:
            check_case(c, run_case(c, as_json=True))
        except AssertionError as exc:
            broken.append(f"{c.id}: {exc}")
    assert not broken, "\n".join(broken)


# the rules the table must cover (consumer-binding rules observable on events)
REQUIRED = [
    *(f"STREAM-{i}" for i in range(1, 8)),
    *(f"CHUNK-{i}" for i in range(1, 17)),
    *(f"TEXT-{i}" for i in range(1, 10)),
    *(f"TOOL-{i}" for i in (*range(1, 13), 20, 26)),
    *(f"FE-{i}" for i in (2, 3, 5, 6, 7, 11, 12)),
    *(f"RUN-{i}" for i in (1, 3, 4, 9, 10, 12, 13, 15, 16)),
    "STEP-1",
    "STEP-2",
    *(f"SUB-{i}" for i in (1, 3, 4, 5, 6, 7, 8, 10, 11, 12, 14, 15, 17)),
    "INT-1",
    "INT-3",
    "REAS-4",
    *(f"EVT-{i}" for i in (3, 4, 5, 6, 7, 8, 10, 12)),
    "META-1",
    *(f"PROC-{i}" for i in range(1, 6)),
    "TRANS-2",
]
BEYOND = [
    "TOOL-8",
    "TOOL-10",
    "EVT-7",
    "EVT-8",
    "FE-2",
    "FE-3",
    "FE-5",
    "SUB-4",
    "SUB-14",
    "TEXT-3",
]


def test_table_covers_the_required_rules() -> None:
    table = cases_by_rule()
    missing = [r for r in REQUIRED if r not in table]
    assert not missing, f"rules without a case: {missing}"


def test_beyond_checks_are_tested_in_both_modes() -> None:
    for rule in BEYOND:
        modes = {
            (c.strict, c.expect if isinstance(c.expect, str) else c.expect[0])
            for c in CASES
            if c.rule == rule
        }
        assert (False, "warn") in modes and (True, "fail") in modes, rule


def test_case_ids_are_unique_and_start_with_their_rule() -> None:
    ids = [c.id for c in CASES]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"duplicate case ids: {dupes}"
    for c in CASES:
        assert c.id.startswith(f"{c.rule}-")

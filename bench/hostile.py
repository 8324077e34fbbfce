"""Hostile inputs: what a small stream costs us (issue 11, items 1-4; issue 28).

Each case runs in its own subprocess, so its peak RSS is its own (imports
included, about 43 MB) and a case that blows up cannot take the others with it;
each is bounded by a wall-clock timeout. ``--write-docs`` rewrites the table
between the markers in docs/security.md from this run — the "before" column is
the record of commit f8cc62c (the last before these bounds), which cannot be
re-run from this tree.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agui_tools.app import Driver

TIMEOUT = 60.0
DOCS = Path(__file__).resolve().parent.parent / "docs" / "security.md"


# (case, argument, what it is, the figure before the bounds)
CASES: list[tuple[str, int, str, str]] = [
    (
        "bomb",
        19,
        "a 3 KB `STATE_DELTA`: 19 groups of add/copy/copy/move",
        "47.8 s wall, 688 MB, accepted (16 groups: 4.2 s CPU)",
    ),
    ("bomb", 40, "the same with 40 groups (7 KB)", "killed after 60 s"),
    (
        "state",
        400,
        "400 one-value `replace` deltas on a 2 MB state",
        "21.7 ms per delta (issue: 175 ms)",
    ),
    (
        "selfcopy",
        13_000,
        "13k 78-byte `copy /a → /a` deltas (1 MB) on a 2.7 MB state",
        "29.7 s CPU, all applied (issue); 30.5 s wall here",
    ),
    ("text", 160_000, "160k `TEXT_MESSAGE_CONTENT` deltas of 8 bytes", "16.7 s (80k: 1.6 s)"),
    ("sse", 680, "one 16 MB SSE event of 3-byte `data:` lines", "10.8 s, 777 MB"),
    (
        "disposal",
        18_000,
        "one run of 18k calls disposed of (MemoryJournal)",
        "74.9 s wall (issue 11)",
    ),
    (
        "unknowns",
        700_000,
        "a run input with 700k unknown members (8.4 MB), judged",
        "20.6 s CPU, 700k log lines (62 MB) (issue 11)",
    ),
    (
        "slowloris",
        200,
        "200 requests that stop mid-body",
        "held forever (issue 11: 3,000 after 60 s)",
    ),
    (
        "check_flood",
        1024,
        "`check` (every case, `--html` + JSON) against an agent streaming 1 GB of small events",
        "4.4 GB, 625 MB HTML (issue); 32 MiB cap: 2.6 GB on 200 MB",
    ),
    (
        "check_flood",
        0,
        "`check` against an agent whose stream never ends",
        "4.8 GB, 752 MB HTML (issue); GET alone: OOM-killed at 24 GB",
    ),
    (
        "gzip_bomb",
        512,
        "a gzip stream inflating to 512 MB of comments",
        "read raw: ended truncated, no rule named",
    ),
    (
        "deep_proto",
        127,
        "a `STATE_SNAPSHOT` nested 127 levels (the most SSE takes) over protobuf",
        '4f1bbff: TRANS-7 "not a protobuf message" (upb read 32 object levels)',
    ),
    (
        "deep_proto",
        100_000,
        "a 794 KB protobuf frame of 100,000 nested lists (issue 28, 9a)",
        '4f1bbff: TRANS-7 "not a protobuf message"; upb\'s limit raised: segfault at 30,000',
    ),
    (
        "deep_proto_wide",
        16,
        "a 16 MB protobuf frame of 126-level branches (every value read past upb)",
        '4f1bbff: TRANS-7 "not a protobuf message" (refused unread)',
    ),
]


def bomb(groups: int) -> str:
    from tests.helpers.attacks import patch_bomb

    from agui_tools import LimitExceeded
    from agui_tools.app import Conversation

    ops = patch_bomb(groups)
    conv = Conversation(thread_id="t")
    conv.next_input(run_id="r")
    try:
        conv.receive_many(
            [
                {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                {"type": "STATE_SNAPSHOT", "snapshot": {"a": [0] * 64}},
                json.dumps({"type": "STATE_DELTA", "delta": ops}).encode(),
            ]
        )
    except LimitExceeded as exc:
        return f"`{exc.rule}` violation"
    return f"run {Driver(conv).end_run().status}"


def state(deltas: int) -> str:
    from agui_tools.app import Conversation

    conv = Conversation(thread_id="t")
    conv.next_input(run_id="r")
    big = {f"k{i:05}": "x" * 90 for i in range(20_000)}
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "STATE_SNAPSHOT", "snapshot": big},
        ]
    )
    frames = [
        json.dumps(
            {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/k00001", "value": i}]}
        ).encode()
        for i in range(deltas)
    ]
    started = time.process_time()
    for frame in frames:
        conv.receive(frame)
    per = (time.process_time() - started) / deltas * 1e3
    return f"{per:.3f} ms per delta"


def selfcopy(deltas: int) -> str:
    from agui_tools import LimitExceeded
    from agui_tools.app import Conversation

    conv = Conversation(thread_id="t")
    conv.next_input(run_id="r")
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "STATE_SNAPSHOT", "snapshot": {"a": "x" * 2_700_000}},
        ]
    )
    frame = json.dumps(
        {"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/a", "path": "/a"}]}
    ).encode()
    for n in range(deltas):
        try:
            conv.receive(frame)
        except LimitExceeded as exc:
            return f"`{exc.rule}` violation at delta {n + 1} (work credit spent)"
    return f"all {deltas:,} applied"


def text(deltas: int) -> str:
    from agui_tools.app import Conversation

    conv = Conversation(thread_id="t")
    conv.next_input(run_id="r")
    conv.receive_many(
        [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        ]
    )
    frame = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"abcdefgh"}'
    for _ in range(deltas // 1000):
        conv.receive_many([frame] * 1000)
    return "linear"


def sse(repeats: int) -> str:
    from agui_tools.wire import SSEReader

    reader = SSEReader()
    chunk = b"data:xx\n" * 8192
    for _ in range(repeats):
        reader.feed(chunk)
    [event] = reader.feed(b"\n")
    return f"one event of {len(event):,} chars"


def disposal(calls: int) -> str:
    from agui_tools.app import Conversation, ToolSpec

    conv = Conversation(thread_id="t", tools=[ToolSpec("look", "read-only")])
    conv.next_input(run_id="r")
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for i in range(calls):
        events += [
            {"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "look"},
            {"type": "TOOL_CALL_END", "toolCallId": f"c{i}"},
        ]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    conv.receive_many(events)
    result = Driver(conv).end_run()
    for call in result.pending:
        Driver(conv).execute(call.call_id, lambda args: "ok")
    conv.next_input()
    return f"{len(result.pending):,} calls answered"


def unknowns(members: int) -> str:
    import orjson

    from agui_tools.transport._front import Refusal
    from agui_tools.transport._server import AgentEndpoint

    async def agent(run: Any) -> None:  # judged only
        raise AssertionError

    body = {"threadId": "t", "runId": "r", "messages": []}
    body.update({f"u{i:07}": 1 for i in range(members)})
    raw = orjson.dumps(body)
    try:
        AgentEndpoint(agent)._judge(raw)
    except Refusal as rejected:
        return f"{rejected.status} {rejected.error.get('rule')}, one log line at most"
    return "accepted"


def slowloris(clients: int) -> str:
    import socket

    from tests.helpers.scripted_server import serve

    from agui_tools.transport._server import agent_app

    async def agent(run: Any) -> None:
        raise AssertionError("a partial body never runs")

    with serve(agent_app(agent, body_timeout=1.0)) as base:
        host, port = base.removeprefix("http://").split(":")
        socks = []
        for _ in range(clients):
            sock = socket.create_connection((host, int(port)), timeout=30)
            sock.sendall(
                b"POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                b"content-length: 1000\r\n\r\n{"
            )
            socks.append(sock)
        answered = 0
        for sock in socks:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            answered += data.startswith(b"HTTP/1.1 408")
            sock.close()
    return f"{answered} of {clients} answered 408 and closed (body_timeout 1 s)"


def gzip_bomb(megabytes: int) -> str:
    import zlib

    from tests.helpers.scripted_server import Script, app_for, serve

    from agui_tools import LimitExceeded
    from agui_tools.app import Conversation
    from agui_tools.transport import SyncAgentClient

    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    comments = b": " + b"x" * 1022 + b"\n\n"
    mebibyte = comments * 1024
    bomb = b"".join(compressor.compress(mebibyte) for _ in range(megabytes)) + compressor.flush()
    script = Script(chunks=[bomb])
    app = app_for(script)

    async def gzipped(scope: Any, receive: Any, send: Any) -> None:
        async def send_gz(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message["headers"], (b"content-encoding", b"gzip")],
                }
            await send(message)

        await app(scope, receive, send_gz)

    conv = Conversation(thread_id="t")
    conv.next_input(user="hi")
    with serve(gzipped) as base, SyncAgentClient(f"{base}/agent") as client:
        try:
            client.run(conv)
        except LimitExceeded as exc:
            return f"`{exc.rule}` violation after {len(bomb):,} compressed bytes"
    return f"run {conv.runs[-1].status}"


def check_flood(megabytes: int) -> str:
    """``check`` in this process against :func:`tests.check.agents.flood_agent` served by
    another (``bench.hostile_peer``), so the peak RSS is the checker's."""
    import atexit
    import socket

    from tests.helpers.scripted_server import free_port

    from agui_tools.check import check_agent
    from agui_tools.check.reports import html_report

    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # the machine is shared
    port = free_port()
    peer = subprocess.Popen(
        [sys.executable, "-m", "bench.hostile_peer", str(port), str(megabytes)],
        cwd=Path(__file__).resolve().parent.parent,
    )
    atexit.register(peer.kill)
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    report = check_agent(f"http://127.0.0.1:{port}/", timeout=60)
    html, doc = html_report(report), report.dumps()
    capped = sum(
        "exceeded the checker's budget" in f.message for c in report.cases for f in c.findings
    )
    return (
        f"HTML {len(html) / 1e6:.1f} MB, JSON {len(doc) / 1e6:.1f} MB; {capped} streams "
        "cut at 2 MiB (`LIMIT` warning)"
    )


def deep_proto(levels: int) -> str:
    """Issue 28, item 9a: a state nested ``levels`` deep, sent over both bindings
    (over protobuf by a producer that does not check the limit)."""
    from tests.helpers.attacks import deep, nested_lists, snapshot_frame

    from agui_tools import ProtocolViolation
    from agui_tools.wire import ConsumerPipeline, SSEReader, sse_frame
    from agui_tools.wire._proto_codec import encode_proto_event
    from agui_tools.wire._proto_framing import ProtoReader, proto_frame

    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    end = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    head, tail = proto_frame(encode_proto_event(start)), proto_frame(encode_proto_event(end))
    if levels > 1000:  # built as bytes: no encoder writes it
        binary = head + proto_frame(snapshot_frame(nested_lists(levels))) + tail
        sse = None
    else:
        snapshot = {"type": "STATE_SNAPSHOT", "snapshot": deep(levels)}
        binary = head + proto_frame(encode_proto_event(snapshot, max_depth=10_000)) + tail
        sse = b"".join(sse_frame(json.dumps(e).encode()) for e in (start, snapshot, end))
    verdicts = []
    for reader, body in ((ProtoReader(), binary), (SSEReader(), sse)):
        if body is None:
            continue
        try:
            events = ConsumerPipeline().feed_many(reader.feed_frames(body))
            verdicts.append(f"{len(events)} events accepted")
        except ProtocolViolation as exc:
            verdicts.append(f"`{exc.rule}` violation at event #{exc.index}")
    if len(verdicts) == 2 and verdicts[0] == verdicts[1]:
        return f"{verdicts[0]}, the same on SSE"
    return verdicts[0] if len(verdicts) == 1 else f"protobuf: {verdicts[0]}; SSE: {verdicts[1]}"


def deep_proto_wide(megabytes: int) -> str:
    """Issue 28, item 9a: the deep reader's cost — a frame of ``megabytes`` MB whose
    every branch nests past what upb reads whole."""
    from agui_tools.wire._proto_codec import decode_proto_event, encode_proto_event

    def branch(i: int) -> object:
        value: object = "leaf"
        for level in range(126):
            value = {"k": value, "s": "x" * 8} if level % 2 else [level, value]
        return value

    one = len(encode_proto_event({"type": "CUSTOM", "name": "n", "value": [branch(0)]}))
    ev = {
        "type": "CUSTOM",
        "name": "n",
        "value": [branch(i) for i in range(megabytes * 10**6 // one)],
    }
    data = encode_proto_event(ev)
    started = time.process_time()
    decoded = decode_proto_event(data)
    spent = time.process_time() - started
    assert decoded["value"] == ev["value"]
    return f"{len(data) / 1e6:.1f} MB decoded in {spent:.2f} s ({spent / len(data) * 1e6:.2f} s/MB), equal"


def _child(name: str, arg: int) -> None:
    import agui_tools.app
    import agui_tools.wire  # noqa: F401 - imported before the clock starts

    started = time.process_time()  # CPU, not wall: the machine is shared
    outcome = globals()[name](arg)
    seconds = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "outcome": outcome}))


def results() -> list[dict[str, Any]]:
    rows = []
    for name, arg, what, before in CASES:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bench.hostile", name, str(arg)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                cwd=Path(__file__).resolve().parent.parent,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
            row = {"seconds": None, "peak_mb": None, "outcome": "did not finish"}
        rows.append({"what": what, "before": before, **row})
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| attack | before (f8cc62c) | after: CPU time | after: peak RSS | outcome |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        secs = "—" if r["seconds"] is None else f"{r['seconds']:.2f} s"
        peak = "—" if r["peak_mb"] is None else f"{r['peak_mb']:.0f} MB"
        lines.append(f"| {r['what']} | {r['before']} | {secs} | {peak} | {r['outcome']} |")
    return "\n".join(lines) + "\n"


def write_docs(table_text: str, path: Path = DOCS, marker: str = "hostile-table") -> None:
    """Replace what stands between ``<!-- marker:begin -->`` and ``<!-- marker:end -->``."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    text_ = path.read_text()
    head, rest = text_.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{table_text}{end}{tail}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        _child(sys.argv[1], int(sys.argv[2]))
    else:
        table_text = report(results())
        print(table_text)
        if "--write-docs" in sys.argv:
            write_docs(table_text)

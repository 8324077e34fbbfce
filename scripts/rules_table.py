"""Regenerate the rule → test table in docs/conformance.md.

    python scripts/rules_table.py          # rewrite the table in place
    python scripts/rules_table.py --check  # exit 1 if the doc is stale (the test suite runs this)

Rows: every rule of spec/RULES.md that binds a consumer (its "Binds" column
names C), with the tests that exercise it — the cases of tests/wire/test_rules.py
(by their id prefix) plus the other tests listed in EXTRA below.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

BEGIN = "<!-- rules-table:begin -->"
END = "<!-- rules-table:end -->"

# rule → tests outside tests/wire/test_rules.py that prove it
EXTRA: dict[str, list[str]] = {
    "PROC-1": ["tests/wire/test_enforce.py", "tests/wire/test_enforce_properties.py"],
    "PROC-2": [
        "tests/wire/test_enforce.py::test_malformed_known_values_are_fatal",
        "tests/wire/test_enforce_properties.py::test_type_corruption_of_a_known_field_is_fatal_at_its_path",
    ],
    "PROC-3": [
        "tests/wire/test_enforce_properties.py::test_extra_properties_anywhere_are_stripped_with_their_path"
    ],
    "PROC-4": ["tests/wire/test_enforce.py::test_open_objects_are_data"],
    "PROC-5": [
        "tests/wire/test_enforce.py::test_unknown_part_in_required_position_removes_the_part_not_the_list"
    ],
    "PROC-7": [
        "tests/wire/test_pipeline.py::test_middleware_sees_unknown_material_after_the_boundary_and_before_enforcement"
    ],
    "PROC-8": [
        "tests/wire/test_conformance_enforcement.py::test_admitted_gap_unknown_role_is_stripped_not_fatal"
    ],
    "VER-4": ["tests/wire/test_upgrade.py"],
    "VER-5": [
        "tests/app/test_conformance_runner.py::test_fixture[producer-declares-newer-version-warns]"
    ],
    "TRANS-2": [
        "tests/wire/test_pipeline.py::test_truncated_run_gets_no_synthetic_finish_and_is_not_success",
        "tests/transport/test_client.py::test_a_200_never_implies_success_truncated_body",
    ],
    "TRANS-5": ["tests/wire/test_framing.py"],
    "TRANS-6": ["tests/transport/test_client.py::test_a_200_never_implies_success_truncated_body"],
    "RUN-9": [
        "tests/transport/test_client.py::test_abandoning_a_stream_never_synthesizes_a_finish"
    ],
    "INPUT-4": [
        "tests/app/test_conversation.py::test_parallel_frontend_calls_answered_together_and_next_input_carries_them",
        "tests/app/test_conformance_runner.py::test_fixture[current-peer-declares-protocol-version]",
    ],
    "INPUT-7": ["tests/app/test_conversation.py::test_next_input_strips_activity_messages"],
    "INPUT-16": ["tests/wire/test_enforce.py::test_run_input_unknown_material_is_stripped"],
    "STATE-1": ["tests/app/test_reducer.py"],
    "STATE-2": [
        "tests/app/test_conformance_runner.py::test_fixture[state-delta-unknown-op-dropped]"
    ],
    "REAS-1": ["tests/app/test_reducer.py"],
    "REAS-2": [
        "tests/app/test_conformance_runner.py::test_fixture[encrypted-value-unknown-entity-tolerated]"
    ],
    "META-4": [
        "tests/app/test_conformance_runner.py::test_fixture[metadata-merges-last-write-wins]"
    ],
    "META-2": ["tests/app/test_conformance_runner.py::test_fixture[open-metadata-preserved]"],
    "FE-6": [
        "tests/app/test_conversation.py::test_pending_is_derived_from_the_stream_not_from_absent_pending_ids"
    ],
    "FE-8": [
        "tests/app/test_conversation.py::test_parallel_frontend_calls_answered_together_and_next_input_carries_them"
    ],
    "INT-7": ["tests/app/test_conversation.py::test_interrupt_resume_coverage"],
    "INT-8": ["tests/app/test_conversation.py::test_interrupt_resume_coverage"],
    "TOOL-5": [
        "tests/app/test_conversation.py::test_a_call_that_never_closed_is_not_executed",
        "tests/app/test_arguments.py",
    ],
    "TOOL-6": [
        "tests/app/test_conversation.py::test_invalid_json_at_end_is_answered_with_an_error_not_a_violation"
    ],
    "TOOL-21": [
        "tests/app/test_conversation.py::test_schema_violation_names_the_path_and_the_rule",
        "tests/app/test_validation.py",
    ],
    "TOOL-22": ["tests/app/test_conversation.py::test_policy_decisions_never_claim_the_user"],
    "TOOL-23": ["tests/app/test_conversation.py::test_results_are_data_not_instructions"],
    "TOOL-24": [
        "tests/app/test_conversation.py::test_unadvertised_tool_is_never_executed_by_default"
    ],
}

EXTRA.update(
    {
        "EVT-1": ["the whole suite (`make test`)"],
        "EVT-2": ["the whole suite (`make test`)"],
        "EVT-13": [
            "tests/wire/test_codec.py::test_samples_cover_the_schema",
            "tests/wire/test_codec.py::test_round_trip_through_our_codec_and_the_official_models",
        ],
        "TOOL-15": [
            "tests/app/test_conformance_runner.py::test_fixture[tool-result-file-source-passes-through]"
        ],
        "TOOL-17": [
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-39-flattens-content]",
            "tests/app/test_reducer.py::test_result_goes_right_after_its_call_and_after_earlier_results",
        ],
        "TOOL-25": [
            "tests/app/test_reducer.py::test_tool_call_arguments_raw_metadata_on_the_call_not_the_message"
        ],
        "INPUT-1": ["tests/transport/test_client.py::test_request_shape_and_a_full_run"],
        "INPUT-2": ["tests/wire/test_enforce.py::test_run_input_malformed_is_rejected_with_path"],
        "INPUT-8": [
            "tests/app/test_conformance_runner.py::test_fixture[tool-result-file-source-passes-through]"
        ],
        "INPUT-10": ["tests/wire/test_enforce.py::test_run_input_unknown_material_is_stripped"],
        "INPUT-14": ["tests/wire/test_codec.py::test_run_input_round_trip"],
        "RUN-8": [
            "tests/app/test_conformance_runner.py::test_fixture[run-finished-cancelled-outcome-accepted]"
        ],
        "INT-5": ["tests/app/test_conversation.py::test_interrupt_resume_coverage"],
        "INT-6": [
            "tests/app/test_conversation.py::test_interrupt_resume_coverage",
            "tests/app/test_conversation.py::test_resume_without_an_interrupted_run_is_refused",
        ],
        "SUB-16": ["tests/app/test_reducer.py::test_subagent_state_updates_the_runs_state"],
        "SUB-19": [
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-57-subagent-dropped-with-warning]"
        ],
        "META-5": [
            "tests/app/test_reducer.py::test_tool_call_arguments_raw_metadata_on_the_call_not_the_message",
            "tests/app/test_reducer.py::test_activity_snapshot_replace_false_and_delta",
        ],
        "VER-2": [
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-39-flattens-content]"
        ],
        "VER-3": [
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-57-subagent-dropped-with-warning]",
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-39-flattens-content]",
        ],
        "VER-6": [
            "tests/app/test_conformance_runner.py::test_fixture[era-0-0-57-subagent-dropped-with-warning]"
        ],
        "TRANS-3": ["tests/transport/test_client.py", "tests/transport/test_proto_transport.py"],
        "TRANS-4": ["tests/transport/test_client.py::test_request_shape_and_a_full_run"],
        "TRANS-7": [
            "tests/transport/test_client.py::test_request_shape_and_a_full_run (explicit Accept: text/event-stream)",
            "tests/transport/test_proto_transport.py",
            "tests/wire/test_proto_codec.py",
            "tests/wire/test_proto_framing.py",
            "tests/interop/test_proto.py",
            "clause by clause: the binary-binding table below",
        ],
        "PROC-6": [
            "tests/wire/test_proto_framing.py::test_an_unknown_outcome_reaches_enforcement_and_is_stripped_as_on_sse",
            "tests/wire/test_proto_framing.py::test_a_frame_from_a_later_protocol_is_dropped_with_a_warning_and_the_run_goes_on",
            "tests/cli/test_proto_cmds.py::test_verify_reads_a_binary_capture_as_it_reads_the_same_stream_as_json",
            "tests/wire/test_proto_depth.py (nesting: the same depths and LIMIT verdicts on both bindings)",
        ],
        "SEC-4": [
            "tests/app/test_conformance_runner.py::test_fixture[raw-and-custom-pass-through]"
        ],
    }
)

# rules that bind a consumer but ask nothing of this library, and why
NOT_APPLICABLE: dict[str, str] = {
    "FE-16": "n/a: capability declarations are not read by this library",
    "RUN-11": "usage is carried as data, never summed or defaulted (round-trip tests)",
    "SEC-3": "SHOULD: reasoning and encrypted values are stored as given and returned only to the producer",
    "CAP-1": "n/a: capability declarations are not read by this library",
    "CAP-2": "n/a: no declaration is read, so none can reject a stream",
    "CAP-3": "n/a: capability declarations are not read by this library",
}

ROW = re.compile(r"^\| (?P<id>[A-Z]+-\d+) \| (?P<rule>.*?) \|(?P<rest>.*)\|\s*$")


def consumer_rules() -> list[tuple[str, str, str]]:
    out = []
    for line in (ROOT / "spec" / "RULES.md").read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in m.group("rest").split("|")]
        binds = next(
            (
                c
                for c in cells
                if re.fullmatch(r"[PCA,+() /a-z]+", c) and any(x in c for x in "PCA")
            ),
            "",
        )
        if "C" not in binds:
            continue
        text = re.sub(r"\s+", " ", m.group("rule")).replace("|", "/")
        if len(text) > 110:
            text = text[:107] + "…"
        out.append((m.group("id"), binds, text))
    return out


def table() -> str:
    from tests.wire.test_rules import cases_by_rule

    cases = cases_by_rule()
    lines = [
        "| rule | binds | what it says (condensed) | proved by |",
        "|---|---|---|---|",
    ]
    for rule, binds, text in consumer_rules():
        proofs = []
        ids = cases.get(rule, [])
        if ids:
            shown = ", ".join(f"`{i}`" for i in ids[:3])
            more = f" (+{len(ids) - 3} more)" if len(ids) > 3 else ""
            proofs.append(f"tests/wire/test_rules.py: {shown}{more}")
        proofs += [f"`{t}`" for t in EXTRA.get(rule, [])]
        if rule in NOT_APPLICABLE:
            proofs.append(NOT_APPLICABLE[rule])
        lines.append(f"| {rule} | {binds} | {text} | {'<br>'.join(proofs) or '**no test**'} |")
    return "\n".join(lines)


def main() -> int:
    doc = ROOT / "docs" / "conformance.md"
    text = doc.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + table() + "\n" + text[end:]
    if "--check" in sys.argv:
        if new != text:
            print(
                "docs/conformance.md is stale: run python scripts/rules_table.py", file=sys.stderr
            )
            return 1
        return 0
    doc.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

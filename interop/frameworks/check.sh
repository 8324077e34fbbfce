#!/usr/bin/env bash
# Check a framework's AG-UI adapter with `agui-tools check` (docs/conformance.md,
# "Agent frameworks, checked live"):
#
#   interop/frameworks/check.sh langgraph   [extra agui-tools check flags…]
#   interop/frameworks/check.sh pydantic-ai --html pydantic-ai.html
#   HARNESS_ARGS=--interrupt interop/frameworks/check.sh strands
#
# Frameworks: every <framework>-requirements.txt here (pydantic-ai, langgraph,
# strands, microsoft-agent-framework, google-adk, llamaindex, crewai). The adapter
# goes in its own virtualenv .venv-<framework> at the repository root, built by
# tests/helpers/frameworks.py from the pinned requirements (rebuilt when they
# change) — never in the project's; the harness is served on a free loopback port,
# the project's own agui-tools checks it, and the harness is stopped. The exit code
# is the check's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
framework="${1:?usage: check.sh FRAMEWORK [agui-tools check flags]}"
shift
cd "$root"
exec "$root/.venv/bin/python" - "$framework" "$@" <<'PY'
import subprocess, sys
from tests.helpers.frameworks import FrameworkUnavailable, serving_framework
import os
framework, flags = sys.argv[1], sys.argv[2:]
args = os.environ.get("HARNESS_ARGS", "").split()
try:
    with serving_framework(framework, args=args) as served:
        code = subprocess.call([sys.executable, "-m", "agui_tools", "check", served.url, *flags])
except FrameworkUnavailable as exc:
    print(exc, file=sys.stderr)
    code = 2
sys.exit(code)
PY

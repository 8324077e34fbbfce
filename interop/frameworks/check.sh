#!/usr/bin/env bash
# Check a framework's AG-UI adapter with `agui-tools check` (docs/conformance.md,
# "Agent frameworks, checked live"):
#
#   interop/frameworks/check.sh langgraph   [extra agui-tools check flags…]
#   interop/frameworks/check.sh pydantic-ai --html pydantic-ai.html
#
# The adapter goes in its own virtualenv (FRAMEWORK_VENV, default
# .venv-<framework> at the repository root) from the pinned
# <framework>-requirements.txt — never in the project's; the harness serves it on
# a free loopback port, the project's own agui-tools checks it, and the harness
# is stopped. The exit code is the check's.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
framework="${1:?usage: check.sh langgraph|pydantic-ai [agui-tools check flags]}"
shift
harness="$here/${framework//-/_}_agent.py"
requirements="$here/$framework-requirements.txt"
[[ -f "$harness" && -f "$requirements" ]] || { echo "no harness for $framework" >&2; exit 2; }
venv="${FRAMEWORK_VENV:-$root/.venv-$framework}"
if [[ ! -x "$venv/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet -r "$requirements"
fi
port="$("$root/.venv/bin/python" -c 'from agui_tools.testing import free_port; print(free_port())')"
"$venv/bin/python" "$harness" --port "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  "$root/.venv/bin/python" -c "import httpx,sys; httpx.get('http://127.0.0.1:$port/', timeout=1)" 2>/dev/null && break
  sleep 0.1
done
"$root/.venv/bin/agui-tools" check "http://127.0.0.1:$port/" "$@"

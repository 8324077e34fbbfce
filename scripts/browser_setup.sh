#!/usr/bin/env bash
# Make Debian's Chromium ready for the inspector's browser tests (tests/ui/, issue 15).
#
# The tests drive /usr/bin/chromium through the pinned `playwright` package
# (installed into .venv from pyproject.toml + constraints.txt); Playwright's own
# browser download is never used. CI runs as root on a bare machine, so when
# chromium is missing and we are root with apt-get, it is installed from the
# distribution. Anywhere else a missing Chromium is reported here; the browser
# tests then fail under CI=true and skip, saying why, elsewhere.
set -uo pipefail
CHROMIUM="${AGUI_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
	exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "chromium not found: installing it with apt-get (chromium)"
	if DEBIAN_FRONTEND=noninteractive apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
		exit 0
	fi
	echo "error: apt-get install chromium failed"
	[ "${CI:-}" = true ] && exit 1
	exit 0
fi
echo "chromium not found at $CHROMIUM (and not root to install it): the browser tests cannot run"
[ "${CI:-}" = true ] && exit 1
exit 0

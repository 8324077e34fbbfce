#!/usr/bin/env bash
# Make the official TypeScript client (interop/) ready for `make test` / `make bench`.
#
#   scripts/interop_setup.sh test   a failed npm ci fails the target (the interop tests need it)
#   scripts/interop_setup.sh bench  a failed npm ci is a warning (the TypeScript rows say "skipped")
#
# Node comes from the machine. CI runs as root on a bare machine, so when node/npm are
# missing and we are root with apt-get, they are installed from the distribution
# (apt-get install nodejs npm). Anywhere else a missing Node is reported and the
# interop tests skip, saying why. The packages themselves always come from the
# project's own lockfile: npm ci --prefix interop.
set -uo pipefail
mode="${1:-test}"
NPM="${NPM:-npm}"
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1 || ! command -v "$NPM" >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "node/npm not found: installing them with apt-get (nodejs npm)"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq \
			&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null \
			|| echo "warning: apt-get install nodejs npm failed"
	fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v "$NPM" >/dev/null 2>&1; then
	if [ "$mode" = test ]; then
		echo "node/npm not found: the TypeScript interop tests will be skipped"
	else
		echo "node/npm not found: the TypeScript peers will be skipped"
	fi
	exit 0
fi

if ! "${MAKE:-make}" --no-print-directory interop/node_modules/.installed NPM="$NPM"; then
	if [ "$mode" = test ]; then
		echo "error: npm ci --prefix interop failed (the interop tests need it)"
		exit 1
	fi
	echo "warning: npm ci --prefix interop failed; the TypeScript peers will be skipped"
fi
exit 0

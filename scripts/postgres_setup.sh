#!/usr/bin/env bash
# Make a PostgreSQL >= 15 server available for `make test` / `make bench`.
#
# The store's tests start their own throw-away server (tests/helpers/postgres.py:
# initdb into a temporary folder, a Unix socket, stopped at the end); this script
# only makes sure the server binaries exist. On a bare CI machine (root, apt-get)
# it installs Debian's `postgresql` package. Without the binaries and without a
# way to install them, it says so: the PostgreSQL tests then fail under CI=true
# (they never skip quietly there) and skip, saying why, elsewhere.
set -uo pipefail

have_server() {
	for d in /usr/lib/postgresql/*/bin; do
		v="$(basename "$(dirname "$d")")"
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ "${v%%.*}" -ge 15 ] 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

if have_server; then
	exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "PostgreSQL server binaries not found: installing them with apt-get (postgresql)"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			postgresql >/dev/null \
		|| echo "warning: apt-get install postgresql failed"
fi
if ! have_server; then
	echo "PostgreSQL >= 15 server binaries not found: the PostgreSQL store tests cannot run" \
		"(they fail under CI=true, and skip elsewhere)"
fi
exit 0

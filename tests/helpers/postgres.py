"""A throw-away PostgreSQL server for the test session (and the benchmark).

``initdb`` into a temporary folder, listening on a Unix socket in that folder
only (no TCP port at all), ``fsync=off`` for tests (the data is thrown away;
``durable=True`` for the benchmark), stopped
and removed at the end. As root, the server runs as the ``postgres`` user
(PostgreSQL refuses to run as root); scripts/postgres_setup.sh installs the
binaries on a machine that lacks them.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PostgresServer", "ServerMissing", "find_bindir"]


class ServerMissing(RuntimeError):
    """No PostgreSQL >= 15 server binaries on this machine."""


def find_bindir() -> Path:
    """The newest PostgreSQL >= 15 server binaries (Debian's layout, then pg_config)."""
    found: list[tuple[int, Path]] = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        try:
            version = int(Path(d).parent.name.split(".")[0])
        except ValueError:
            continue
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            found.append((version, Path(d)))
    found.sort()
    if found and found[-1][0] >= 15:
        return found[-1][1]
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        bindir = Path(subprocess.check_output([pg_config, "--bindir"], text=True).strip())
        if (bindir / "initdb").exists():
            return bindir
    raise ServerMissing(
        "no PostgreSQL >= 15 server binaries (initdb, pg_ctl) were found; "
        "scripts/postgres_setup.sh installs them (as root, with apt-get)"
    )


class PostgresServer:
    """One server: ``start()``, ``conninfo``, ``restart()``, ``stop()``/``destroy()``.

    ``crash_safe``: still no fsync (the machine does not crash, the data is thrown
    away), but ``synchronous_commit`` stays on, so an acknowledged commit is in the
    WAL the server replays: an immediate shutdown (``restart(mode="immediate")``,
    a server crash) loses nothing a client was told was committed. Without it a
    test server may forget the last commits of a crash — fine for tests that stop
    it only with ``fast``, not for a chaos run judging what the store promised.
    """

    def __init__(self, *, durable: bool = False, crash_safe: bool = False) -> None:
        self.durable = durable
        self.crash_safe = crash_safe
        self.bindir = find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="agui-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.socket_dir.mkdir()
        self.log = self.root / "server.log"
        self.run_as: str | None = None
        if os.geteuid() == 0:  # PostgreSQL will not run as root
            self.run_as = "postgres" if _user_exists("postgres") else _make_user()
            pw = pwd.getpwnam(self.run_as)
            for p in (self.root, self.socket_dir):
                os.chown(p, pw.pw_uid, pw.pw_gid)

    @property
    def conninfo(self) -> str:
        return f"host={self.socket_dir} port=5432 user=agui dbname=postgres"

    def _run(self, *args: str) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.run_as is not None:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr.strip()}\n{log}"
            )

    def start(self) -> PostgresServer:
        if not self.data.exists():
            self._run(
                "initdb", "-D", str(self.data), "-U", "agui", "--auth=trust", "--no-sync",
                "-E", "UTF8", "--locale=C",
            )  # fmt: skip
        # tests throw the data away: no fsync; the benchmark compares like with like
        # (SQLite's store commits with synchronous=FULL): fsync on, as deployed
        if self.durable:
            durability = ""
        elif self.crash_safe:
            durability = "-c fsync=off -c full_page_writes=off "
        else:
            durability = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        options = (
            f"-c listen_addresses='' -c unix_socket_directories={self.socket_dir} "
            f"{durability}-c max_connections=300 -c shared_buffers=64MB"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
            "-o", options, "start",
        )  # fmt: skip
        return self

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode``: ``fast`` (sessions rolled back, a clean shutdown) or
        ``immediate`` (every server process killed at once, crash recovery on start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "fast") -> None:
        """Stop (``mode`` as for :meth:`stop`) and start again with the same options."""
        self.stop(mode)
        self.start()

    def destroy(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _make_user() -> str:
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "agui-pg"], check=True, capture_output=True
    )
    return "agui-pg"

"""A private PostgreSQL server for one run: Debian's binaries, a dedicated non-root user (PostgreSQL
refuses root), a Unix socket only (no TCP listener at all), stopped afterwards whatever happened."""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

START_TIMEOUT_S = 60
PORT = 5432


class ServerError(RuntimeError):
    pass


def find_bin_dir(explicit: str | None) -> Path:
    if explicit:
        d = Path(explicit)
    else:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                       key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
        if not found:
            raise ServerError("no PostgreSQL server under /usr/lib/postgresql; `make install` installs "
                              "Debian's postgresql package (or set engines.postgres.bin_dir)")
        d = found[-1].parent
    if not (d / "postgres").exists() or not (d / "initdb").exists():
        raise ServerError(f"{d}: no postgres/initdb binaries there")
    return d


def ensure_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        if os.geteuid() != 0:
            raise ServerError(f"user {name!r} does not exist and only root can create it") from None
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    return pwd.getpwnam(name)


def _traversable_by(path: Path, uid: int, gid: int) -> bool:
    """Can `uid` enter every folder from / down to `path` (the execute bit that applies to it)?"""
    for p in [path, *path.parents]:
        st = p.stat()
        bit = 0o100 if st.st_uid == uid else 0o010 if st.st_gid == gid else 0o001
        if not st.st_mode & bit:
            return False
    return True


class PostgresServer:
    def __init__(self, data_dir: Path, conf: dict[str, str], bin_dir: str | None, os_user: str) -> None:
        self.bin = find_bin_dir(bin_dir)
        self.conf = conf
        self._tmp: list[Path] = []
        if os.geteuid() == 0:
            pw = ensure_user(os_user)
            self.uid, self.gid, self.user = pw.pw_uid, pw.pw_gid, os_user
        else:   # already non-root: run as ourselves
            self.uid, self.gid, self.user = os.geteuid(), os.getegid(), pwd.getpwuid(os.geteuid()).pw_name
        data_dir.mkdir(parents=True, exist_ok=True)
        base = data_dir
        if not _traversable_by(data_dir, self.uid, self.gid):
            # Never loosen the user's folders: put the cluster in a private folder the server user can reach.
            base = Path(tempfile.mkdtemp(prefix="arkbench-pg-", dir="/var/tmp"))
            os.chmod(base, 0o755)
            self._tmp.append(base)
        self.pgdata = base / "pgdata"
        self.socket_dir = Path(tempfile.mkdtemp(prefix="arkpg-", dir="/tmp"))   # short: sun_path is 108 bytes
        self._tmp.append(self.socket_dir)
        self.log_path = data_dir / "postgres.log"
        self.proc: subprocess.Popen | None = None

    def _demote(self):
        uid, gid = self.uid, self.gid

        def fn():
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
        return fn

    def _chown(self, p: Path) -> None:
        if os.geteuid() == 0:
            os.chown(p, self.uid, self.gid)

    def start(self) -> None:
        self.pgdata.mkdir(mode=0o700)
        self._chown(self.pgdata)
        self._chown(self.socket_dir)
        init = subprocess.run([str(self.bin / "initdb"), "-D", str(self.pgdata), "--username", self.user,
                               "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-instructions"],
                              preexec_fn=self._demote(), capture_output=True, text=True, cwd="/")
        if init.returncode:
            raise ServerError(f"initdb failed ({init.returncode}): {init.stderr.strip()[-2000:]}")
        args = [str(self.bin / "postgres"), "-D", str(self.pgdata), "-p", str(PORT),
                "-c", "listen_addresses=", "-c", f"unix_socket_directories={self.socket_dir}"]
        for k, v in self.conf.items():
            args += ["-c", f"{k}={v}"]
        log = open(self.log_path, "ab")
        self._chown(self.log_path)
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=self._demote(),
                                     cwd="/")
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise ServerError(f"postgres exited with {self.proc.returncode} at start; log:\n{self.log_tail()}")
            try:
                psycopg.connect(self.conninfo(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise ServerError(f"postgres not ready after {START_TIMEOUT_S}s; log:\n{self.log_tail()}") from None
                time.sleep(0.1)

    def conninfo(self) -> str:
        return f"host={self.socket_dir} port={PORT} user={self.user} dbname=postgres"

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGINT)           # fast shutdown
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for d in self._tmp:
            shutil.rmtree(d, ignore_errors=True)
        self._tmp.clear()

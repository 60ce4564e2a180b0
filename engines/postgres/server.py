"""A private PostgreSQL server for one run: Debian's binaries, a dedicated non-root user (PostgreSQL
refuses root), a Unix socket only (no TCP listener at all), stopped afterwards whatever happened.
In the docker runtime the server has its own container (serve.py): it then also listens on the
container's internal network, with a per-run password (scram-sha-256) for TCP connections."""
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
from psycopg import sql as pgsql

from harness.platform import cgroup
from harness.engine_api import server_contract

START_TIMEOUT_S = 60
PORT = 5432
HOST_HBA = "host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n"


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


def wait_ready(conninfo: str, check_alive, timeout_message) -> None:
    """Connect until the server answers; check_alive() raises when waiting is pointless."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        check_alive()
        try:
            psycopg.connect(conninfo, connect_timeout=2).close()
            return
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline:
                raise ServerError(timeout_message(e)) from None
            time.sleep(0.1)


class PostgresServer:
    def __init__(self, data_dir: Path, conf: dict[str, str], bin_dir: str | None, os_user: str,
                 listen: str = "", password: str | None = None) -> None:
        if listen and not password:
            raise ServerError(f"a TCP listener needs a password ({server_contract.PASSWORD_ENV})")
        self.bin = find_bin_dir(bin_dir)
        self.conf, self.listen, self.password = conf, listen, password
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
            base = self._reachable_folder(data_dir)
            if (data_dir / "pgdata" / "PG_VERSION").exists():
                # a cloned cluster moves by rename only: a copy across filesystems would be cached outside
                # MEM, and the cell would start warm where every other starts cold (or preloaded inside MEM)
                os.rename(data_dir / "pgdata", base / "pgdata")
        self.pgdata = base / "pgdata"
        self.socket_dir = Path(tempfile.mkdtemp(prefix="arkpg-", dir="/tmp"))   # short: sun_path is 108 bytes
        self._tmp.append(self.socket_dir)
        self.log_path = data_dir / "postgres.log"
        self.proc: subprocess.Popen | None = None

    def _reachable_folder(self, data_dir: Path) -> Path:
        """A new folder the server's user can enter, on data_dir's filesystem, or a refusal saying why."""
        dev = data_dir.stat().st_dev
        for parent in (Path("/var/tmp"), Path("/tmp")):
            if parent.is_dir() and parent.stat().st_dev == dev and _traversable_by(parent, self.uid, self.gid):
                base = Path(tempfile.mkdtemp(prefix="arkbench-pg-", dir=parent))
                os.chmod(base, 0o755)
                self._tmp.append(base)
                return base
        raise ServerError(f"{data_dir}: user {self.user} cannot enter every folder down to it, and neither "
                          "/var/tmp nor /tmp is on its filesystem to move the cluster to by rename; give the "
                          "server's user a way in (chmod o+x on the folders above) or put the data elsewhere")

    def _demote(self):
        uid, gid = self.uid, self.gid

        def fn():
            cgroup.join_server_cgroup()        # the local runtime's MEM applies to the server, not the runner
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
        return fn

    def _chown(self, p: Path) -> None:
        if os.geteuid() == 0:
            os.chown(p, self.uid, self.gid)

    def start(self) -> None:
        self._chown(self.socket_dir)
        if (self.pgdata / "PG_VERSION").exists():
            self._adopt()           # a cloned starting state (harness/state): its cluster, as built
        else:
            self._init()
        args = [str(self.bin / "postgres"), "-D", str(self.pgdata), "-p", str(PORT),
                "-c", f"listen_addresses={self.listen}", "-c", f"unix_socket_directories={self.socket_dir}"]
        for k, v in self.conf.items():
            args += ["-c", f"{k}={v}"]
        log = open(self.log_path, "ab")
        self._chown(self.log_path)
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=self._demote(),
                                     cwd="/")
        log.close()

        def exited() -> None:
            if self.proc.poll() is not None:
                raise ServerError(f"postgres exited with {self.proc.returncode} at start; log:\n{self.log_tail()}")
        wait_ready(self.conninfo(), exited, lambda e: f"postgres not ready after {START_TIMEOUT_S}s; log:\n{self.log_tail()}")
        if self.password and self._adopted:     # this run's password, not the build's (it had none)
            with psycopg.connect(self.conninfo(), autocommit=True) as c:
                c.execute(pgsql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    pgsql.Identifier(self.user), pgsql.Literal(self.password)))

    _adopted = False

    def _adopt(self) -> None:
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(self.pgdata)], check=True)
        (self.pgdata / "postmaster.pid").unlink(missing_ok=True)
        if self.listen:
            hba = self.pgdata / "pg_hba.conf"
            if HOST_HBA not in hba.read_text():
                with open(hba, "a") as f:
                    f.write(HOST_HBA)
        self._adopted = True

    def _init(self) -> None:
        self.pgdata.mkdir(mode=0o700)
        self._chown(self.pgdata)
        auth = ["--auth", "trust"]
        if self.password:
            pwfile = self.socket_dir / "pw"
            pwfile.write_text(self.password)
            self._chown(pwfile)
            auth = ["--auth-local", "trust", "--auth-host", "scram-sha-256", f"--pwfile={pwfile}"]
        init = subprocess.run([str(self.bin / "initdb"), "-D", str(self.pgdata), "--username", self.user,
                               *auth, "--encoding", "UTF8", "--locale", "C", "--no-instructions"],
                              preexec_fn=self._demote(), capture_output=True, text=True, cwd="/")
        if self.password:
            pwfile.unlink()
        if init.returncode:
            raise ServerError(f"initdb failed ({init.returncode}): {init.stderr.strip()[-2000:]}")
        if self.listen:   # the compose network is internal; every TCP client must still give the password
            with open(self.pgdata / "pg_hba.conf", "a") as f:
                f.write(HOST_HBA)

    def conninfo(self) -> str:
        return f"host={self.socket_dir} port={PORT} user={self.user} dbname=postgres"

    def keeps_cluster_in_data_dir(self) -> bool:
        return self.pgdata.parent not in self._tmp

    def limit_bytes_seen(self) -> int | None:
        return cgroup.limit_bytes(cgroup.memory_dir_of(self.proc.pid)) if self.proc else None

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self, immediate: bool = False) -> None:
        """Fast shutdown (a shutdown checkpoint), or immediate where the cluster is deleted next: no
        checkpoint of shared_buffers into files no one will read."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for d in self._tmp:
            shutil.rmtree(d, ignore_errors=True)
        self._tmp.clear()


class ExternalServer:
    """A server this process did not start (the docker runtime's server container)."""

    def __init__(self, host: str, password: str, user: str) -> None:
        self.host, self.password, self.user = host, password, user

    def start(self) -> None:
        wait_ready(self.conninfo(), lambda: None,
                   lambda e: f"postgres at {self.host}:{PORT} not reachable after {START_TIMEOUT_S}s: {e}")

    def conninfo(self) -> str:
        return f"host={self.host} port={PORT} user={self.user} password={self.password} dbname=postgres"

    def limit_bytes_seen(self) -> int | None:
        return server_contract.data_limit_bytes_seen()

    def keeps_cluster_in_data_dir(self) -> bool:
        return True

    def log_tail(self, n: int = 30) -> str:
        return "(the server's log is in its container's output: compose.log)"

    def stop(self, immediate: bool = False) -> None:
        pass

"""Fixtures: the real hitboxd binary on a loopback port the kernel picks.

HITBOX_HITBOXD names the binary (CTest sets it); HITBOX_SOURCE_DIR the
repository (for examples/maps); HITBOX_CASES_DIR the case files.
"""
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

import hitbox

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("HITBOX_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..", "..")))
CASES_DIR = os.environ.get("HITBOX_CASES_DIR", os.path.join(SOURCE_DIR, "..", "shared", "cases"))
LEVELS_DIR = os.path.join(os.path.dirname(os.path.abspath(CASES_DIR)), "levels")


def hitboxd_path() -> str:
    path = os.environ.get("HITBOX_HITBOXD", os.path.join(SOURCE_DIR, "build", "bin", "hitboxd"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no hitboxd binary at {path!r}: set HITBOX_HITBOXD (CTest sets it)")
    return path


class Hitboxd:
    """One hitboxd process: `address`, `log()`, `stop()` (SIGTERM, returns the exit code), `kill()`."""

    def __init__(self, *flags: str):
        self.dir = tempfile.TemporaryDirectory(prefix="hitbox-py-")
        port_file = os.path.join(self.dir.name, "port")
        self.log_path = os.path.join(self.dir.name, "hitboxd.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [hitboxd_path(), "--listen", "127.0.0.1:0", "--port-file", port_file, "--threads", "2",
             "--shutdown-grace-ms", "300", *flags],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # The port file appears once hitboxd listens; it never does if hitboxd exits.
        deadline = time.monotonic() + 30
        port = ""
        while not port:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hitboxd exited with {self.proc.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"hitboxd wrote no port file in 30 s:\n{self.log()}")
            try:
                with open(port_file) as f:
                    port = f.read().strip()
            except FileNotFoundError:
                pass
            if not port:
                time.sleep(0.01)
        self.port = int(port)
        self.address = f"127.0.0.1:{self.port}"

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=30)
        self._log.close()
        return code

    def pause(self) -> None:
        """SIGSTOP, returning once hitboxd is stopped (a signal is delivered asynchronously)."""
        self.proc.send_signal(signal.SIGSTOP)
        os.waitpid(self.proc.pid, os.WUNTRACED)

    def resume(self) -> None:
        """SIGCONT after pause()."""
        self.proc.send_signal(signal.SIGCONT)
        os.waitpid(self.proc.pid, os.WCONTINUED)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def server():
    """A plain hitboxd (no credentials: local clients only) with the example maps."""
    d = Hitboxd("--maps", os.path.join(SOURCE_DIR, "examples", "maps"))
    yield d
    assert d.stop() == 0, d.log()


@pytest.fixture
def client(server):
    with hitbox.Client(server.address, hitbox.ClientOptions(timeout=10.0, wait_for_ready=True)) as c:
        yield c


_counter = [0]


@pytest.fixture
def session(client, request):
    """A fresh session named after the test, deleted afterwards."""
    _counter[0] += 1
    sid = re.sub(r"[^A-Za-z0-9.:-]", "-", f"{request.node.name[:80]}-{_counter[0]}")
    client.create_session(sid)
    yield sid
    try:
        client.delete_session(sid)
    except hitbox.errors.NotFound:
        pass

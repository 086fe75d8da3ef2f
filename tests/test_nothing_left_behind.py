"""What the tests start does not outlive them (tests/support/leftovers.py, kgbridge/server_process.py):
a server whose start fails is killed; a test stopped mid-way (pytest-timeout) leaves no process and no
mount; a test run killed outright (SIGKILL) leaves no server and no passthrough mount either. Real
`kgbridge serve`, real FUSE, a real inner pytest run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support.bridge_env import wait_for
from support.fuse_helpers import fuse_available
from support.leftovers import mounts_under, processes_under
from support.server_proc import ServerProcess

TESTS = Path(__file__).parent

INNER = textwrap.dedent('''
    import subprocess, sys, time
    from projection.mounts import fuse_available
    from support.fuse_helpers import start_passthrough
    from support.server_proc import ServerProcess

    def _start_everything(tmp_path):
        (tmp_path / "Knowledge").mkdir()
        server = ServerProcess(tmp_path / "Knowledge").start(timeout=60)
        if fuse_available():
            start_passthrough(tmp_path / "source", tmp_path / "mnt")
        return server

    def test_stopped_by_the_timeout(tmp_path):
        server = _start_everything(tmp_path)
        # a detached helper, as the hook's delivery worker is: its own session, the test's paths
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", str(tmp_path)],
                         start_new_session=True)
        time.sleep(600)  # pytest-timeout ends the test here: nothing after this line stops anything
        server.stop()

    def test_killed_with_the_run(tmp_path):
        _start_everything(tmp_path)
        (tmp_path.parent / "killable").write_text(str(tmp_path))
        time.sleep(600)
''')


def test_a_server_whose_start_fails_is_not_left_running(tmp_path: Path):
    root = tmp_path / "Knowledge"
    root.mkdir()
    server = ServerProcess(root)
    try:
        server.start(timeout=0.05)  # far too short for the interpreter to come up: the start raises
    except RuntimeError as exc:
        assert "did not come up" in str(exc)
    else:
        raise AssertionError("a server answered within 50 ms")
    assert server.proc is not None and server.proc.poll() is not None, "the server outlived its failed start"
    assert processes_under(root) == {}


def test_a_test_stopped_or_killed_mid_way_leaves_no_process_and_no_mount(tmp_path: Path):
    (tmp_path / "test_inner.py").write_text(INNER)
    base = tmp_path / "inner-run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "support.leftovers",
                            "--timeout", "15", "--basetemp", str(base), str(tmp_path / "test_inner.py")],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        # the first test timed out and was torn down; the second has started everything and hangs
        assert wait_for(lambda: (base / "killable").exists() or run.poll() is not None, timeout=240), "no start"
        assert run.poll() is None, run.communicate()[0].decode()[-3000:]
        first = base / "test_stopped_by_the_timeout0"
        assert processes_under(first) == {} and mounts_under(first) == []
        second = Path((base / "killable").read_text())
        assert processes_under(second), "the second test's server runs"
        assert mounts_under(second) or not fuse_available()
        os.kill(run.pid, signal.SIGKILL)  # no teardown, no end of session: the kernel tells the children
        run.wait()
        assert wait_for(lambda: not processes_under(second) and not mounts_under(second), timeout=30), \
            (processes_under(second), mounts_under(second))
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()

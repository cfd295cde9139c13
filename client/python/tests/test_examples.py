"""The README's Python snippet and examples/game_loop.py run against a real hitboxd as printed."""
import os
import re
import subprocess
import sys

from conftest import SOURCE_DIR

HERE = os.path.dirname(os.path.abspath(__file__))


def run(code_or_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, *([code_or_path] if os.path.exists(code_or_path) else ["-c", code_or_path]), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


# The README's snippet prints what its comment says.
def test_readme_snippet(server):
    with open(os.path.join(SOURCE_DIR, "README.md"), encoding="utf-8") as f:
        snippet = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    out = run(snippet.replace("127.0.0.1:50051", server.address))
    expected = re.search(r"print\(.*\)  # (.*)", snippet).group(1)
    assert out.strip() == expected


# The game loop runs its ticks: every player on the ground, shots hitting.
def test_game_loop_example(server):
    out = run(os.path.join(HERE, "..", "examples", "game_loop.py"), "--address", server.address,
              "--ticks", "60")
    assert "tick 60: 16/16 on ground, 16 shots hit" in out, out

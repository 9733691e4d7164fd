"""Every Python example of README.md and docs/ runs, as written.

The examples of one page run in order in one fresh interpreter, in a temporary directory, as a
reader would paste them. What a page leaves to the reader (``loader``, ``train``, a scheduler's
address, a worker's host name) is given by a prelude; addresses and paths are the only text
replaced. An example that needs what CI does not have (a Slurm or Kubernetes cluster,
Lightning) is compiled and listed with the reason. A new example without an entry in
`EXAMPLES` fails `test_every_example_has_an_entry`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.fixtures import REPO, tf_xplane

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_LOOP = "loader = batches = [1, 2, 3]\ndef train(batch): pass\ndef model(batch): return 0\n"


@dataclass
class Example:
    prelude: str = ""  # runs before the example (what the page leaves to the reader)
    replace: dict[str, str] = field(default_factory=dict)  # literal -> text, e.g. addresses
    after: str = ""  # runs after it: checks, and stopping what it started
    skip: str = ""  # why it cannot run here (it is still compiled)


_SERVER = """
import subprocess, sys
_WORKER = '''
import sys, time, stepscope, stepscope.server
server = stepscope.server.start(0)
print("READY", server.port, flush=True)
end = time.monotonic() + 60
step = 0
while time.monotonic() < end and sys.stdin.readable():
    with stepscope.step(step):
        time.sleep(0.01)
    step += 1
'''
workers = [subprocess.Popen([sys.executable, "-c", _WORKER], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True) for _ in range(2)]
PORTS = [int(w.stdout.readline().split()[1]) for w in workers]
"""

# (page, n-th python block of it, from 1) -> how it runs
EXAMPLES: dict[tuple[str, int], Example] = {
    ("README.md", 1): Example(prelude=_LOOP, after="assert run_dir.exists()"),
    ("README.md", 2): Example(after="assert overview.steps and 'rows' in data"),
    ("docs/bridges.md", 1): Example(prelude=_LOOP),
    ("docs/bridges.md", 2): Example(
        after="from stepscope.capture import bridges\n"
        "assert bridges._torch_settings == TorchSettings(profile_memory=True)\n"
        "bridges.configure()"
    ),
    ("docs/bridges.md", 3): Example(skip="needs Lightning and Hugging Face transformers"),
    ("docs/flight_recorder.md", 1): Example(prelude=_LOOP, after="stepscope.recorder.stop()"),
    ("docs/flight_recorder.md", 2): Example(after="stepscope.recorder.stop()"),
    ("docs/flight_recorder.md", 3): Example(
        prelude="rank = 0\nhosts = ['127.0.0.1']\nTOKEN = 'x' * 32\n",
        replace={"6009 + rank": "0", '"0.0.0.0"': '"127.0.0.1"'},
        after="stepscope.recorder.stop()\nserver.stop()",
    ),
    ("docs/pod_scale.md", 1): Example(
        prelude=(
            "from distributed import LocalCluster\n"
            "cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)\n"
        ),
        replace={
            '"tcp://scheduler:8786"': "cluster.scheduler_address",
            '"gs://bucket/logs/job/plugins/profile/run1"': "POD_RUN",
        },
        after="assert len(pod['steps']) and not run.failed()\nclient.close()\ncluster.close()",
    ),
    ("docs/pod_scale.md", 2): Example(skip="needs a Slurm cluster (dask-jobqueue)"),
    ("docs/pod_scale.md", 3): Example(skip="needs a Kubernetes cluster (dask-kubernetes)"),
    ("docs/query.md", 1): Example(
        prelude="RUN = POD_RUN\n",
        after="assert table.num_rows == 2 and frame.n.tolist() == table.column('n').to_pylist()\n"
        "assert len(db.df('SELECT * FROM steps')) == 8",
    ),
    ("docs/remote_capture.md", 1): Example(
        prelude=_LOOP, replace={"start(6009)": "start(0)"}, after="assert server.port"
    ),
    ("docs/remote_capture.md", 2): Example(
        prelude=_SERVER,
        replace={
            '"grpc://w1:6009,grpc://w2:6009"': 'f"grpc://127.0.0.1:{PORTS[0]},grpc://127.0.0.1:{PORTS[1]}"',
            '"grpc://w1:6009"': 'f"grpc://127.0.0.1:{PORTS[0]}"',
        },
        after="assert len(result.paths) == 2\nfor w in workers: w.kill()",
    ),
}


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _blocks(page: Path) -> list[str]:
    return [m.group(1) for m in _BLOCK.finditer(page.read_text())]


def test_every_example_has_an_entry() -> None:
    found = {
        (str(page.relative_to(REPO)), n)
        for page in _pages()
        for n, _ in enumerate(_blocks(page), 1)
    }
    assert sorted(found - set(EXAMPLES)) == [], "add the new examples to EXAMPLES"
    assert sorted(set(EXAMPLES) - found) == [], "remove entries of examples that are gone"


def _script(page: str, pod_run: Path) -> str:
    parts = [f"POD_RUN = {str(pod_run)!r}"]
    for n, block in enumerate(_blocks(REPO / page), 1):
        example = EXAMPLES[(page, n)]
        compile(block, f"{page} example {n}", "exec")  # even the ones that cannot run here
        if example.skip:
            continue
        code = block
        for old, new in example.replace.items():
            assert old in code, f"{page} example {n} no longer holds {old!r}"
            code = code.replace(old, new)
        parts += [example.prelude, code, example.after]
    return "\n".join(textwrap.dedent(p) for p in parts)


@pytest.mark.integration
@pytest.mark.parametrize(
    "page", sorted({page for page, _ in EXAMPLES}), ids=lambda p: p.replace("/", "_")
)
def test_examples_of_a_page_run(page: str, tmp_path: Path) -> None:
    pod_run = tmp_path / "pod" / "plugins" / "profile" / "run1"
    pod_run.mkdir(parents=True)
    for host in ("ctl", "ctl_opt"):
        (pod_run / f"{host}.xplane.pb").write_bytes(tf_xplane(host).read_bytes())
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "STEPSCOPE_CACHE_DIR": str(tmp_path / "cache"),
        "STEPSCOPE_BRIDGES": "auto",
    }
    proc = subprocess.run(
        [sys.executable, "-c", _script(page, pod_run)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"{page}: an example failed:\n{proc.stderr[-3000:]}"

"""A small log directory for the agent tests: runs copied from the shared fixtures (copies,
not links: the agent serves only files inside its log directory)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.fixtures import FIXTURES, tf_xplane

CTL = "tf/ctl/r1"  # TensorFlow CPU, 4 steps, input-bound
CTL_OPT = "tf/ctl_opt/r1"  # the same loop with a faster input pipeline
POD = "pod/r1"  # two hosts (copies of ctl): worker0, worker1
GPU = "gpu"  # Kineto: an A100 NCCL rank
GLOO = "gloo"  # Kineto: a CPU gloo rank (recorded months apart from the A100's: a run apart)


def make_logdir(root: Path) -> Path:
    for run, source, hosts in (
        (CTL, tf_xplane("ctl"), ("vm",)),
        (CTL_OPT, tf_xplane("ctl_opt"), ("vm",)),
        (POD, tf_xplane("ctl"), ("worker0", "worker1")),
    ):
        top, _, name = run.rpartition("/")
        directory = root / top / "plugins" / "profile" / name
        directory.mkdir(parents=True)
        for host in hosts:
            shutil.copy(source, directory / f"{host}.xplane.pb")
    for run, name in ((GPU, "a100_nccl_rank0.json.gz"), (GLOO, "cpu_only_gloo_rank34.json.gz")):
        (root / run).mkdir()
        shutil.copy(FIXTURES / "kineto" / name, root / run / name)
    return root

"""A captured worker's host file named as the user knows the worker (decision 1079).

TensorFlow's client names each file after the address it captured from
(``localhost_6009.xplane.pb``): two MultiWorkerMirroredStrategy workers on one machine read
"localhost_36331" and "localhost_59135" in every page, where the same job captured by
`stepscope.start` in each worker reads "vm.worker0" and "vm.worker1" (its ``TF_CONFIG`` task,
`stepscope.capture.job`). What each worker's own recording says of it names it instead:

- its TensorFlow task, from the devices its trace names (``/job:worker/replica:0/task:1/
  device:CPU:0``: "worker1"; a process outside a cluster is ``/job:localhost``, no task):
  TensorFlow's own profiler server records them as stepscope's does;
- its host's name, the XSpace's ``hostnames`` (a stepscope server in a job gives its job's
  name there, ``vm.worker1`` or ``vm.rank1``, as a local capture names its file).

A worker is named ``<host>.<task>`` (``<host>`` alone when it already ends with the task).
The names are used only when they tell the workers apart: all of them distinct when two or
more were saved (three plain workers on one machine all say "vm": they keep their
addresses), as file names too (`logdir.host_file_name` makes "h:1" and "h_1" one file: the
second rename would replace the first profile), and a lone worker only by its task.
Otherwise every file keeps its address.
"""

from __future__ import annotations

import re
from typing import Any

from stepscope.logdir import host_file_name

# A TensorFlow device's job and task: "/job:worker/replica:0/task:1/device:CPU:0"
_DEVICE = re.compile(r"^/job:([A-Za-z0-9_]{1,60})/replica:\d{1,9}/task:(\d{1,9})(?:/|$)")
LOCAL_JOB = "localhost"  # TensorFlow's job outside a cluster: no task of a job


def task_of(space: Any) -> str:
    """A TensorFlow worker's task ("worker1", "chief0") from the device names its recording
    holds (its planes' stat metadata: TensorFlow interns them there), or "" when it names
    none, only a local job's, or several."""
    found = set()
    for plane in space.planes:
        for meta in plane.stat_metadata.values():
            match = _DEVICE.match(meta.name)
            if match is not None and match.group(1) != LOCAL_JOB:
                found.add(match.group(1) + match.group(2))
    return found.pop() if len(found) == 1 else ""


def worker_name(space: Any, address: str) -> tuple[str, bool]:
    """(name, whether it holds the worker's task) of the worker at ``address`` by its own
    recording ``space`` (an XSpace message): ``<host>.<task>``, its host alone without a
    task, the address's host when the recording names none."""
    host = str(space.hostnames[0]) if len(space.hostnames) else address.rpartition(":")[0]
    task = task_of(space)
    if not task:
        return host, False
    return (host if host.endswith("." + task) else f"{host}.{task}"), True


def names_to_use(found: dict[str, tuple[str, bool]]) -> dict[str, str]:
    """The names to give the saved workers (address -> name; ``found``: `worker_name` of
    each), or {} when they do not tell the workers apart (see the module)."""
    names = {address: name for address, (name, _) in found.items() if name}
    if len(names) != len(found) or not names:
        return {}
    if len({host_file_name(name) for name in names.values()}) != len(names):
        return {}  # two names, one file (or one name twice)
    if len(names) == 1 and not next(iter(found.values()))[1]:
        return {}
    return names

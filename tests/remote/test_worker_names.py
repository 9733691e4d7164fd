"""A captured worker's file is named as the user knows the worker (decision 1079): two
MultiWorkerMirroredStrategy workers captured from their profiler servers read "vm.worker0"
and "vm.worker1", as the same job captured by `stepscope.start` does, not "localhost_36331"
and "localhost_59135"; workers whose recordings do not tell them apart keep their addresses."""

from __future__ import annotations

from pathlib import Path

from stepscope.capture.remote.client import CaptureJob
from stepscope.capture.remote.naming import names_to_use, task_of, worker_name
from stepscope.capture.remote.progress import OK
from stepscope.xspace.proto import profiler_service_pb2 as pb
from stepscope.xspace.proto.xplane_pb2 import XSpace


def _space(host: str, *devices: str) -> XSpace:
    """A worker's recording: its host name and the devices its events name (TensorFlow
    interns them as stat metadata)."""
    space = XSpace(hostnames=[host] if host else [])
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.stat_metadata[1].id, plane.stat_metadata[1].name = 1, "device"
    for k, device in enumerate(devices, start=2):
        plane.stat_metadata[k].id, plane.stat_metadata[k].name = k, device
    line = plane.lines.add(id=1, name="MainThread")
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, "train"
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    return space


def test_a_tensorflow_workers_task_comes_from_its_devices() -> None:
    cpu1 = "/job:worker/replica:0/task:1/device:CPU:0"
    assert task_of(_space("vm", cpu1)) == "worker1"
    assert worker_name(_space("vm", cpu1), "localhost:6009") == ("vm.worker1", True)
    # stepscope's server in a job names its host so already
    assert worker_name(_space("vm.worker1", cpu1), "localhost:6009") == ("vm.worker1", True)
    # outside a cluster TensorFlow's job is "localhost": no task
    local = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert worker_name(_space("vm", local), "h1:6009") == ("vm", False)
    # two tasks named (a chief's recording of its workers' devices): none is its own
    assert task_of(_space("vm", cpu1, "/job:worker/replica:0/task:0/device:CPU:0")) == ""
    # no host name: the address's
    assert worker_name(_space(""), "h1:6009") == ("h1", False)


def test_names_are_used_only_where_they_tell_the_workers_apart() -> None:
    two = {"localhost:1": ("vm.worker0", True), "localhost:2": ("vm.worker1", True)}
    assert names_to_use(two) == {"localhost:1": "vm.worker0", "localhost:2": "vm.worker1"}
    # two plain workers of one machine both say "vm": they keep their addresses
    assert names_to_use({"localhost:1": ("vm", False), "localhost:2": ("vm", False)}) == {}
    # a lone worker by its task only
    assert names_to_use({"localhost:1": ("vm", False)}) == {}
    assert names_to_use({"localhost:1": ("vm.worker1", True)}) == {"localhost:1": "vm.worker1"}


def _captured(tmp_path: Path, spaces: list[XSpace]) -> CaptureJob:
    """A capture whose workers each answered with ``spaces[k]``, saved as the client saves."""
    job = CaptureJob([f"localhost:{6000 + k}" for k in range(len(spaces))], tmp_path, 1000)
    for worker, space in zip(job.workers, spaces, strict=True):
        job._save(worker, pb.ProfileResponse(xspace=space))
        assert worker.state == OK and worker.path is not None
    assert job.wait()  # no thread: done, and the files named
    return job


def test_two_tensorflow_workers_are_saved_by_their_tasks(tmp_path: Path) -> None:
    devices = [f"/job:worker/replica:0/task:{k}/device:CPU:0" for k in (0, 1)]
    job = _captured(tmp_path, [_space("vm", d) for d in devices])
    names = [w.path.name for w in job.workers if w.path is not None]
    assert names == ["vm.worker0.xplane.pb", "vm.worker1.xplane.pb"]
    assert sorted(p.name for p in job.run_dir.iterdir()) == names
    assert "vm.worker1.xplane.pb" in job.workers[1].line()


def test_workers_not_told_apart_keep_their_addresses(tmp_path: Path) -> None:
    job = _captured(tmp_path, [_space("vm"), _space("vm"), _space("vm")])
    assert sorted(p.name for p in job.run_dir.iterdir()) == [
        f"localhost_{6000 + k}.xplane.pb" for k in range(3)
    ]


def test_names_saved_as_one_file_keep_their_addresses(tmp_path: Path) -> None:
    """Two names that differ only where a file name cannot ("h:1" and "h_1": a separator
    becomes "_") would be one file: the second rename would replace the first worker's
    profile. Both keep their addresses."""
    task0 = "/job:worker/replica:0/task:0/device:CPU:0"
    found = {"a:1": ("h:1.worker0", True), "a:2": ("h_1.worker0", True)}
    assert names_to_use(found) == {}
    job = _captured(tmp_path, [_space("h:1", task0), _space("h_1", task0)])
    assert sorted(p.name for p in job.run_dir.iterdir()) == [
        "localhost_6000.xplane.pb",
        "localhost_6001.xplane.pb",
    ]

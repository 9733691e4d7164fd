"""GPU kernel statistics: one row per unique (kernel, op) pair, built once per host.

Kernels are device-plane events with a ``kernel_details`` stat (XSpace from TensorFlow/JAX,
and Kineto kernels through the importer) or of category ``kernel``. The op of a kernel is,
in order: its own ``tf_op`` stat (a real op, not XLA's ``XlaModule:`` placeholder), its
``name`` stat (the framework op JAX records), the innermost host op enclosing its launch
(``correlation_id`` -> host event with that id -> enclosing event on that thread), else its
``hlo_op``. Rows keep text keys so several hosts merge by name.

TensorCore rules (XProf's ``xprof/utils/kernel_stats_utils.cc`` and newer kernels) live in
`stepscope.stats.gpu.tensor_core`.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.events import on_device_plane
from stepscope.stats.gpu.tensor_core import is_op_tensor_core_eligible, kernel_uses_tensor_core
from stepscope.stats.xla.xla_ops import xla_events

MAX_ROWS = 1000  # XProf keeps the top 1000 (kernel, op) pairs by total time
_NOT_OPS = ("python_function", "cuda_runtime", "cuda_driver", "cpu_instant_event")


@record
class KernelDetails:
    """A kernel's launch configuration, parsed from its details stat."""

    registers_per_thread: int = 0
    static_shmem_bytes: int = 0
    dynamic_shmem_bytes: int = 0
    block: tuple[int, int, int] = (0, 0, 0)
    grid: tuple[int, int, int] = (0, 0, 0)
    occupancy_pct: float | None = None


def _triple(text: str) -> tuple[int, int, int]:
    parts = [int(float(p)) if p.strip() else 1 for p in text.split(",")[:3]]
    parts += [1] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


def parse_kernel_details(text: str) -> KernelDetails:
    """``regs:R static_shared:S dynamic_shared:D grid:x,y,z block:x,y,z occ_pct:P``.

    AMD traces say ``group_mem`` (LDS, i.e. shared memory) and ``private_mem``; unknown keys
    are ignored, malformed values read as 0. ``occ_pct:0`` means "not measured".
    """
    values: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition(":")
        if sep:
            values[key] = value

    def number(key: str) -> int:
        try:
            return int(float(values.get(key, "0") or 0))
        except ValueError:
            return 0

    occupancy = None
    try:
        occ = float(values["occ_pct"])
        occupancy = occ if occ > 0 else None
    except (KeyError, ValueError):
        pass
    try:
        grid = _triple(values["grid"]) if "grid" in values else (0, 0, 0)
        block = _triple(values["block"]) if "block" in values else (0, 0, 0)
    except ValueError:
        grid = block = (0, 0, 0)
    return KernelDetails(
        registers_per_thread=number("regs"),
        static_shmem_bytes=number("static_shared") or number("group_mem"),
        dynamic_shmem_bytes=number("dynamic_shared"),
        block=block,
        grid=grid,
        occupancy_pct=occupancy,
    )


@record
class KernelRow:
    """One (kernel, op, launch configuration) of the kernel table with its times."""

    kernel_name: str
    op_name: str
    occurrences: int
    total_ns: int
    min_ns: int
    max_ns: int
    details: KernelDetails
    launch_configs: int  # distinct kernel_details seen for this pair (1 = always the same)
    uses_tensor_core: bool
    op_tensor_core_eligible: bool
    occupancy_pct: float | None  # duration-weighted mean where measured
    hlo_ops: tuple[str, ...] = ()  # HLO instructions the kernels ran for (XLA), sorted


@record
class KernelDb:
    """All (kernel, op) rows of one host (or several merged), sorted by total time."""

    rows: tuple[KernelRow, ...]
    kernel_count: int  # kernel executions
    device_count: int
    total_ns: int  # sum of kernel durations
    truncated_rows: int = 0  # pairs beyond MAX_ROWS left out
    devices: tuple[str, ...] = field(default=())


def kernel_events(profile: Profile) -> np.ndarray:
    """Event indices of GPU kernels on device planes."""
    on_device = np.zeros(profile.n_events, dtype=bool)
    for plane in profile.planes:
        if plane.is_device:
            on_device[profile.events_of_plane(plane)] = True
    if not on_device.any():
        return np.zeros(0, dtype=np.int64)
    is_kernel = profile.stat_present("kernel_details")
    category = profile.stat("category").string_ids()
    kernel_id = profile.strings.id_of("kernel")
    if kernel_id >= 0:
        is_kernel = is_kernel | (category == kernel_id)
    return np.flatnonzero(on_device & is_kernel)


def host_event_mask(profile: Profile) -> np.ndarray:
    """Per event: True on host planes (every plane that is not a device)."""
    host = np.zeros(profile.n_events, dtype=bool)
    for plane in profile.planes:
        if not plane.is_device:
            host[profile.events_of_plane(plane)] = True
    return host


def launch_events(
    profile: Profile, device_events: np.ndarray, *, cached: bool = True
) -> np.ndarray:
    """Per device event: the host event with the same ``correlation_id`` (its launch), or -1.
    ``cached``: the launch of every event with a correlation id is found once and kept with
    the profile (the kernel and diagnostic tools ask about 8 times, mostly of the same
    kernels); the step database asks once, under its memory peak, and does not."""
    out = np.full(len(device_events), -1, dtype=np.int64)
    if cached:  # every event with a correlation id and its launch, found once
        having, launch = profile.derived("kernels.launch_of", lambda: _launch_of(profile))
        if len(having) and len(device_events):
            at = np.minimum(np.searchsorted(having, device_events), len(having) - 1)
            hit = having[at] == device_events
            out[hit] = launch[at[hit]]
        return out
    return _launches_of(profile, device_events, _launch_index(profile))


def _launch_of(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(the events with a correlation id, ascending; `launch_events` of each), read-only."""
    having = profile.stat_events("correlation_id")
    launches = profile.derived("kernels.launch_index", lambda: _launch_index(profile))
    launch = _launches_of(profile, having, launches)
    having.flags.writeable = launch.flags.writeable = False
    return having, launch


def _launches_of(
    profile: Profile, device_events: np.ndarray, index: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """`launch_events` of ``device_events`` from the launches' index (`_launch_index`)."""
    out = np.full(len(device_events), -1, dtype=np.int64)
    corr = profile.stat_at("correlation_id", device_events)
    if not corr.present.any():
        return out
    launches, keys = index
    if len(launches) == 0:
        return out
    wanted = corr.as_int()
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    matched = corr.present & (keys[pos] == wanted)
    out[matched] = launches[pos[matched]]
    return out


def _launches(profile: Profile) -> np.ndarray:
    """Every possible launch: the host events with a correlation id, ascending."""
    events = profile.stat_events("correlation_id")
    return events[~on_device_plane(profile, events)]


def _launch_index(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(host events with a correlation id sorted by it, stably; their correlation ids)."""
    launches = _launches(profile)
    values = profile.stat_at("correlation_id", launches).as_int()
    order = np.argsort(values, kind="stable")
    return launches[order], values[order]


def op_candidates(profile: Profile) -> np.ndarray:
    """Per event: True for host events that can be "the op" around a launch or an allocation
    (not launches themselves, Python frames or instants). Made once per profile (the kernel
    table and three diagnostics ask), read-only."""
    return profile.derived("kernels.op_candidates", lambda: _op_candidates(profile))


def _op_candidates(profile: Profile) -> np.ndarray:
    category = profile.stat("category").string_ids()
    candidates = host_event_mask(profile) & ~profile.stat_present("correlation_id")
    for name in _NOT_OPS:
        sid = profile.strings.id_of(name)
        if sid >= 0:
            candidates &= category != sid
    candidates.flags.writeable = False
    return candidates


def _launch_ops(profile: Profile, kernels: np.ndarray) -> np.ndarray:
    """Per kernel: string id of the host op enclosing its launch, or -1."""
    out = np.full(len(kernels), -1, dtype=np.int64)
    launch = launch_events(profile, kernels)
    matched = launch >= 0
    if not matched.any():
        return out
    launches, op_of_launch = profile.derived(
        "kernels.launch_ops", lambda: _ops_of_launches(profile)
    )
    out[matched] = op_of_launch[np.searchsorted(launches, launch[matched])]
    return out


def _ops_of_launches(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(every possible launch: host events with a correlation id, sorted; the string id of the
    op enclosing each, or -1), computed once: the kernel table, the launch-bound and copy
    checks all ask for the ops of overlapping sets of kernels."""
    launches = _launches(profile)
    enclosing = innermost_enclosing(profile, launches, op_candidates(profile))
    return launches, np.where(enclosing >= 0, profile.name[np.maximum(enclosing, 0)], -1)


def _own_op(profile: Profile, kernels: np.ndarray) -> np.ndarray:
    """Per kernel: string id of the op named by its own stats (tf_op, then name), or -1."""
    out = np.full(len(kernels), -1, dtype=np.int64)
    for stat in ("tf_op", "name"):
        ids = profile.stat_at(stat, kernels).string_ids()
        if stat == "tf_op":
            bad = {i for i, s in _texts(profile, ids).items() if not s or s.endswith(":")}
            if bad:
                ids = np.where(np.isin(ids, list(bad)), -1, ids)
        out = np.where(out >= 0, out, ids)
    return out


def _texts(profile: Profile, ids: np.ndarray) -> dict[int, str]:
    return {i: profile.strings[i] for i in distinct(ids).tolist() if i >= 0}


def op_of_kernels(
    profile: Profile, kernels: np.ndarray, framework_only: bool = False
) -> np.ndarray:
    """Per kernel: string id of its op ('' when nothing names one)."""
    # XLA kernels: the framework op of their HLO instruction (XProf's choice), which beats
    # the ``XlaModule:`` placeholder and the ``name`` stat JAX copies from a fused op; for
    # instructions XLA made up, their HLO name, or '' as XProf's kernel stats with
    # ``framework_only``.
    op = xla_events(profile).op_name_ids(kernels, framework_only)
    missing = op < 0
    if missing.any():
        op[missing] = _own_op(profile, kernels[missing])
    missing = op < 0
    if missing.any():
        op[missing] = _launch_ops(profile, kernels[missing])
    missing = op < 0
    if missing.any():
        op[missing] = profile.stat("hlo_op").string_ids()[kernels[missing]]
    empty = profile.strings.id_of("")
    return np.where(op >= 0, op, empty)


def _hlo_ops_of_groups(
    profile: Profile, kernels: np.ndarray, group: np.ndarray, n: int
) -> dict[int, tuple[str, ...]]:
    """Row group -> the sorted HLO instruction names of its XLA kernels."""
    xla = xla_events(profile)
    index = xla.op_index[kernels] if xla else np.full(len(kernels), -1)
    mine = index >= 0
    if not mine.any():
        return {}
    pairs = distinct(group[mine].astype(np.int64) * (len(xla.ops) + 1) + index[mine])
    out: dict[int, list[str]] = {}
    for g, k in zip(
        (pairs // (len(xla.ops) + 1)).tolist(), (pairs % (len(xla.ops) + 1)).tolist(), strict=True
    ):
        out.setdefault(g, []).append(xla.ops[k].name)
    return {g: tuple(sorted(names)) for g, names in out.items() if g < n}


def build_kernel_db(
    profile: Profile, max_rows: int = MAX_ROWS, from_ns: int | None = None
) -> KernelDb:
    """The kernel table; with ``from_ns``, of the kernels that start then or later."""
    kernels = kernel_events(profile)
    if from_ns is not None:
        kernels = kernels[profile.start_ns[kernels] >= from_ns]
    devices = tuple(p.name for p in profile.planes if p.is_device and p.line_count)
    if len(kernels) == 0:
        return KernelDb((), 0, len(devices), 0, devices=devices)
    ops = op_of_kernels(profile, kernels, framework_only=True)
    names = profile.name[kernels].astype(np.int64)
    dur = profile.dur_ns[kernels]
    details_ids = profile.stat("kernel_details").string_ids()[kernels]
    parsed: dict[int, KernelDetails] = {}
    detail_ids, detail_of = distinct_inverse(details_ids)
    for sid in detail_ids.tolist():
        parsed[sid] = parse_kernel_details(profile.strings[sid]) if sid >= 0 else KernelDetails()
    # per distinct details string, then per kernel (NaN: not measured, or 0)
    occupancy = [parsed[sid].occupancy_pct or np.nan for sid in detail_ids.tolist()]
    occ = np.array(occupancy, dtype=float)[detail_of]

    key = names * (len(profile.strings) + 1) + ops
    pairs, group = distinct_inverse(key)
    n = len(pairs)
    total = np.bincount(group, weights=dur, minlength=n).astype(np.int64)
    count = np.bincount(group, minlength=n)
    mins = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.zeros(n, dtype=np.int64)
    np.minimum.at(mins, group, dur)
    np.maximum.at(maxs, group, dur)
    measured = ~np.isnan(occ)
    occ_weight = np.bincount(group[measured], weights=dur[measured], minlength=n)
    occ_sum = np.bincount(group[measured], weights=(occ * dur)[measured], minlength=n)
    first = np.full(n, len(kernels), dtype=np.int64)
    np.minimum.at(first, group, np.arange(len(kernels)))
    configs = distinct(group.astype(np.int64) * (len(profile.strings) + 2) + details_ids + 1)
    n_configs = np.bincount(configs // (len(profile.strings) + 2), minlength=n)

    hlo_ops = _hlo_ops_of_groups(profile, kernels, group, n)
    order = np.lexsort((pairs, -total))
    kept = order[:max_rows]
    strings = profile.strings
    rows = []
    for g in kept.tolist():
        kernel_name = strings[int(names[first[g]])]
        op_name = strings[int(ops[first[g]])]
        weight = occ_weight[g]
        uses_tc = kernel_uses_tensor_core(kernel_name)
        rows.append(
            KernelRow(
                kernel_name=kernel_name,
                op_name=op_name,
                occurrences=int(count[g]),
                total_ns=int(total[g]),
                min_ns=int(mins[g]),
                max_ns=int(maxs[g]),
                details=parsed[int(details_ids[first[g]])],
                launch_configs=int(n_configs[g]),
                uses_tensor_core=uses_tc,
                # XProf: an op whose kernel runs on TensorCores is eligible whatever its name
                op_tensor_core_eligible=uses_tc or is_op_tensor_core_eligible(op_name),
                occupancy_pct=float(occ_sum[g] / weight) if weight > 0 else None,
                hlo_ops=hlo_ops.get(g, ()),
            )
        )
    return KernelDb(
        tuple(rows),
        kernel_count=len(kernels),
        device_count=len(devices),
        total_ns=int(dur.sum()),
        truncated_rows=max(0, n - max_rows),
        devices=devices,
    )


def merge_kernel_dbs(dbs: list[KernelDb], max_rows: int = MAX_ROWS) -> KernelDb:
    """Several hosts' rows merged by (kernel, op) text."""
    if len(dbs) == 1:
        return dbs[0]
    merged: dict[tuple[str, str], KernelRow] = {}
    for db in dbs:
        for row in db.rows:
            key = (row.kernel_name, row.op_name)
            old = merged.get(key)
            merged[key] = row if old is None else _merge_rows(old, row)
    rows = sorted(merged.values(), key=lambda r: (-r.total_ns, r.kernel_name, r.op_name))
    return KernelDb(
        tuple(rows[:max_rows]),
        kernel_count=sum(db.kernel_count for db in dbs),
        device_count=sum(db.device_count for db in dbs),
        total_ns=sum(db.total_ns for db in dbs),
        truncated_rows=max(0, len(rows) - max_rows) + sum(db.truncated_rows for db in dbs),
        devices=tuple(d for db in dbs for d in db.devices),
    )


def _merge_rows(a: KernelRow, b: KernelRow) -> KernelRow:
    occupancy = a.occupancy_pct
    if a.occupancy_pct is not None and b.occupancy_pct is not None:
        occupancy = (a.occupancy_pct * a.total_ns + b.occupancy_pct * b.total_ns) / max(
            1, a.total_ns + b.total_ns
        )
    elif occupancy is None:
        occupancy = b.occupancy_pct
    return KernelRow(
        a.kernel_name,
        a.op_name,
        a.occurrences + b.occurrences,
        a.total_ns + b.total_ns,
        min(a.min_ns, b.min_ns),
        max(a.max_ns, b.max_ns),
        a.details,
        max(a.launch_configs, b.launch_configs) + int(a.details != b.details),
        a.uses_tensor_core,
        a.op_tensor_core_eligible,
        occupancy,
        tuple(sorted(set(a.hlo_ops) | set(b.hlo_ops))),
    )

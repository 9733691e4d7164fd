"""The tables over the tools' intermediates: ``ops``, ``kernels``, ``collectives``, ``memory``.

Each is built from the same per-host intermediate the tool reads (op metrics for op_stats,
the kernels of kernel_stats, the collective calls of the pod viewer), so its numbers are the
tool's: ``ops`` holds op_stats' rows in nanoseconds; ``kernels`` holds every kernel
execution, whose sums by (kernel, op) are kernel_stats' rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stepscope.sql import arrow
from stepscope.sql.steps import step_columns

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.model import Profile
    from stepscope.stats import OpMetrics, StepDb
    from stepscope.stats.collective_calls import CollectiveCalls

OPS_COLUMNS = {
    "host": "the host",
    "side": "`host` or `device` (op_stats' two tables)",
    "type": "op type (`MatMul`, `aten::mm`, `Collective`, `MemcpyHToD`...)",
    "name": "op name",
    "occurrences": "times the op ran",
    "total_ns": "time including nested ops (ns)",
    "self_ns": "time excluding nested ops (ns)",
    "eager_self_ns": "self time of the occurrences that ran eagerly (ns)",
    "flops": "sum of the `flops` stat (0 where unknown)",
}
KERNELS_COLUMNS = {
    "host": "the host",
    "event_id": "the kernel's event (`events.event_id`)",
    "device": "the device plane (`/device:GPU:0`)",
    "stream": "the stream line",
    "kernel_name": "the kernel",
    "op_name": "its op, as kernel_stats pairs them ('' when nothing names one)",
    "start_ns": "start on the host's profile clock (ns)",
    "dur_ns": "duration (ns)",
    "step_num": "the step whose span holds the kernel's start (NULL outside steps)",
    "step": "that step's name",
    "correlation_id": "the launch's correlation id",
    "registers_per_thread": "registers per thread",
    "static_shmem_bytes": "static shared memory per block (bytes)",
    "dynamic_shmem_bytes": "dynamic shared memory per block (bytes)",
    "grid": "grid dimensions `x,y,z`",
    "block": "block dimensions `x,y,z`",
    "occupancy_pct": "occupancy where the trace measured it, else NULL (%)",
    "uses_tensor_core": "the kernel uses TensorCores (kernel_stats' rule)",
}
COLLECTIVES_COLUMNS = {
    "host": "the host (rank)",
    "layer": "what the calls are: `device kernels` (NCCL/RCCL), `host collectives` (gloo, "
    "MPI...) or `dispatch ops` (c10d ops only)",
    "lane": "the collective's kind and process group (`all_reduce 0`)",
    "seq": "its sequence number in its group where the trace records it, else NULL",
    "step_num": "the step the call belongs to (a kernel: the step of its launch), NULL outside",
    "ordinal": "its position among its step's calls of its lane",
    "arrive_ns": "when the rank arrived (the call's start, ns)",
    "exit_ns": "when it left (the call's end, ns)",
    "dur_ns": "`exit_ns - arrive_ns`: waiting for the other ranks, then the transfer (ns)",
}
MEMORY_COLUMNS = {
    "host": "the host",
    "event_id": "the allocator event (`events.event_id`)",
    "allocator": "the allocator (memory id: `GPU_0_bfc`, `cuda:0`, `cpu`...)",
    "time_ns": "when, on the host's profile clock (ns)",
    "kind": "`allocation` or `deallocation`",
    "address": "the block's address",
    "requested_bytes": "bytes asked for",
    "allocation_bytes": "bytes the allocator gave",
    "heap_bytes": "bytes in use after the event (`bytes_allocated`)",
    "stack_bytes": "bytes reserved (`bytes_reserved`)",
    "free_bytes": "bytes available (`bytes_available`)",
    "peak_bytes_in_use": "the allocator's peak so far",
    "op": "the op that allocated (`tf_op`; '' when unknown)",
    "region_type": "region type (`output`, `temp`...)",
    "data_type": "the tensor's data type",
    "shape": "the tensor's shape",
    "step_num": "the step whose span holds the event (NULL outside steps)",
}


def collective_columns() -> dict[str, str]:
    from stepscope.stats.events import CATEGORY_NAMES

    return {
        **COLLECTIVES_COLUMNS,
        **{
            f"runup_{name}_ns": f"time in `{name}` from the previous call to this arrival (ns)"
            for name in CATEGORY_NAMES
        },
    }


def ops_table(host: str, metrics: OpMetrics) -> pa.Table:
    import pyarrow as pa

    parts = []
    for table in (metrics.device, metrics.host):
        n = len(table)
        parts.append(
            arrow.table(
                {
                    "host": arrow.constant(host, n),
                    "side": arrow.constant(table.side, n),
                    "type": arrow.utf8(table.types),
                    "name": arrow.utf8(table.names),
                    "occurrences": arrow.numbers(np.asarray(table.occurrences, np.int64)),
                    "total_ns": arrow.numbers(np.asarray(table.total_ns, np.int64)),
                    "self_ns": arrow.numbers(np.asarray(table.self_ns, np.int64)),
                    "eager_self_ns": arrow.numbers(np.asarray(table.eager_self_ns, np.int64)),
                    "flops": arrow.numbers(np.asarray(table.flops, np.float64)),
                }
            )
        )
    return pa.concat_tables(parts)


def kernels_table(host: str, profile: Profile, db: StepDb) -> pa.Table:

    from stepscope.stats.gpu.kernels import kernel_events, op_of_kernels, parse_kernel_details
    from stepscope.stats.gpu.tensor_core import kernel_uses_tensor_core

    kernels = kernel_events(profile)
    n = len(kernels)
    strings = arrow.strings(profile)
    ops = op_of_kernels(profile, kernels, framework_only=True) if n else kernels
    details = profile.stat_at("kernel_details", kernels).string_ids()
    used = np.unique(details)
    parsed = [
        parse_kernel_details(profile.strings[int(i)]) if i >= 0 else None for i in used.tolist()
    ]
    at = np.searchsorted(used, details)

    def detail(get: object) -> np.ndarray:
        values = np.array([get(d) if d else 0 for d in parsed], dtype=np.int64)  # type: ignore[operator]
        return values[at] if n else np.zeros(0, np.int64)

    occupancy = np.array(
        [d.occupancy_pct if d and d.occupancy_pct is not None else np.nan for d in parsed]
    )
    occ = occupancy[at] if n else np.zeros(0)
    name_ids = profile.name[kernels]
    distinct_names = np.unique(name_ids)
    tc = np.array([kernel_uses_tensor_core(profile.strings[int(i)]) for i in distinct_names])
    uses_tc = tc[np.searchsorted(distinct_names, name_ids)] if n else np.zeros(0, bool)
    plane_names = [p.name for p in profile.planes]
    correlation = profile.stat_at("correlation_id", kernels)
    start = profile.start_ns[kernels]
    return arrow.table(
        {
            "host": arrow.constant(host, n),
            "event_id": arrow.numbers(kernels.astype(np.int64)),
            "device": arrow.labels(profile.plane[kernels], plane_names),
            "stream": arrow.labels(profile.line[kernels], [x.label for x in profile.lines]),
            "kernel_name": arrow.text(name_ids, strings),
            "op_name": arrow.text(ops, strings),
            "start_ns": arrow.numbers(start),
            "dur_ns": arrow.numbers(profile.dur_ns[kernels]),
            **step_columns(db, start),
            "correlation_id": arrow.numbers(correlation.as_int(), correlation.present),
            "registers_per_thread": arrow.numbers(detail(lambda d: d.registers_per_thread)),
            "static_shmem_bytes": arrow.numbers(detail(lambda d: d.static_shmem_bytes)),
            "dynamic_shmem_bytes": arrow.numbers(detail(lambda d: d.dynamic_shmem_bytes)),
            "grid": arrow.labels(at, [",".join(map(str, d.grid)) if d else None for d in parsed]),
            "block": arrow.labels(at, [",".join(map(str, d.block)) if d else None for d in parsed]),
            "occupancy_pct": arrow.numbers(occ, ~np.isnan(occ)),
            "uses_tensor_core": arrow.numbers(np.asarray(uses_tc, dtype=bool)),
        }
    )


def collectives_table(host: str, calls: CollectiveCalls, db: StepDb) -> pa.Table:
    from stepscope.stats.events import CATEGORY_NAMES

    n = calls.n_calls
    inside = calls.step >= 0
    numbers = (
        np.asarray(db.step_num, np.int64)[np.maximum(calls.step, 0)] if db.n_steps else calls.step
    )
    columns = {
        "host": arrow.constant(host, n),
        "layer": arrow.constant(calls.layer, n),
        "lane": arrow.labels(calls.lane, list(calls.lanes)),
        "seq": arrow.numbers(calls.seq, calls.seq >= 0),
        "step_num": arrow.numbers(np.asarray(numbers, np.int64), inside),
        "ordinal": arrow.numbers(calls.ordinal),
        "arrive_ns": arrow.numbers(calls.arrive_ns),
        "exit_ns": arrow.numbers(calls.exit_ns),
        "dur_ns": arrow.numbers(calls.exit_ns - calls.arrive_ns),
    }
    for c, name in enumerate(CATEGORY_NAMES):
        runup = calls.runup_ns[:, c] if calls.runup_measured else np.zeros(n, np.int64)
        columns[f"runup_{name}_ns"] = arrow.numbers(
            np.ascontiguousarray(runup, np.int64), np.full(n, calls.runup_measured)
        )
    return arrow.table(columns)


def memory_table(host: str, profile: Profile, db: StepDb) -> pa.Table:
    from stepscope.stats.memory import (
        allocator_names,
        data_type_name,
        memory_events,
        shape_ids,
    )

    events = memory_events(profile)
    n = len(events)
    strings = arrow.strings(profile)
    allocators = allocator_names(profile, events)
    distinct_allocators = sorted(set(allocators))
    index = {a: k for k, a in enumerate(distinct_allocators)}
    data_types = profile.stat_at("data_type", events)
    dtype_values = data_types.as_int(0)
    used_types = np.unique(dtype_values)
    dtype_names = [data_type_name(int(v)) for v in used_types.tolist()]
    alloc = profile.strings.id_of("MemoryAllocation")

    def number(stat: str) -> pa.Array:
        column = profile.stat_at(stat, events)
        return arrow.numbers(column.as_int(0), column.present)

    def text(stat: str) -> pa.Array:
        return arrow.text(profile.stat_at(stat, events).string_ids(), strings)

    when = profile.start_ns[events]
    steps = step_columns(db, when)
    return arrow.table(
        {
            "host": arrow.constant(host, n),
            "event_id": arrow.numbers(events.astype(np.int64)),
            "allocator": arrow.labels(
                np.array([index[a] for a in allocators], np.int32), distinct_allocators
            ),
            "time_ns": arrow.numbers(when),
            "kind": arrow.labels(
                (profile.name[events] != alloc).astype(np.int32), ["allocation", "deallocation"]
            ),
            "address": number("addr"),
            "requested_bytes": number("requested_bytes"),
            "allocation_bytes": number("allocation_bytes"),
            "heap_bytes": number("bytes_allocated"),
            "stack_bytes": number("bytes_reserved"),
            "free_bytes": number("bytes_available"),
            "peak_bytes_in_use": number("peak_bytes_in_use"),
            "op": text("tf_op"),
            "region_type": text("region_type"),
            "data_type": arrow.labels(
                np.where(data_types.present, np.searchsorted(used_types, dtype_values), -1),
                dtype_names,
            ),
            "shape": arrow.text(shape_ids(profile, events, -1), strings),
            "step_num": steps["step_num"],
        }
    )

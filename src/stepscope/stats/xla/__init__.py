"""XLA programs: device events tied to their HLO instruction, and what the XLA tools (HLO
stats, op profile, roofline, graph and memory viewers) compute from the HLO.

- `xla_ops`: device events of XLA programs and the instruction each ran;
- `xla_op`: one HLO instruction as the tools show it, and its HLO text;
- `xla_metrics`: time, FLOPs and bytes per instruction (the tools' shared table);
- `hlo_cost`, `hlo_cycles`, `hlo_shapes`: FLOPs and bytes of an instruction from the HLO;
- `hlo_memory`: a program's buffers and heap (memory viewer).
"""

"""GPUs: the devices of a profile, their kernels, and what the GPU tools compute from them.

- `device`: the devices, their utilization and compute by precision;
- `device_caps`: peak compute and memory bandwidth (the roofs of op profile and roofline);
- `kernels`: every kernel with its op, launch configuration and TensorCore use (kernel stats,
  diagnostics);
- `tensor_core`: which kernels and ops use (or could use) matrix units;
- `torch_cost`: FLOPs and bytes of PyTorch ops from their shapes, charged to their kernels.

Kernel naming rules (which library kernels use matrix units, at what precision) are in
`stepscope.stats.kernel_rules`, which event typing reads too.
"""

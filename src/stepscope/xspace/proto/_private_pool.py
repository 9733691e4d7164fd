"""The descriptor pool for stepscope's protobuf messages.

TensorFlow, JAX and XProf register messages with the same full names
(``tensorflow.profiler.XSpace``) in protobuf's default pool; keeping ours in a separate pool
lets all of them live in one process. The wire format is identical.
"""

from google.protobuf import descriptor_pool

POOL = descriptor_pool.DescriptorPool()

"""Pod-wide name ids: one id per text whatever the host, a window's names renumbered densely."""

from __future__ import annotations

import numpy as np

from stepscope.model.strings import StringTable
from stepscope.tools.trace_viewer.pod_names import PodNames


def test_same_text_same_id_across_hosts_and_dense_window_numbering() -> None:
    names = PodNames()
    a = StringTable(["", "matmul", "relu", "conv"])
    b = StringTable(["conv", "", "softmax", "matmul"])
    ids_a = names.pod_ids(0, a, np.array([1, 3, 1, 2]))
    ids_b = names.pod_ids(1, b, np.array([0, 3, 2]))
    assert ids_b[0] == ids_a[1]  # conv
    assert ids_b[1] == ids_a[0]  # matmul
    assert len(set(ids_a.tolist()) | set(ids_b.tolist())) == 4
    # Seen again (the map is kept): the same ids, however the ids come.
    assert names.pod_ids(0, a, np.array([2, 2, 1])).tolist() == [ids_a[3], ids_a[3], ids_a[0]]
    column, texts = names.compact(ids_b)
    assert [texts[i] for i in column.tolist()] == ["conv", "matmul", "softmax"]
    assert sorted(set(column.tolist())) == list(range(len(texts)))
    empty, none = names.compact(np.zeros(0, dtype=np.int32))
    assert len(empty) == 0 and none == []

"""The PyTorch (Kineto) trace path imports no protobuf: import + overview of a JSON trace in a
fresh interpreter leaves ``google.protobuf`` out of ``sys.modules`` (it costs 16-30 ms of CPU
and 2.6 MB on every trace opened)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.fixtures import FIXTURES
from tests.support.scripts import fresh_python

pytestmark = pytest.mark.untimed  # reads no timing: CI runs it beside other tests

_SCRIPT = """
import json, sys
from stepscope.cli.main import main
try:
    main(["tool", sys.argv[1], "overview_page", "--no-cache"])
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = ("google.protobuf", "stepscope.xspace.proto")
print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
"""


@pytest.mark.integration  # a fresh interpreter
def test_kineto_overview_imports_no_protobuf(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json.gz"
    shutil.copy(FIXTURES / "kineto" / "a100_triton_tiny.json.gz", trace)
    assert fresh_python(_SCRIPT, str(trace)).splitlines()[-1] == "[]"


_LIBRARY_SCRIPT = """
import json, sys
from stepscope.model.runs import single_file_run
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
run = single_file_run(sys.argv[1])
get_tool("overview_page").build(ToolContext(run, run.host_names[0], ProfileStore(use_cache=False)))
unused = ("_hashlib", "socket", "shutil", "tempfile", "numpy.ma", "stepscope.store.entries",
          "stepscope.capture.session", "stepscope.xspace.kineto.json_repair",
          "stepscope.stats.stragglers", "stepscope.stats.gpu.torch_cost",
          "stepscope.stats.input.tf_data",
          "csv", "stepscope.model.hlo", "stepscope.stats.xla.xla_op", "msgspec")
print(json.dumps(sorted(m for m in sys.modules if m in unused)))
"""


@pytest.mark.integration  # a fresh interpreter
def test_uncached_overview_imports_no_store_upkeep(tmp_path: Path) -> None:
    """Without the store, an analysis imports neither OpenSSL (hashlib: 3.6 MB) nor the
    modules of saving and store upkeep (socket, shutil, tempfile: 1.6 MB, 6 ms), nor
    numpy.ma (7-8 ms, loaded by the first hash-table ``np.unique``: `stepscope.distinct`),
    nor modules a single PyTorch host's overview does not run: the store, the capture API,
    the JSON repair, stragglers across hosts, PyTorch op costs, the
    tf.data analysis (no ``Iterator::`` events), CSV, the HLO reader (no ``hlo_op`` stats),
    msgspec (9-10 ms: the C scanner's route decodes the header and JSON args with json)."""
    trace = tmp_path / "trace.json.gz"
    shutil.copy(FIXTURES / "kineto" / "a100_triton_tiny.json.gz", trace)
    assert fresh_python(_LIBRARY_SCRIPT, str(trace)).splitlines()[-1] == "[]"

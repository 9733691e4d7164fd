"""The columnar event model every analysis works on, whatever the source."""

from stepscope.logdir import ALL_HOSTS
from stepscope.model.from_xspace import load_profile, profile_from_bytes, profile_from_xspace
from stepscope.model.load import open_file, open_host
from stepscope.model.profile import Line, Plane, Profile, StatColumn, Stats
from stepscope.model.runs import HostFile, Run, discover_runs, open_run
from stepscope.model.strings import StringTable

__all__ = [
    "ALL_HOSTS",
    "HostFile",
    "Line",
    "Plane",
    "Profile",
    "Run",
    "StatColumn",
    "Stats",
    "StringTable",
    "discover_runs",
    "load_profile",
    "open_file",
    "open_host",
    "open_run",
    "profile_from_bytes",
    "profile_from_xspace",
]

"""Where the shared fixtures are, and the files of the TensorFlow ones."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"


def tf_xplane(name: str) -> Path:
    """The .xplane.pb of a TensorFlow fixture folder (ctl, ctl_opt, keras, keras_marked, remote)."""
    return next((FIXTURES / "tf" / name).rglob("*.xplane.pb"))

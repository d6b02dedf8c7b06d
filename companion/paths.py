"""The repository's folders: the companion lives in the repository, so it knows where they are
(the library :mod:`cnce` does not; the companion passes these folders to it)."""
from __future__ import annotations

from pathlib import Path

#: the repository that holds this package
REPO_ROOT = Path(__file__).resolve().parent.parent
#: the repository's data folder (results/, weights/, checks/): what the companion passes to cnce
DATA = REPO_ROOT / "data"

__all__ = ["REPO_ROOT", "DATA"]

"""Every committed check file of the image page (``data/checks/image-*.json``, written by
``scripts/image_{claims,layer1,settings}.py``) came from a clean commit of this repository, and
so did every group it kept from an earlier commit (``--adopt``)."""
from __future__ import annotations

import pytest

from cnce import provenance
from cnce.images import claims
from companion.paths import REPO_ROOT

FILES = sorted((REPO_ROOT / "data" / "checks").glob("image-*.json"))


def test_the_three_check_files_are_found():
    assert {f.name for f in FILES} >= {"image-claims.json", "image-layer1.json", "image-settings.json"}


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_provenance_is_a_clean_commit_of_this_repository(path):
    _, _, meta = claims.load_measured(path)
    commit = meta["git"]["git_commit"]
    assert commit and not meta["dirty_cnce_or_scripts"] and not meta["args"].get("allow_dirty")
    if provenance.git("rev-parse", "HEAD") is None:
        pytest.skip("not a git checkout")
    assert provenance.git("merge-base", "--is-ancestor", commit, "HEAD") is not None, f"{commit} is not in this history"
    for e in meta.get("kept", []):  # keys kept from earlier commits (scripts/image_claims.py --adopt) name theirs
        assert e["keys"] and not e["args"].get("allow_dirty"), e["keys"][:3]
        c = e["git"]["git_commit"]
        assert provenance.git("merge-base", "--is-ancestor", c, "HEAD") is not None, f"{c} is not in this history"

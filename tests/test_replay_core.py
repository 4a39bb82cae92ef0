from __future__ import annotations

import json
from pathlib import Path

from governance.core import canonical
from governance.core.budget import fixpoint
from governance.core.reader import read_capsule
from governance.core.repository import open_repository
from governance.history.replay import diff_paths, replay_capsule
from support.gitrepo import Repo


def build_at_head(cli, repo: Repo, tmp_path: Path) -> Path:
    target = tmp_path / "c.json"
    assert cli(["build", "packets/P-1/packet.yml", "-o", str(target)], cwd=repo.path).code == 0
    return target


def test_replay_is_identical_after_later_edits(cli, repo: Repo, tmp_path: Path) -> None:
    capsule = build_at_head(cli, repo, tmp_path)
    repo.write("docs/notes.md", "changed later\n")
    repo.write("policies/capsule.yml", "target_tokens: 100\n")
    repo.commit()
    result = replay_capsule(open_repository(repo.path), read_capsule(capsule.read_bytes()))
    assert result.identical
    assert result.differences == ()


def test_replay_names_the_differing_field(cli, repo: Repo, tmp_path: Path) -> None:
    capsule = build_at_head(cli, repo, tmp_path)
    repo.write("docs/notes.md", "# Notes\n\nRewritten later.\n")
    later = repo.commit()
    # A capsule claiming the later commit but carrying the earlier bytes is
    # internally consistent: only a rebuild at that commit can tell.
    document = json.loads(capsule.read_bytes())
    document["commit"] = later
    forged = fixpoint(document, canonical.dumps)
    result = replay_capsule(open_repository(repo.path), read_capsule(forged))
    assert not result.identical
    paths = [d.path for d in result.differences]
    assert "reads[1].text" in paths
    assert "reads[1].blob" in paths
    assert "packet.text" not in paths


def test_diff_paths_reports_list_items_and_missing_keys() -> None:
    a = {"reads": [{"text": "x"}, {"text": "y"}], "k": 1}
    b = {"reads": [{"text": "x"}, {"text": "z"}], "j": 1}
    assert [d.path for d in diff_paths(a, b)] == ["j", "k", "reads[1].text"]

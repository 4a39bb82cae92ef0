"""capsule/1's limits are the ADR's (issue 24, item 1): a policy may tighten
every number and loosen none, and a packet's own target is held to the ADR's
target too. Build, check, the packets hook and replay of a new record refuse
a loosened number with ``loosens_adr_limit`` (exit 2), naming the limit; a
record whose declared commit predates the rule replays as it was built."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pygit2
import pytest

from capsule_hooks import packets
from governance.core.hashing import sha256_hex
from governance.history.pre_adr import ADR_LIMITS_SINCE
from support.gitrepo import POLICY, Repo, error_of, packet_yaml
from support.history import audit, forge

PACKET = "packets/P-1/packet.yml"
POLICY_PATH = "policies/capsule.yml"
ROOT = Path(__file__).resolve().parent.parent

# The issue's example: every number loosened at once.
LOOSE = (
    "target_tokens: 30000\nhard_limit_tokens: 900000\nreserve_tokens: 0\n"
    "max_required_reads: 20\nestimator: utf8_bytes_div_3_ceil\n"
)
# Committer dates on either side of the rule (tests/support pins 2026-01-01).
BEFORE = "2026-06-01T12:00:00Z"
AFTER = "2027-01-01T12:00:00Z"


def with_key(key: str, value: int) -> str:
    lines = [line for line in POLICY.splitlines() if not line.startswith(f"{key}:")]
    return "\n".join([*lines, f"{key}: {value}"]) + "\n"


@pytest.mark.parametrize(
    ("key", "value", "limit"),
    [
        ("hard_limit_tokens", 16001, "16000"),
        ("target_tokens", 12001, "12000"),
        ("reserve_tokens", 1499, "1500"),
        ("max_required_reads", 9, "8"),
    ],
)
def test_a_policy_loosening_one_number_is_refused_by_build(
    cli, repo: Repo, key: str, value: int, limit: str
) -> None:
    repo.write(POLICY_PATH, with_key(key, value))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "loosens_adr_limit")
    assert key in error["message"]
    assert limit in error["message"].replace(",", "")
    assert "ADR" in error["message"]


def test_the_issues_loosened_policy_is_refused_naming_every_number(cli, repo: Repo) -> None:
    # Before: this policy built a capsule of any size up to 900,000 tokens.
    repo.write(POLICY_PATH, LOOSE)
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "loosens_adr_limit")
    for key in ("target_tokens", "hard_limit_tokens", "reserve_tokens", "max_required_reads"):
        assert key in error["message"]


def test_a_policy_leaving_keys_out_gets_the_adr_defaults_and_builds(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, "# every number the ADR's\n")
    repo.commit()
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_a_policy_tightening_every_number_builds(cli, repo: Repo) -> None:
    repo.write(
        POLICY_PATH,
        "target_tokens: 8000\nhard_limit_tokens: 10000\nreserve_tokens: 2000\n"
        "max_required_reads: 4\nestimator: utf8_bytes_div_3_ceil\n",
    )
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result
    numbers = json.loads(result.out)["budget"]
    assert (numbers["target_tokens"], numbers["hard_limit_tokens"]) == (8000, 10000)


def test_the_adr_numbers_themselves_build(cli, repo: Repo) -> None:
    # The conftest policy is exactly the ADR's: the limits are inclusive.
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_another_estimator_is_refused(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, POLICY.replace("utf8_bytes_div_3_ceil", "utf8_bytes_div_4_ceil"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert code == 2
    assert error["code"] == "policy_malformed"


def test_a_packet_target_above_the_adr_target_is_refused(cli, repo: Repo) -> None:
    # 13,000 + the reserve fits the hard limit, so only the ADR's target refuses it.
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md"]) + "budget: {target_tokens: 13000}\n")
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "loosens_adr_limit")
    assert error["path"] == PACKET
    assert "12000" in error["message"].replace(",", "")


def test_check_reports_the_loosened_policy(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, LOOSE)
    repo.commit()
    result = cli(["check", PACKET, "--json"], cwd=repo.path)
    assert result.code == 2
    codes = [f["code"] for p in json.loads(result.out)["packets"] for f in p["failures"]]
    assert codes == ["loosens_adr_limit"]


def test_the_packets_hook_refuses_a_staged_loosened_policy(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write(POLICY_PATH, LOOSE)
    repo.git("add", POLICY_PATH)
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    code = packets.main([POLICY_PATH])
    out = capsys.readouterr().out
    assert code == 2
    assert "loosens_adr_limit" in out


# --- replay: records built before the rule, and after it ------------------------------


def loosened_record(cli, repo: Repo, when: str) -> tuple[str, str]:
    """The record the builder made before the rule at a commit dated ``when``
    whose policy is ``LOOSE``: built at HEAD (the ADR's policy, same sources)
    and given that commit and that policy, each number and hash as the
    builder wrote them. Its path and the declared commit."""
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built
    repo.write(POLICY_PATH, LOOSE)
    declared = repo.commit("loosen the policy", when=when)
    blob = pygit2.Repository(str(repo.path)).revparse_single(f"{declared}:{POLICY_PATH}")

    def edit(d: dict[str, Any]) -> None:
        d["commit"] = declared
        d["policy"].update(
            blob=str(blob.id),
            sha256=sha256_hex(LOOSE.encode()),
            target_tokens=30000,
            hard_limit_tokens=900000,
            reserve_tokens=0,
            max_required_reads=20,
        )
        d["budget"].update(target_tokens=30000, hard_limit_tokens=900000, reserve_tokens=0)

    path = f"packets/P-1/capsules/{declared[:12]}.json"
    repo.write(path, forge(built.out.encode(), edit))
    repo.commit("record it", when=when)
    return path, declared


def test_a_record_from_before_the_rule_replays_as_it_was_built(cli, repo: Repo) -> None:
    path, _ = loosened_record(cli, repo, BEFORE)
    result = cli(["replay", path, "--json"], cwd=repo.path)
    assert result.code == 0, result
    code, report = audit(cli, repo)
    assert code == 0, report


def test_a_record_from_after_the_rule_is_refused_by_replay_and_audit(cli, repo: Repo) -> None:
    path, _declared = loosened_record(cli, repo, AFTER)
    code, error = error_of(cli, repo, ["replay", path])
    assert (code, error["code"]) == (2, "loosens_adr_limit")
    code, report = audit(cli, repo)
    assert code != 0
    assert "loosens_adr_limit" in json.dumps(report)


def test_the_rule_starts_at_its_cutoff_and_not_a_second_later(cli, repo: Repo) -> None:
    # The declared commit's committer date on the cutoff itself is new.
    path, _ = loosened_record(cli, repo, ADR_LIMITS_SINCE.isoformat())
    code, error = error_of(cli, repo, ["replay", path])
    assert (code, error["code"]) == (2, "loosens_adr_limit")


def test_the_golden_capsule_predates_the_rule_a_fresh_build_refuses_it(
    tmp_path: Path,
) -> None:
    # tests/golden/GOLD-1 pins capsule/1's bytes under a 500-token reserve:
    # an old-style record. It still rebuilds by replay's rule; a build refuses.
    from governance.core.builder import build_capsule  # noqa: PLC0415
    from governance.core.repository import open_repository  # noqa: PLC0415
    from governance.core.snapshot import Snapshot  # noqa: PLC0415
    from governance.errors import CapsuleError  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location(
        "make_golden", ROOT / "tests/golden/make_golden.py"
    )
    assert spec is not None
    assert spec.loader is not None
    golden_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(golden_module)
    golden_module.HERE  # noqa: B018 (loaded)
    build_all, make_repository, GOLDEN = (
        golden_module.build_all,
        golden_module.make_repository,
        golden_module.GOLDEN,
    )
    (tmp_path / "a").mkdir()
    built = build_all(tmp_path / "a")
    for golden, data in built.items():
        assert golden.read_bytes() == data
    repo = open_repository(make_repository(tmp_path))
    with pytest.raises(CapsuleError) as refused:
        build_capsule(Snapshot.at(repo, "HEAD", check_worktree=False), next(iter(GOLDEN)))
    assert refused.value.code == "loosens_adr_limit"


def test_this_repositorys_own_records_replay_under_the_rule(cli) -> None:
    # Its policy has always been the ADR's: every record audits green whatever
    # its date, and so none leans on the exemption.
    result = cli(["audit", "--json"], cwd=ROOT)
    assert result.code == 0, result
    for line in (ROOT / POLICY_PATH).read_text().splitlines():
        assert line.startswith(
            (
                "#",
                "target_tokens: 12000",
                "hard_limit_tokens: 16000",
                "reserve_tokens: 1500",
                "max_required_reads: 8",
                "estimator:",
            )
        )


def test_init_writes_the_adr_policy_and_says_so(cli, tmp_path: Path) -> None:
    target = Repo(tmp_path / "fresh")
    result = cli(["init"], cwd=target.path)
    assert result.code == 0, result
    text = (target.path / POLICY_PATH).read_text()
    assert "ADR" in text
    assert "loosens_adr_limit" in text

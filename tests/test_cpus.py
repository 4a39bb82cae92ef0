"""``--jobs auto``: the CPUs this process may use, within its cgroup's quota,
read from files laid out as Linux publishes them (here in temp folders)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from governance.history import pool
from governance.history.cpus import (
    AUTO_ITEMS_PER_PROCESS,
    AUTO_MAX_PROCESSES,
    cgroup_quota,
    usable_cpus,
)
from support.gitrepo import Repo
from support.history import History, audit


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _quota(tmp_path: Path, own: str, files: dict[str, str]) -> int | None:
    root = _tree(tmp_path / "sys", files)
    cgroups = _tree(tmp_path, {"self-cgroup": own})
    return cgroup_quota(root, cgroups / "self-cgroup")


def test_v2_quota_rounds_up_to_whole_cpus(tmp_path: Path) -> None:
    assert _quota(tmp_path, "0::/\n", {"cpu.max": "150000 100000\n"}) == 2
    assert _quota(tmp_path, "0::/\n", {"cpu.max": "100000 100000\n"}) == 1
    assert _quota(tmp_path, "0::/\n", {"cpu.max": "10000 100000\n"}) == 1  # a tenth is still one


def test_v2_without_a_limit_is_no_quota(tmp_path: Path) -> None:
    assert _quota(tmp_path, "0::/\n", {"cpu.max": "max 100000\n"}) is None


def test_the_fewest_cpus_of_the_group_and_every_group_above_it(tmp_path: Path) -> None:
    files = {
        "cpu.max": "max 100000\n",
        "ci/cpu.max": "300000 100000\n",
        "ci/job-7/cpu.max": "max 100000\n",
        "other/cpu.max": "100000 100000\n",  # not ours
    }
    assert _quota(tmp_path, "0::/ci/job-7\n", files) == 3


def test_v1_quota_and_its_no_limit(tmp_path: Path) -> None:
    own = "4:memory:/x\n2:cpu,cpuacct:/docker/abc\n0::/\n"
    limited = {
        "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "200000\n",
        "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
    }
    assert _quota(tmp_path / "a", own, limited) == 2
    unlimited = {
        "cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    assert _quota(tmp_path / "b", own, unlimited) is None


def test_a_container_sees_its_own_quota_at_the_mount(tmp_path: Path) -> None:
    # Without a cgroup namespace the path names the host's group, which is not
    # mounted inside: the mount's own files are the container's.
    own = "1:cpu:/docker/abc\n"
    files = {"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}
    assert _quota(tmp_path, own, files) == 1


@pytest.mark.parametrize(
    "files",
    [
        {"cpu.max": "lots 100000\n"},
        {"cpu.max": "100000\n"},
        {"cpu.max": "100000 0\n"},
        {"cpu.max": "-5 100000\n"},
        {"cpu.max": "1 2 3\n"},
        {"cpu.max": "9" * 1000 + " 100000\n"},  # longer than such a file can be
        {},
    ],
)
def test_what_does_not_parse_is_no_quota(tmp_path: Path, files: dict[str, str]) -> None:
    assert _quota(tmp_path, "0::/\n", files) is None


def test_a_path_climbing_out_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "cpu.max").write_text("100000 100000\n")
    assert _quota(tmp_path, "0::/../outside\n", {"cpu.max": "max 100000\n"}) is None


def test_no_cgroup_file_is_no_quota(tmp_path: Path) -> None:
    assert cgroup_quota(tmp_path, tmp_path / "missing") is None


def test_usable_cpus_is_the_affinity_within_the_quota(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    assert usable_cpus(tmp_path, tmp_path / "missing") == affinity
    root = _tree(tmp_path / "sys", {"cpu.max": "100000 100000\n"})
    own = _tree(tmp_path, {"self-cgroup": "0::/\n"}) / "self-cgroup"
    assert usable_cpus(root, own) == 1


def test_usable_cpus_follows_the_processs_affinity() -> None:
    # A real process pinned to one CPU (taskset's way): auto must not fork there.
    probe = (
        "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from governance.history.cpus import usable_cpus; print(usable_cpus())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"


def test_auto_starts_a_process_per_full_share_of_work() -> None:
    items = [pool.Item(f"{n:040x}", True, ()) for n in range(1000)]
    assert pool.auto_jobs(items, 2) == 2
    assert pool.auto_jobs(items[:300], 64) == 300 // AUTO_ITEMS_PER_PROCESS
    assert pool.auto_jobs(items * 10, 64) == AUTO_MAX_PROCESSES  # caches of its own, each
    assert pool.auto_jobs(items[: AUTO_ITEMS_PER_PROCESS * 2 - 1], 8) == 1
    assert pool.auto_jobs(items[:10], 8) == 1
    assert pool.auto_jobs([], 8) == 1
    assert pool.auto_jobs(items, 1) == 1


def test_auto_is_the_default_and_reports_the_processes_that_ran(cli, history: History) -> None:
    code, default = audit(cli, history.repo)
    assert code == 0
    assert default["jobs"] == 1  # a few record blobs: one process
    code, auto = audit(cli, history.repo, "--jobs", "auto")
    assert auto["results"] == default["results"]
    assert auto["jobs"] == 1
    code, many = audit(cli, history.repo, "--jobs", "256")
    assert many["results"] == default["results"]
    assert many["jobs"] == len(pool._chunks([None] * many["counts"]["blobs"], 256))  # type: ignore[list-item]
    assert 1 < many["jobs"] < 256


def test_bad_jobs_names_auto_in_its_message(cli, repo: Repo) -> None:
    result = cli(["audit", "--jobs", "several"], cwd=repo.path)
    assert result.code == 2
    assert "neither auto nor a whole number from 1 to 256" in result.err
    assert json.loads(cli(["audit", "--jobs", "0", "--json"], cwd=repo.path).out)["error"]


def test_by_default_a_long_history_replays_on_every_cpu_it_may_use(cli, repo: Repo) -> None:
    # Twice the share of work one more process needs, as distinct record blobs
    # (none a capsule: each is an error row, cheap to judge): with no --jobs,
    # one process per CPU this process may use, up to two here.
    blobs = 2 * AUTO_ITEMS_PER_PROCESS
    for n in range(blobs):
        repo.write(f"packets/P-1/capsules/{n:012x}.json", f'{{"n": {n}}}\n')
    repo.commit("not capsules")
    code, default = audit(cli, repo)
    assert code == 1
    assert default["counts"]["blobs"] == blobs
    assert default["jobs"] == min(usable_cpus(), 2)
    code, one = audit(cli, repo, "--jobs", "1")
    assert one["jobs"] == 1
    assert one["results"] == default["results"]

"""The upstream data the envs read with ``pack="upstream"``: where it comes from, what must be there.

Three public repositories hold it (:data:`SOURCES`): UserRL (the eight gyms' tasks, parquets and
prompt files), tau-bench (TauGym's databases and policies) and ABCD (the ABCD env's guidelines,
knowledge base, ontology and conversations). :func:`check_source` verifies one checkout the way the
envs read it: each file is present, then each env's real loader reads its pack and the task counts
are compared with the ones the paper used. :func:`pull` clones a repository with git.

A finding is *needed* when an env cannot load (or cannot play every task) without it; an
*optional* one only adds data. Nothing here downloads anything except through :func:`pull`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SOURCES", "Finding", "Source", "check_source", "data_root", "pull", "summarise"]


@dataclass(frozen=True, slots=True)
class Source:
    """A public repository the envs read: its git URL, the variable naming a checkout, and where in
    the checkout the files lie (``subdir``)."""

    name: str
    url: str
    variable: str
    flag: str
    subdir: str = ""


SOURCES: dict[str, Source] = {
    "userrl": Source(
        "userrl", "https://github.com/SalesforceAIResearch/UserRL.git", "MIMESIS_GYM_USERRL_DIR", "--userrl"
    ),
    "tau-bench": Source(
        "tau-bench", "https://github.com/sierra-research/tau-bench.git", "MIMESIS_GYM_TAU_DIR", "--tau"
    ),
    "abcd": Source("abcd", "https://github.com/asappresearch/abcd.git", "MIMESIS_GYM_ABCD_DIR", "--abcd", "data"),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of a check: ``ok`` or not, ``needed`` or optional, and what to do when not ok."""

    source: str
    what: str
    ok: bool
    detail: str
    needed: bool = True

    def line(self) -> str:
        status = "ok" if self.ok else ("MISSING" if self.needed else "optional")
        return f"{status:<8} {self.source:<9} {self.what}: {self.detail}"


def data_root(source: Source, directory: Path) -> Path:
    """Where a checkout's files lie: ``directory`` itself, or its ``subdir`` when the files are there."""
    if source.subdir and (directory / source.subdir).is_dir() and not (directory / "kb.json").exists():
        return directory / source.subdir
    return directory


def _how(source: Source, full_clone: bool = False) -> str:
    clone = " (a full git clone: archive downloads lack the large files)" if full_clone else ""
    return f"get it with: mimesis-gym data pull {source.name} --to DIR{clone}"


@dataclass(frozen=True, slots=True)
class _PackCheck:
    """An env's files under a root and its loader's expected task counts (``None``: not compared)."""

    env: str
    files: tuple[str, ...]
    load: Callable[[Path], Any]
    counts: Mapping[str, int] | None


def _userrl_checks() -> list[_PackCheck]:
    from mimesis_gym.envs.function import tasks as function
    from mimesis_gym.envs.intention import tasks as intention
    from mimesis_gym.envs.persuade import tasks as persuade
    from mimesis_gym.envs.search import tasks as search
    from mimesis_gym.envs.telepathy import tasks as telepathy
    from mimesis_gym.envs.travel import tasks as travel
    from mimesis_gym.envs.turtle import tasks as turtle

    def check(env: str, module: Any, counts: Mapping[str, int]) -> _PackCheck:
        files = tuple(str(name) for name in module.USERRL_NEEDS)
        return _PackCheck(env, files, lambda root: module.load_upstream_pack(str(root)), counts)

    return [
        check("FunctionGym", function, {"train": 460, "test": 78}),
        check("IntentionGym", intention, {"train": 380, "test": 40}),
        check("PersuadeGym", persuade, {"train": 378, "test": 42}),
        check("SearchGym", search, {"test": 125}),
        check("TelepathyGym", telepathy, {"train": 360, "test": 41}),
        check("TurtleGym", turtle, {"train": 423, "test": 48}),
        check("TravelGym", travel, {"train": 2651, "test": 471}),
    ]


def _userrl_prompt_files() -> dict[str, str]:
    """Each env's UserRL prompt file (read by ``prompt_set="userrl"``)."""
    from mimesis_gym.envs.intention.env import USERRL_PROMPTS_FILE as intention
    from mimesis_gym.envs.persuade.env import USERRL_PROMPTS_FILE as persuade
    from mimesis_gym.envs.search.env import USERRL_PROMPTS_FILE as search
    from mimesis_gym.envs.telepathy.env import USERRL_PROMPTS_FILE as telepathy
    from mimesis_gym.envs.travel.prompts import USERRL_PROMPT_FILE as travel
    from mimesis_gym.envs.turtle.env import USERRL_PROMPTS_FILE as turtle

    return {
        "IntentionGym": intention,
        "PersuadeGym": persuade,
        "SearchGym": search,
        "TelepathyGym": telepathy,
        "TravelGym": travel,
        "TurtleGym": turtle,
    }


def _run_pack(source: Source, root: Path, check: _PackCheck) -> list[Finding]:
    missing = [name for name in check.files if not (root / name).is_file()]
    if missing:
        return [Finding(source.name, f"{check.env} {name}", False, _how(source)) for name in missing]
    try:
        pack = check.load(root)
    except Exception as error:  # a schema error of the loader, reported as one line
        return [Finding(source.name, f"{check.env} tasks", False, f"{type(error).__name__}: {error}")]
    counts = pack.counts()
    shown = ", ".join(f"{count} {split}" for split, count in counts.items())
    wrong = {split: n for split, n in (check.counts or {}).items() if counts.get(split) != n}
    if wrong:
        expected = ", ".join(f"{count} {split}" for split, count in (check.counts or {}).items())
        return [Finding(source.name, f"{check.env} tasks", False, f"{shown}; expected {expected}")]
    return [Finding(source.name, f"{check.env} tasks", True, shown), *_unplayable(source, root, check.env, pack)]


def _unplayable(source: Source, root: Path, env: str, pack: Any) -> list[Finding]:
    """TravelGym's tasks whose ``travelgym_data_{W}.json`` is absent: loaded, but not playable."""
    if env != "TravelGym":
        return []
    from mimesis_gym.envs.travel.tasks import TRAVEL_SETS, USERRL_RECORDS

    findings = []
    for wanted in TRAVEL_SETS:
        stubs = sum(1 for task in pack if task.wanted_num == wanted and not task.playable)
        if stubs:
            what = f"{env} {USERRL_RECORDS.format(w=wanted)}"
            findings.append(Finding(source.name, what, False, f"{stubs} tasks unplayable; {_how(source, True)}"))
    return findings


def _check_userrl(source: Source, root: Path) -> list[Finding]:
    from mimesis_gym.envs.persuade.tasks import USERRL_STATEMENTS
    from mimesis_gym.envs.tau.tasks import TASK_FILES

    findings: list[Finding] = []
    for check in _userrl_checks():
        findings += _run_pack(source, root, check)
    statements = (root / USERRL_STATEMENTS).is_file()
    detail = "present" if statements else f"adds statements beyond the parquets' tasks; {_how(source, True)}"
    findings.append(Finding(source.name, f"PersuadeGym {USERRL_STATEMENTS}", statements, detail, needed=False))
    for name in TASK_FILES.values():
        relative = f"gyms/TauGym/taugym/data/{name}"
        present = (root / relative).is_file()
        findings.append(Finding(source.name, f"TauGym {relative}", present, "present" if present else _how(source)))
    for env, relative in _userrl_prompt_files().items():
        present = (root / relative).is_file()
        detail = "present" if present else f"read by prompt_set='userrl'; {_how(source)}"
        findings.append(Finding(source.name, f"{env} {relative}", present, detail))
    return findings


def _check_tau(source: Source, root: Path, userrl: Path | None) -> list[Finding]:
    from mimesis_gym.envs.tau.tasks import DOMAIN_DIRS, DOMAIN_TABLES, load_upstream_from

    findings: list[Finding] = []
    for domain, tables in DOMAIN_TABLES.items():
        folder = next(
            (root / p.format(domain=domain) for p in DOMAIN_DIRS if (root / p.format(domain=domain)).is_dir()), None
        )
        if folder is None:
            findings.append(Finding(source.name, f"TauGym {domain} folder", False, _how(source)))
            continue
        for name in (*(f"data/{table}.json" for table in tables), "wiki.md"):
            present = (folder / name).is_file()
            detail = "present" if present else _how(source)
            findings.append(Finding(source.name, f"TauGym {folder.relative_to(root) / name}", present, detail))
    if not all(finding.ok for finding in findings):
        return findings
    task_roots = [path for path in (userrl, root) if path is not None]
    try:
        counts = load_upstream_from(root, task_roots).counts()
    except FileNotFoundError:
        hint = "pass --userrl DIR (UserRL's TauGym task files)" if userrl is None else _how(SOURCES["userrl"])
        return [
            *findings,
            Finding(source.name, "TauGym tasks", False, f"tau_train.json/tau_test.json not found; {hint}"),
        ]
    except Exception as error:
        return [*findings, Finding(source.name, "TauGym tasks", False, f"{type(error).__name__}: {error}")]
    shown = ", ".join(f"{count} {split}" for split, count in counts.items())
    ok = counts == {"train": 500, "test": 165}
    return [
        *findings,
        Finding(source.name, "TauGym tasks", ok, shown if ok else f"{shown}; expected 500 train, 165 test"),
    ]


def _check_abcd(source: Source, root: Path) -> list[Finding]:
    from mimesis_gym.envs.abcd.tasks import CONVERSATION_FILES, POLICY_FILES, load_upstream_pack

    findings = []
    for name in POLICY_FILES:
        present = (root / name).is_file()
        findings.append(Finding(source.name, f"ABCD {name}", present, "present" if present else _how(source)))
    conversations = next((name for name in CONVERSATION_FILES if (root / name).is_file()), None)
    if conversations is None:
        findings.append(
            Finding(
                source.name, "ABCD conversations", False, f"none of {', '.join(CONVERSATION_FILES)}; {_how(source)}"
            )
        )
        return findings
    full = conversations != "abcd_sample.json"
    detail = conversations if full else f"only {conversations} (a few dialogues); the full set: {_how(source)}"
    findings.append(Finding(source.name, "ABCD conversations", full, detail, needed=False))
    if all(finding.ok or not finding.needed for finding in findings):
        try:
            counts = load_upstream_pack(str(root)).counts()
        except Exception as error:
            return [*findings, Finding(source.name, "ABCD tasks", False, f"{type(error).__name__}: {error}")]
        findings.append(Finding(source.name, "ABCD tasks", True, ", ".join(f"{n} {s}" for s, n in counts.items())))
    return findings


def check_source(name: str, directory: Path, *, userrl: Path | None = None) -> list[Finding]:
    """Every upstream file the envs read from one checkout of ``SOURCES[name]``, then each env's pack.

    ``userrl``: a UserRL checkout for the tau-bench check (TauGym's task files live there). The
    directory must exist (``ValueError`` otherwise).
    """
    source = SOURCES[name]
    if not directory.is_dir():
        raise ValueError(f"{source.flag} {directory} is not a directory")
    root = data_root(source, directory)
    if name == "userrl":
        return _check_userrl(source, root)
    if name == "tau-bench":
        return _check_tau(source, root, userrl)
    return _check_abcd(source, root)


def pull(name: str, destination: Path, *, url: str | None = None) -> Path:
    """Clone ``SOURCES[name]`` (or ``url``) into ``destination`` with git; return the data root.

    ``ValueError`` names the problem: git not installed, a non-empty destination, a failed clone
    (with git's last line of error output).
    """
    source = SOURCES[name]
    if shutil.which("git") is None:
        raise ValueError("git is not installed; install git, or clone " + source.url + " by hand")
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ValueError(f"--to {destination} exists and is not empty; choose a new directory")
    result = subprocess.run(
        ["git", "clone", "--quiet", url or source.url, str(destination)],
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    if result.returncode != 0:
        last = next(iter(reversed([line for line in result.stderr.splitlines() if line.strip()])), "no output")
        raise ValueError(f"git clone {url or source.url} failed: {last}")
    return data_root(source, destination)


def summarise(findings: Iterable[Finding]) -> tuple[int, int]:
    """(needed findings that failed, optional findings that failed)."""
    findings = list(findings)
    return (
        sum(1 for f in findings if not f.ok and f.needed),
        sum(1 for f in findings if not f.ok and not f.needed),
    )

"""The upstream data the envs read with ``pack="upstream"``: where it comes from, what must be there.

Three public repositories hold it (:data:`SOURCES`): UserRL (the eight gyms' tasks, parquets and
prompt files), tau-bench (TauGym's databases and policies) and ABCD (the ABCD env's guidelines,
knowledge base, ontology and conversations). :func:`check_source` verifies one checkout the way the
envs read it: each file is present, then each env's real loader reads its pack and the task counts
are compared with the ones the paper used. Each env declares what it reads from UserRL itself
(``ConversationEnv.upstream``, a :class:`~mimesis_gym.core.upstream.UserRLUpstream`); the UserRL
check walks the env table and reads those declarations. :func:`pull` clones a repository with git.

A finding is *needed* when an env cannot load (or cannot play every task) without it; an
*optional* one only adds data. Nothing here downloads anything except through :func:`pull`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mimesis_gym.core.upstream import UpstreamFile, UserRLUpstream

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


def _declarations() -> list[UserRLUpstream]:
    """What each env of the env table reads from UserRL (its class's ``upstream``), in table order."""
    from mimesis_gym.envs import ENV_TABLE

    classes = (entry.env_class() for entry in ENV_TABLE if entry.kind == "conversation")
    return [env_class.upstream for env_class in classes if env_class.upstream is not None]


def _run_pack(source: Source, root: Path, upstream: UserRLUpstream) -> list[Finding]:
    """The env's task files, then its loader's task counts and the tasks it cannot play."""
    if upstream.load is None:
        return []
    missing = [name for name in upstream.task_files if not (root / name).is_file()]
    if missing:
        return [Finding(source.name, f"{upstream.gym} {name}", False, _how(source)) for name in missing]
    try:
        pack = upstream.load(str(root))
    except Exception as error:  # a schema error of the loader, reported as one line
        return [Finding(source.name, f"{upstream.gym} tasks", False, f"{type(error).__name__}: {error}")]
    counts = pack.counts()
    shown = ", ".join(f"{count} {split}" for split, count in counts.items())
    wrong = {split: n for split, n in (upstream.counts or {}).items() if counts.get(split) != n}
    if wrong:
        expected = ", ".join(f"{count} {split}" for split, count in (upstream.counts or {}).items())
        return [Finding(source.name, f"{upstream.gym} tasks", False, f"{shown}; expected {expected}")]
    unplayable = upstream.unplayable(pack) if upstream.unplayable is not None else {}
    return [
        Finding(source.name, f"{upstream.gym} tasks", True, shown),
        *(
            Finding(source.name, f"{upstream.gym} {name}", False, f"{stubs} tasks unplayable; {_how(source, True)}")
            for name, stubs in unplayable.items()
        ),
    ]


def _file_finding(source: Source, root: Path, gym: str, file: UpstreamFile) -> Finding:
    present = (root / file.path).is_file()
    purpose = f"{file.purpose}; " if file.purpose else ""
    detail = "present" if present else f"{purpose}{_how(source, file.full_clone)}"
    return Finding(source.name, f"{gym} {file.path}", present, detail, needed=file.needed)


def _check_userrl(source: Source, root: Path) -> list[Finding]:
    findings: list[Finding] = []
    for upstream in _declarations():
        findings += _run_pack(source, root, upstream)
        findings += [_file_finding(source, root, upstream.gym, file) for file in upstream.files]
    return findings


def _check_tau(source: Source, root: Path, userrl: Path | None) -> list[Finding]:
    from mimesis_gym.envs.tau.env import TauEnv
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
    expected = dict(TauEnv.upstream.counts or {}) if TauEnv.upstream is not None else {}
    ok = counts == expected
    wanted = ", ".join(f"{count} {split}" for split, count in expected.items())
    return [*findings, Finding(source.name, "TauGym tasks", ok, shown if ok else f"{shown}; expected {wanted}")]


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

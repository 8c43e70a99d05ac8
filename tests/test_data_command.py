"""``mimesis-gym data check`` and ``data pull`` (docs/data.md).

``check`` runs against ``../shared/data`` (skipped when absent) and against copies of it made of
symbolic links with files left out; ``pull`` clones a bare repository made in ``tmp_path`` (no network).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mimesis_gym.cli import main
from mimesis_gym.core.upstream import UpstreamFile, UserRLUpstream
from mimesis_gym.envs import EnvEntry, register_env
from tests.conftest import SHARED_DATA
from tests.support.echo_env import PACK, EchoEnv

VARIABLES = ("MIMESIS_GYM_USERRL_DIR", "MIMESIS_GYM_TAU_DIR", "MIMESIS_GYM_ABCD_DIR")
TRAVEL_RECORDS = ("22", "33", "44", "233", "333", "334", "444", "2222")


@pytest.fixture(autouse=True)
def no_variables(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def shared() -> Path:
    if not all((SHARED_DATA / name).is_dir() for name in ("userrl", "tau-bench", "abcd")):
        pytest.skip(f"reference data not found under {SHARED_DATA} (expected ../shared/data)")
    return SHARED_DATA


def run(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = main(["data", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def linked_copy(source: Path, target: Path, leave_out: set[str]) -> Path:
    """``source`` rebuilt under ``target`` from symbolic links, without the files in ``leave_out``."""
    for path in source.rglob("*"):
        relative = path.relative_to(source).as_posix()
        if path.is_file() and relative not in leave_out:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            (target / relative).symlink_to(path)
    return target


def missing(lines: list[str]) -> list[str]:
    return [line.split(":")[0].split(maxsplit=2)[2] for line in lines if line.startswith("MISSING")]


def test_check_on_the_reference_data(shared, capsys):
    code, lines, _ = run(
        capsys,
        "check",
        "--userrl",
        str(shared / "userrl"),
        "--tau",
        str(shared / "tau-bench"),
        "--abcd",
        str(shared / "abcd"),
    )
    assert code == 1
    expected_ok = [
        "FunctionGym tasks: 460 train, 78 test",
        "IntentionGym tasks: 380 train, 40 test, 687 other",
        "PersuadeGym tasks: 378 train, 42 test",
        "SearchGym tasks: 125 test",
        "TelepathyGym tasks: 360 train, 41 test",
        "TurtleGym tasks: 423 train, 48 test",
        "TravelGym tasks: 2651 train, 471 test",
        "TauGym tasks: 500 train, 165 test",
    ]
    for text in expected_ok:
        assert any(line.startswith("ok") and line.endswith(text) for line in lines), text
    # ../shared/data lacks exactly what only a full clone of UserRL has
    assert missing(lines) == [
        *(f"TravelGym gyms/TravelGym/travelgym/data/travelgym_data_{w}.json" for w in TRAVEL_RECORDS),
        "TravelGym gyms/TravelGym/travelgym/env/utils.py",
    ]
    unplayable = "671 tasks unplayable; get it with: mimesis-gym data pull userrl --to DIR (a full git clone"
    assert any(line.startswith("MISSING  userrl    TravelGym") and unplayable in line for line in lines)
    assert any(line.startswith("optional userrl") and "all_statements_refined.json" in line for line in lines)
    assert any(line.startswith("optional abcd") and "only abcd_sample.json" in line for line in lines)
    assert lines[-1] == "9 needed item(s) missing or wrong (MISSING lines above)"


class OwnUpstreamEnv(EchoEnv):
    """An env of one's own that reads a task file and a prompt file from UserRL."""

    upstream = UserRLUpstream(
        "OwnGym",
        task_files=("gyms/OwnGym/tasks.json",),
        load=lambda root: PACK,
        counts={"test": 2},
        files=(UpstreamFile("gyms/OwnGym/prompts.py", "read by prompt_set='userrl'"),),
    )


def test_check_reads_each_env_s_own_declaration_from_the_env_table(tmp_path, capsys, clean_env_table):
    register_env(
        EnvEntry(
            id="mimesis_test/OwnUpstream-v0",
            entry_point=f"{__name__}:OwnUpstreamEnv",
            short="own-upstream",
            title="Own",
        )
    )
    userrl = tmp_path / "userrl"
    (userrl / "gyms/OwnGym").mkdir(parents=True)
    _, lines, _ = run(capsys, "check", "--userrl", str(userrl))
    assert {"OwnGym gyms/OwnGym/tasks.json", "OwnGym gyms/OwnGym/prompts.py"} <= set(missing(lines))
    prompts = next(line for line in lines if "OwnGym gyms/OwnGym/prompts.py" in line)
    assert prompts.endswith("read by prompt_set='userrl'; get it with: mimesis-gym data pull userrl --to DIR")
    (userrl / "gyms/OwnGym/tasks.json").write_text("{}")
    (userrl / "gyms/OwnGym/prompts.py").write_text("")
    _, lines, _ = run(capsys, "check", "--userrl", str(userrl))
    assert "ok       userrl    OwnGym tasks: 2 test, 1 demo" in lines
    assert "ok       userrl    OwnGym gyms/OwnGym/prompts.py: present" in lines
    assert not any("OwnGym" in line for line in lines if line.startswith("MISSING"))


def test_check_names_removed_files_and_how_to_get_them(shared, tmp_path, capsys):
    userrl = linked_copy(
        shared / "userrl",
        tmp_path / "userrl",
        {
            "data/turtle_multiturn/test.parquet",
            "gyms/SearchGym/searchgym/env/prompts.py",
            "gyms/TauGym/taugym/data/tau_test.json",
        },
    )
    tau = linked_copy(shared / "tau-bench", tmp_path / "tau", {"airline/data/flights.json"})
    code, lines, _ = run(capsys, "check", "--userrl", str(userrl), "--tau", str(tau))
    assert code == 1
    found = missing(lines)
    assert found[:2] == [  # the env table's order: TravelGym, then TurtleGym
        "TravelGym gyms/TravelGym/travelgym/data/travelgym_data_22.json",
        "TravelGym gyms/TravelGym/travelgym/data/travelgym_data_33.json",
    ]
    assert "TurtleGym data/turtle_multiturn/test.parquet" in found
    assert {"TauGym gyms/TauGym/taugym/data/tau_test.json", "SearchGym gyms/SearchGym/searchgym/env/prompts.py"} <= set(
        found
    )
    assert "TauGym airline/data/flights.json" in found and "TauGym tasks" not in " ".join(
        lines
    )  # no load without tables
    assert not any("TurtleGym tasks" in line for line in lines)
    turtle = next(line for line in lines if "turtle_multiturn/test.parquet" in line)
    assert turtle.endswith("get it with: mimesis-gym data pull userrl --to DIR")


def test_check_reads_the_variables_and_passes_when_only_optional_items_are_absent(shared, monkeypatch, capsys):
    monkeypatch.setenv("MIMESIS_GYM_ABCD_DIR", str(shared / "abcd"))
    code, lines, _ = run(capsys, "check")
    assert code == 0
    assert lines[0].startswith("skipped  userrl    pass --userrl DIR or set $MIMESIS_GYM_USERRL_DIR")
    assert any(line.startswith("ok       abcd      ABCD tasks: ") for line in lines)
    assert lines[-1] == "everything the envs read is present; 1 optional item(s) absent"


def test_check_finds_abcd_files_under_data_of_a_clone(shared, tmp_path, capsys):
    clone = linked_copy(shared / "abcd", tmp_path / "abcd" / "data", {"kb.json"}).parent
    code, lines, _ = run(capsys, "check", "--abcd", str(clone))
    assert (code, missing(lines)) == (1, ["ABCD kb.json"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "nothing to check: pass --userrl DIR / --tau DIR / --abcd DIR or set $MIMESIS_GYM_USERRL_DIR"),
        (["check", "--tau", "/no/such/dir"], "--tau /no/such/dir is not a directory"),
    ],
)
def test_check_usage_errors_are_one_line(argv, message, capsys):
    code, lines, err = run(capsys, *argv)
    assert (code, lines) == (2, []) and err.count("\n") == 1 and message in err


def bare_repository(tmp_path: Path, files: dict[str, str]) -> Path:
    """A bare git repository holding ``files`` in one commit (a stand-in for the public one)."""
    work, bare = tmp_path / "work", tmp_path / "remote.git"
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "--quiet", "--bare", str(bare)], check=True)
    subprocess.run([*git, "init", "--quiet", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "--quiet", "-m", "data"], check=True)
    subprocess.run([*git, "-C", str(work), "push", "--quiet", str(bare), "HEAD:main"], check=True)
    return bare


@pytest.mark.parametrize("env", ["travel", "turtle", "function", "tau", "persuade", "intention", "telepathy", "search",
                                 "abcd"])  # fmt: skip
def test_every_upstream_pack_names_a_wrong_folder_and_the_fix(env, tmp_path):
    from mimesis_gym.core.tasks import UpstreamDataError
    from mimesis_gym.envs import ENV_TABLE

    (tmp_path / "README").write_text("not the data")
    with pytest.raises(UpstreamDataError) as raised:
        ENV_TABLE.find(env).env_class().load_task_pack("upstream", str(tmp_path))
    message = str(raised.value)
    assert str(tmp_path.resolve()) in message and "mimesis-gym data pull" in message, message
    assert isinstance(raised.value, FileNotFoundError) and isinstance(raised.value, ValueError)


def test_pull_clones_and_prints_the_variable(tmp_path, capsys):
    bare = bare_repository(tmp_path, {"data/kb.json": "{}", "data/guidelines.json": "{}", "README.md": "abcd"})
    destination = tmp_path / "abcd"
    code, lines, _ = run(capsys, "pull", "abcd", "--to", str(destination), "--url", str(bare))
    assert code == 0
    assert (destination / "data" / "kb.json").read_text() == "{}" and (destination / ".git").is_dir()
    assert lines == [
        f"cloned {bare} into {destination}",
        f"export MIMESIS_GYM_ABCD_DIR={(destination / 'data').resolve()}",
        f"check it: mimesis-gym data check --abcd {destination}",
    ]
    code, lines, err = run(capsys, "pull", "abcd", "--to", str(destination), "--url", str(bare))
    assert (code, lines) == (
        2,
        [],
    ) and err == f"mimesis-gym data: --to {destination} exists and is not empty; choose a new directory\n"


def test_pull_reports_a_failed_clone_in_one_line(tmp_path, capsys):
    code, lines, err = run(capsys, "pull", "userrl", "--to", str(tmp_path / "x"), "--url", str(tmp_path / "none.git"))
    assert (code, lines) == (2, []) and err.count("\n") == 1
    assert err.startswith(f"mimesis-gym data: git clone {tmp_path / 'none.git'} failed: ")
    assert not (tmp_path / "x").exists()


def test_pull_rejects_an_unknown_source(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "pull", "userrl2", "--to", "x"])
    code = exit_info.value.code
    err = capsys.readouterr().err
    assert code == 2 and "invalid choice: 'userrl2' (choose from 'userrl', 'tau-bench', 'abcd')" in err


def test_the_public_urls():
    from mimesis_gym.evaluation.upstream_data import SOURCES

    assert {name: source.url for name, source in SOURCES.items()} == {
        "userrl": "https://github.com/SalesforceAIResearch/UserRL.git",
        "tau-bench": "https://github.com/sierra-research/tau-bench.git",
        "abcd": "https://github.com/asappresearch/abcd.git",
    }

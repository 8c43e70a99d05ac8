"""``eval``'s progress (docs/evaluation.md, "Progress"): a bar on a terminal, one line per episode elsewhere."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys

from mimesis_gym.evaluation.progress import BarProgress, LineProgress, episode_line, open_progress
from tests.support.synthetic_runs import synthetic_record


def test_lines_name_each_finished_episode_and_close_with_the_counts():
    stream = io.StringIO()
    progress = open_progress(True, total=5, done=2, stream=stream)
    assert isinstance(progress, LineProgress)
    rng = random.Random(0)
    first = synthetic_record(0, rng, status="ok", episode_score=0.5, n_turns=3, duration_s=1.25)
    second = synthetic_record(1, rng, status="user_failure")
    progress.finished(first)
    progress.finished(second)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        f"episode 3/5: turtle task {first.task_id} · agent oracle · user scripted · ok · score 0.500 · 3 turns · 1.2 s"
    )
    assert lines[1] == episode_line(second, 4, 5)
    assert lines[2].startswith("episodes: 4/5 finished in ") and lines[2].endswith(
        "(ok 1, user_failure 1; 2 finished before)"
    )


def test_a_terminal_gets_the_bar_and_no_progress_gets_nothing():
    controller, terminal = os.openpty()
    with os.fdopen(terminal, "w") as stream:
        progress = open_progress(True, total=3, done=0, stream=stream)
        assert isinstance(progress, BarProgress)
        progress.finished(synthetic_record(0, random.Random(0)))
        progress.close()
    os.close(controller)
    assert open_progress(False, total=3, done=0, stream=io.StringIO()) is None


def eval_stderr(tmp_path, *extra):
    command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--envs", "turtle,function", "--agent", "oracle",
               "--limit", "2", "--out", str(tmp_path / "run"), *extra]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    return completed.stderr.splitlines()


def test_eval_into_a_pipe_prints_a_line_per_episode_and_a_final_line(tmp_path):
    lines = eval_stderr(tmp_path)
    episodes = [line for line in lines if line.startswith("episode ")]
    assert len(episodes) == 4 and {line.split(":")[0] for line in episodes} == {f"episode {n}/4" for n in (1, 2, 3, 4)}
    assert any(
        " turtle task " in line and "agent oracle · user scripted · ok · score 1.000" in line for line in episodes
    )
    assert any(line.startswith("episodes: 4/4 finished in ") and "(ok 4)" in line for line in lines)


def test_no_progress_silences_the_lines(tmp_path):
    lines = eval_stderr(tmp_path, "--no-progress")
    assert not any(line.startswith(("episode ", "episodes:")) for line in lines), lines


def test_a_line_names_a_user_behaviour_other_than_control():
    rng = random.Random(0)
    played = synthetic_record(0, rng, status="ok", episode_score=0.5, n_turns=3, duration_s=1.25, user_behavior="B3")
    assert " · user scripted (B3) · ok · score 0.500 · 3 turns · 1.2 s" in episode_line(played, 1, 2)
    assert " · user scripted · ok · " in episode_line(synthetic_record(0, rng, status="ok"), 1, 2)  # control

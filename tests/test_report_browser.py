"""The report page in a real headless Chromium (docs/evaluation.md, "The report page").

Each test loads a page written by the real code path (``eval``, or ``report RUN_DIR`` over stored
records), from ``file://`` or through ``mimesis-gym view``, and reads what the browser rendered:
the episode rows against ``episodes.jsonl`` (with filters), an opened transcript, the privileged
toggle, escaping, a 5,000-episode page, a screenshot, and no console error. Run by
``make test-browser``, which installs Debian's ``chromium`` when missing; elsewhere they skip
with the reason (``MIMESIS_REQUIRE_BROWSER=1`` turns the skip into a failure).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from tests.support.chromium import Chromium, Page, find_chromium
from tests.support.synthetic_runs import synthetic_record, synthetic_records, write_run

pytestmark = pytest.mark.browser

HOSTILE = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
SAMPLE_SCREENSHOT = "MIMESIS_REPORT_SCREENSHOT"
"""When set, the first test also saves its screenshot at this path (a sample for a write-up)."""


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        reason = "chromium not found: `make test-browser` installs it (apt-get), or set MIMESIS_CHROMIUM"
        if os.environ.get("MIMESIS_REQUIRE_BROWSER"):
            pytest.fail(reason)
        pytest.skip(reason)
    with Chromium(executable) as chromium:
        yield chromium


@pytest.fixture
def page(browser):
    tab = browser.page()
    yield tab
    browser.send("Target.closeTarget", {"targetId": tab.target})


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A real privileged run: two agents, three envs, two tasks each (12 episodes)."""
    out = tmp_path_factory.mktemp("browser") / "run"
    config = EvalConfig(
        envs=["turtle", "function", "persuade"], agents=["oracle", "scripted:random"], limit=2, privileged=True
    )
    asyncio.run(run_eval(config, out, progress=False))
    return out


def latest(run: Path):
    return list(ResultsStore(run / "episodes.jsonl").latest().values())


def set_filter(page: Page, element: str, value: str) -> int:
    """Set a filter control as a reader would; the number of matches the page reports."""
    page.evaluate(
        f"(() => {{ const c = document.getElementById({json.dumps(element)}); c.value = {json.dumps(value)};"
        " c.dispatchEvent(new Event('input')); c.dispatchEvent(new Event('change')); })()"
    )
    return int(page.evaluate("document.getElementById('episode-viewport').dataset.matches"))


def rendered_rows(page: Page) -> list[dict[str, str]]:
    """The rows in the DOM: their episode index and cells by column name."""
    return page.evaluate(
        """(() => {
          const names = [...document.querySelectorAll('#episode-head [role=columnheader]')].map(h => h.textContent);
          return [...document.querySelectorAll('#episode-rows .row')].map(row => {
            const cells = {index: row.dataset.index};
            [...row.children].forEach((cell, i) => { cells[names[i]] = cell.textContent; });
            return cells;
          });
        })()"""
    )


def open_episode(page: Page, index: int) -> str:
    """Click the row of episode ``index`` of the unfiltered list (scrolled into view first); the panel's text."""
    page.evaluate(
        f"""(async () => {{
          const viewport = document.getElementById('episode-viewport');
          viewport.scrollTop = {index} * 30; viewport.dispatchEvent(new Event('scroll'));
          await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
          document.querySelector('#episode-rows .row[data-index="{index}"]').click();
        }})()"""
    )
    return page.evaluate("document.getElementById('episode-detail').textContent")


def test_a_real_run_reads_in_the_browser(page, real_run, tmp_path):
    records = latest(real_run)
    page.load((real_run / "report.html").as_uri())
    assert page.evaluate("document.getElementById('match-count').textContent") == f"{len(records)} of 12 episodes"
    rows = rendered_rows(page)
    assert len(rows) == len(records) == 12
    assert [(row["Env"], row["Task"], row["Agent"]) for row in rows] == [(r.env, r.task_id, r.agent) for r in records]
    assert page.evaluate("document.querySelectorAll('#scores table').length") >= 1
    plots = len(list((real_run / "plots").glob("*.png")))
    assert page.evaluate("document.querySelectorAll('#plots img').length") == plots > 0

    # filters against episodes.jsonl
    by_env = Counter(r.env for r in records)
    assert set_filter(page, "filter-env", "function") == by_env["function"] == len(rendered_rows(page))
    assert {row["Env"] for row in rendered_rows(page)} == {"function"}
    oracle_function = sum(r.env == "function" and r.agent == "oracle" for r in records)
    assert set_filter(page, "filter-agent", "oracle") == oracle_function
    page.evaluate("document.getElementById('filter-reset').click()")
    assert set_filter(page, "filter-score-min", "0.5") == sum(r.episode_score >= 0.5 for r in records)
    assert set_filter(page, "filter-score-max", "0.9") == sum(0.5 <= r.episode_score <= 0.9 for r in records)
    page.evaluate("document.getElementById('filter-reset').click()")
    assert set_filter(page, "filter-status", "ok") == sum(r.status == "ok" for r in records)
    assert set_filter(page, "filter-task", "fn-") == sum(r.task_id.startswith("fn-") for r in records)
    page.evaluate("document.getElementById('filter-reset').click()")

    # one transcript: the oracle on a FunctionGym task, with rewards, reward parts and the tool-free transcript
    index, record = next((i, r) for i, r in enumerate(records) if r.env == "function" and r.agent == "oracle")
    detail = open_episode(page, index)
    assert record.task_id in detail and "Turns (" + str(len(record.steps)) in detail
    assert page.evaluate("document.querySelectorAll('#episode-detail .turn').length") == len(record.steps)
    for part in record.steps[-1].reward_parts:
        assert f"{part}=" in detail
    assert record.steps[-1].observation.splitlines()[0] in detail
    assert page.evaluate("document.querySelectorAll('#episode-detail .msg').length") == len(record.transcript)
    assert page.evaluate("location.hash") == f"#episode-{index + 1}"

    # privileged data only behind the toggle
    rule = record.privileged["hidden"]["rule"]
    assert page.evaluate("document.getElementById('show-privileged').checked") is False
    assert page.evaluate("document.querySelectorAll('#episode-detail .privileged').length") == 0 and rule not in detail
    page.evaluate("document.getElementById('show-privileged').click()")
    shown = page.evaluate("document.querySelector('#episode-detail .privileged').textContent")
    assert rule in shown and "Per turn" in shown
    screenshot = page.screenshot(tmp_path / "report.png")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    if os.environ.get(SAMPLE_SCREENSHOT):
        Path(os.environ[SAMPLE_SCREENSHOT]).write_bytes(screenshot.read_bytes())
    page.evaluate("document.getElementById('show-privileged').click()")
    assert page.evaluate("document.querySelectorAll('#episode-detail .privileged').length") == 0
    assert page.errors() == []


def test_a_link_to_an_episode_opens_it(page, real_run):
    records = latest(real_run)
    page.load((real_run / "report.html").as_uri() + "#episode-3")
    assert page.evaluate("document.getElementById('episode-detail').dataset.episode") == "2"
    assert records[2].task_id in page.evaluate("document.getElementById('episode-detail').textContent")
    assert page.errors() == []


def test_view_serves_the_page_to_the_browser(page, real_run):
    child = subprocess.Popen(
        [sys.executable, "-m", "mimesis_gym.cli", "view", str(real_run), "--port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", child.stderr.readline()).group(1)
        page.load(url)
        assert int(page.evaluate("document.getElementById('episode-viewport').dataset.matches")) == 12
        assert len(rendered_rows(page)) == 12
        assert latest(real_run)[5].task_id in open_episode(page, 5)
        assert page.errors() == []
    finally:
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=30)
    assert child.returncode == 0


def test_record_text_renders_as_text(page, tmp_path):
    import random

    rng = random.Random(5)
    hostile = synthetic_record(
        0, rng, agent="agent<b>x</b>", task_id="task<i>", error=HOSTILE, status="agent_error",
        transcript=[{"role": "user", "content": HOSTILE},
                    {"role": "assistant", "content": HOSTILE, "tool_calls": [
                        {"id": HOSTILE, "function": {"name": HOSTILE, "arguments": HOSTILE}}]}],
    )  # fmt: skip
    hostile.steps[0].observation = HOSTILE
    hostile.steps[0].reward_parts = {HOSTILE: 1.0}
    hostile.privileged = {"hidden": {"answer": HOSTILE}, "thoughts": [], "turns": []}
    run = write_run(tmp_path / "run", [hostile, synthetic_record(1, rng)])
    page.load((run / "report.html").as_uri())
    rows = rendered_rows(page)
    assert rows[0]["Task"] == "task<i>" and rows[0]["Agent"] == "agent<b>x</b>"
    open_episode(page, 0)
    page.evaluate("document.getElementById('show-privileged').click()")
    detail = page.evaluate("document.getElementById('episode-detail').textContent")
    assert detail.count(HOSTILE) >= 6  # error, transcript twice, tool call, observation, hidden answer
    assert page.evaluate("window.__pwned === undefined")
    injected = "#episode-detail script, #episode-detail img, #episode-rows b, #episode-rows i"
    assert page.evaluate(f"document.querySelectorAll({injected!r}).length") == 0
    assert "agent&lt;b&gt;x&lt;/b&gt;" in page.evaluate("document.getElementById('scores').innerHTML")
    assert page.errors() == []


def test_five_thousand_episodes_stay_responsive(page, tmp_path):
    records = synthetic_records(5000, seed=11)
    run = write_run(tmp_path / "big", records)
    page.load((run / "report.html").as_uri())
    assert page.evaluate("document.getElementById('match-count').textContent") == "5000 of 5000 episodes"
    assert len(rendered_rows(page)) < 60  # only the rows in view (and a few around them) exist
    assert page.evaluate("document.getElementById('episode-spacer').getBoundingClientRect().height") == 5000 * 30
    detail = open_episode(page, 4999)
    assert records[4999].task_id in detail and records[4999].key in detail
    assert "5000" in [row["#"] for row in rendered_rows(page)]
    wanted = sum(r.agent == "tiny" and r.status == "ok" and r.env == "persuade" for r in records)
    set_filter(page, "filter-agent", "tiny")
    set_filter(page, "filter-env", "persuade")
    assert set_filter(page, "filter-status", "ok") == wanted > 0
    assert {(row["Agent"], row["Status"], row["Env"]) for row in rendered_rows(page)} == {("tiny", "ok", "persuade")}
    page.evaluate("document.querySelector('#episode-head button[title=\"sort by Score\"]').click()")
    scores = [float(row["Score"]) for row in rendered_rows(page)]
    assert scores == sorted(scores) and scores
    assert page.errors() == []


def test_episodes_filter_by_user_behaviour_and_say_whether_it_was_enacted(page, tmp_path, clean_env_table):
    from tests.support.behavior_env import ASK_ID, register

    register()
    out = tmp_path / "run"
    config = EvalConfig(envs=[ASK_ID], agents=["oracle"], user_behaviors=["B3", "B9"], limit=2, max_turns=4)
    asyncio.run(run_eval(config, out, progress=False))
    records = latest(out)
    page.load((out / "report.html").as_uri())
    assert "Robustness to user behaviours" in page.evaluate("document.getElementById('scores').textContent")
    assert set_filter(page, "filter-behavior", "B3") == 2
    assert {row["Beh."] for row in rendered_rows(page)} == {"B3"}
    page.evaluate("document.getElementById('filter-reset').click()")
    index = next(i for i, r in enumerate(records) if r.user_behavior == "B3")
    assert "B3: enacted (turns 1, 2)" in open_episode(page, index)
    index = next(i for i, r in enumerate(records) if r.user_behavior == "B9")
    assert "B9: not enacted" in open_episode(page, index)
    assert page.errors() == []

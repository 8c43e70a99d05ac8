"""The report page's builder without a browser (docs/evaluation.md, "The report page").

What the page embeds and how: the JSON documents (every ``<`` escaped, parseable, one row and one
record per episode), the tables of ``summary.md``, the plots as ``data:`` URIs, no reference to
anything outside the file, a Content-Security-Policy whose hashes match the inline script and style,
and nothing new from the environment. The browser tests (``tests/test_report_browser.py``) check what
a reader sees.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from mimesis_gym.core.redact import REDACTED
from mimesis_gym.evaluation.html_report import (
    INDEX_FIELDS,
    build_html_report,
    episode_index,
    script_json,
    write_html_report,
)
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.evaluation.summary_markup import summary_to_html
from tests.support.synthetic_runs import synthetic_record, synthetic_records, write_run

HOSTILE = '</script><script>window.__pwned = 1</script><!-- <img src=x onerror="window.__pwned = 2">'
SCRIPT_BLOCK = re.compile(r'<script type="application/json" id="([\w-]+)">(.*?)</script>', re.DOTALL)


def blobs(page: str) -> dict[str, object]:
    """The page's JSON documents by element id."""
    return {name: json.loads(text) for name, text in SCRIPT_BLOCK.findall(page)}


def markup(page: str) -> str:
    """The page without its JSON documents: what the HTML parser reads as markup."""
    return SCRIPT_BLOCK.sub("", page)


def test_script_json_escapes_every_angle_bracket_and_round_trips():
    text = json.dumps({"a": HOSTILE, "b": ["<", "</", "<!--"]})
    safe = script_json(text)
    assert "<" not in safe and "</script" not in safe.lower()
    assert json.loads(safe) == json.loads(text)


def test_hostile_record_text_stays_inside_the_json_documents():
    import random

    record = synthetic_record(
        0,
        random.Random(1),
        task_id="task <b>bold</b>",
        transcript=[{"role": "user", "content": HOSTILE}],
        error=HOSTILE,
    )
    page = build_html_report("run <x>", "## Scripted\n\n| Agent | Avg |\n|---|---|\n| a<b | **1.00** |\n", [], [record])
    # exactly the page's own three script elements: two JSON documents and the code
    assert page.count("<script") == 3 and page.lower().count("</script") == 3
    assert "__pwned" not in markup(page) and "<b>bold</b>" not in markup(page)
    assert "<title>run &lt;x&gt;</title>" in page and "<td>a&lt;b</td>" in page
    data = blobs(page)
    assert data["episode-details"][0]["transcript"][0]["content"] == HOSTILE
    assert data["episode-index"]["rows"][0][INDEX_FIELDS.index("task_id")] == "task <b>bold</b>"


def test_the_page_loads_nothing_and_its_policy_allows_only_its_own_code():
    records = synthetic_records(12)
    png = b"\x89PNG\r\n\x1a\nnot-really-a-png"
    page = build_html_report("run", "## Scripted\n", [("avg_by_user.png", png)], records)
    outside = markup(page)
    assert not re.search(r'(?:src|href)\s*=\s*"(?!data:|#)', outside), "a reference outside the file"
    assert "@import" not in outside and "url(" not in outside
    assert f'src="data:image/png;base64,{base64.b64encode(png).decode()}"' in outside
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL).group(1)
    script = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)[-1]
    for text in (style, script):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy and "http" not in policy


def test_json_documents_hold_one_row_and_one_record_per_episode_in_order():
    records = synthetic_records(30, seed=3)
    data = blobs(build_html_report("run", None, [], records))
    index, details = data["episode-index"], data["episode-details"]
    assert index["fields"] == list(INDEX_FIELDS) and len(index["rows"]) == len(details) == 30
    for row, record, detail in zip(index["rows"], records, details, strict=True):
        assert detail["key"] == record.key and detail["steps"] == [s.model_dump() for s in record.steps]
        assert row[INDEX_FIELDS.index("episode_score")] == record.episode_score
        assert row[INDEX_FIELDS.index("n_user_failures")] == len(record.user_failures)


def test_non_finite_numbers_become_null_so_the_browser_can_parse_them():
    import random

    record = synthetic_record(0, random.Random(0), episode_score=float("nan"), score_context={"x": float("inf")})
    page = build_html_report("run", None, [], [record])
    for _, text in SCRIPT_BLOCK.findall(page):
        json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in a JSON document"))
    data = blobs(page)
    assert data["episode-index"]["rows"][0][INDEX_FIELDS.index("episode_score")] is None
    assert data["episode-details"][0]["episode_score"] is None


def test_a_configured_key_value_never_reaches_the_page(monkeypatch):
    import random

    secret = "sk-report-sentinel-0123456789"
    monkeypatch.setenv("REPORT_TEST_API_KEY", secret)
    record = synthetic_record(0, random.Random(0), transcript=[{"role": "user", "content": f"key {secret}"}])
    page = build_html_report("run", None, [], [record])
    assert secret not in page and f"key {REDACTED}" in page


def test_summary_markdown_becomes_the_same_tables():
    markdown = (
        "## Scripted\n\n| Agent | Turtle | Avg | MR |\n|---|---|---|---|\n| tiny | 0.00 | 0.00 | 2.00 |\n"
        "| oracle | **100.00** | **100.00**‡ | **1.00** |\n\n‡ averaged over the columns that have a value.\n"
    )
    html = summary_to_html(markdown)
    assert "<h3>Scripted</h3>" in html
    assert "<th>Agent</th><th>Turtle</th><th>Avg</th><th>MR</th>" in html
    assert '<td class="num"><strong>100.00</strong>‡</td>' in html and "<td>oracle</td>" in html
    assert "<p>‡ averaged over the columns that have a value.</p>" in html


def test_five_thousand_episodes_build_into_one_page_of_proportionate_size(tmp_path):
    records = synthetic_records(5000, seed=7)
    path = write_html_report(tmp_path, records)
    page = path.read_text(encoding="utf-8")
    data = blobs(page)
    assert len(data["episode-index"]["rows"]) == len(data["episode-details"]) == 5000
    stored = sum(len(r.model_dump_json()) for r in records)
    # the records once (as in episodes.jsonl), an index row each, and the fixed parts: nothing is repeated
    assert len(page.encode()) < 1.2 * stored + 200 * 5000 + 200_000
    index_bytes = len(json.dumps(data["episode-index"]))
    assert index_bytes < 200 * 5000, "the index parsed at load must stay small"


def test_eval_and_report_write_the_page_with_every_episode(tmp_path, capsys):
    import asyncio

    from mimesis_gym.cli import main

    out = tmp_path / "run"
    config = EvalConfig(envs=["turtle", "function"], agents=["oracle", "scripted:random"], limit=2, privileged=True)
    asyncio.run(run_eval(config, out, progress=False))
    page = (out / "report.html").read_text(encoding="utf-8")
    records = list(ResultsStore(out / "episodes.jsonl").latest().values())
    data = blobs(page)
    assert [d["key"] for d in data["episode-details"]] == [r.key for r in records] and len(records) == 8
    assert summary_to_html((out / "summary.md").read_text(encoding="utf-8")) in page
    assert page.count('<img src="data:image/png;base64,') == len(list((out / "plots").glob("*.png"))) > 0
    function = next(d for d in data["episode-details"] if d["env"] == "function")
    assert function["privileged"]["hidden"]["rule"]  # the privileged data travels too (shown behind the toggle)

    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0  # --out defaults to the run directory
    assert blobs((out / "report.html").read_text(encoding="utf-8"))["episode-details"] == data["episode-details"]
    assert "report.html" in capsys.readouterr().err


def test_report_from_scores_writes_a_page_without_episodes(tmp_path):
    from mimesis_gym.cli import main
    from mimesis_gym.envs import ENV_TABLE

    columns = ENV_TABLE.column_names()
    table = tmp_path / "scores.csv"
    table.write_text(
        "user,agent," + ",".join(columns) + "\n" + "u,a," + ",".join("50" for _ in columns) + "\n", encoding="utf-8"
    )
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert blobs(page)["episode-details"] == [] and "<td>a</td>" in page


def test_a_synthetic_run_directory_reports_like_a_real_one(tmp_path):
    out = write_run(tmp_path / "run", synthetic_records(40))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert {row["agent"] for s in summary["sections"] for row in s["rows"]} == {"oracle", "scripted:random", "tiny"}
    assert len(blobs((out / "report.html").read_text(encoding="utf-8"))["episode-details"]) == 40


def test_index_rows_shorten_long_errors():
    import random

    record = synthetic_record(0, random.Random(0), status="env_error", error="E" * 5000)
    row = episode_index([record])["rows"][0]
    assert len(row[INDEX_FIELDS.index("error")]) == 200


@pytest.mark.parametrize("name", ["report.css", "report.js", "report.html"])
def test_assets_ship_with_the_package(name):
    from importlib import resources

    assert resources.files("mimesis_gym.evaluation").joinpath("report_assets", name).is_file()
    root = Path(__file__).resolve().parents[1]
    assert "report_assets/*" + Path(name).suffix in (root / "pyproject.toml").read_text(encoding="utf-8")


def test_a_run_directory_name_that_is_not_utf8_still_gets_its_page(tmp_path):
    out = tmp_path / "run-\udcff"  # how Python names a directory whose name holds the byte 0xff
    out.mkdir()
    page = write_html_report(out, synthetic_records(2)).read_text(encoding="utf-8")
    assert "<title>mimesis-gym report: run-\ufffd</title>" in page

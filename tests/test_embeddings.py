"""The users report's embedding homogeneity: the text embedder on the tiny model, and the report with it
(docs/users-report.md, "Homogeneity")."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the local stack is installed by `make test`")

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.embeddings import TextEmbedder, embedder_path
from mimesis_gym.evaluation.user_metrics import Exchange, UserDialogue, homogeneity
from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report

REFUND = "I want a refund for my order."
MONEY_BACK = "Please give me my money back for the purchase."
WEATHER = "The weather in Paris is sunny today, with a light breeze from the west."


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    return TextEmbedder("tiny", batch_size=2)


def test_a_text_is_most_like_itself_and_a_paraphrase_beats_another_topic(embedder: TextEmbedder) -> None:
    assert embedder.similarity(REFUND, REFUND) == pytest.approx(1.0, abs=1e-5)
    assert embedder.similarity(REFUND, MONEY_BACK) == pytest.approx(embedder.similarity(MONEY_BACK, REFUND))
    assert embedder.similarity(REFUND, MONEY_BACK) > embedder.similarity(REFUND, WEATHER) + 0.05


def test_padding_in_a_batch_does_not_change_a_vector(embedder: TextEmbedder) -> None:
    alone = TextEmbedder("tiny", batch_size=1)
    alone.prepare([REFUND])
    embedder.prepare([REFUND, WEATHER * 3])  # the short text is padded beside the long one
    assert float(alone._vectors[REFUND] @ embedder._vectors[REFUND]) == pytest.approx(1.0, abs=1e-4)


def test_embedding_homogeneity_of_hand_written_dialogues(embedder: TextEmbedder) -> None:
    def dialogue(reply: str, task: str) -> UserDialogue:
        return UserDialogue(env="intention", user="u", task_id=task, exchanges=(Exchange("What do you need?", reply),))

    same = [dialogue(REFUND, "a"), dialogue(REFUND, "b")]
    varied = [dialogue(REFUND, "a"), dialogue(WEATHER, "b")]
    assert homogeneity(same, embedder.similarity) == (pytest.approx(1.0, abs=1e-5), 1)
    score, pairs = homogeneity(varied, embedder.similarity)
    assert pairs == 1 and score < 0.95


@pytest.mark.parametrize(
    ("spec", "message"),
    [("hf:/nonexistent-model-dir", "no model at '/nonexistent-model-dir'"), ("/some/dir", "give `tiny` or `hf:PATH`"),
     ("hf:", "give `tiny` or `hf:PATH`")],
)  # fmt: skip
def test_a_spec_that_names_no_model_is_refused_naming_it(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        embedder_path(spec)


def test_the_report_adds_the_embedding_row_only_with_an_embedder(tmp_path: Path) -> None:
    def report(out: Path, **settings) -> dict:
        config = UsersReportConfig(users=["scripted"], agent="scripted:noop", envs=["intention"], limit=1, **settings)
        return asyncio.run(run_users_report(config, out, progress=False))

    lexical = report(tmp_path / "lexical")
    embedded = report(tmp_path / "embedded", embedder="tiny", trials=2)
    assert lexical["users"]["scripted"]["homogeneity_embedding"] is None
    assert "embedding cosine" not in (tmp_path / "lexical" / "users_report.md").read_text()
    scripted = embedded["users"]["scripted"]
    assert scripted["homogeneity_pairs"] > 0 and 0.0 < scripted["homogeneity_embedding"] <= 1.0
    assert scripted["envs"]["intention"]["homogeneity_embedding"] == scripted["homogeneity_embedding"]
    assert "| homogeneity (embedding cosine) |" in (tmp_path / "embedded" / "users_report.md").read_text()
    stored = json.loads((tmp_path / "embedded" / "users_report.json").read_text())
    assert stored["config"]["embedder"] == "tiny"

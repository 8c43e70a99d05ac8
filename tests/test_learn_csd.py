"""CSD plumbing (docs/algorithms.md, "Teacher rows"): teacher rows on ChatML and the null probe."""

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.batching import collate  # noqa: E402
from mimesis_gym.algorithms.learners.csd.coach import note_message  # noqa: E402
from mimesis_gym.algorithms.learners.csd.loss import csd_gate, csd_loss  # noqa: E402
from mimesis_gym.algorithms.learners.csd.teacher import build_teacher_row, teacher_ids  # noqa: E402
from mimesis_gym.algorithms.logprobs import PolicyScorer  # noqa: E402
from mimesis_gym.algorithms.render import ChatRenderer  # noqa: E402
from mimesis_gym.algorithms.testing import tiny_random_model  # noqa: E402
from mimesis_gym.core.tiny import TinyModelUnavailable  # noqa: E402
from tests.test_rollout import scripted_collect  # noqa: E402


@pytest.fixture(scope="module")
def collected():
    try:
        episode, _, tokenizer = scripted_collect(["banana split", "apple"])
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    return episode, tokenizer


def test_teacher_row_on_chatml(collected):
    episode, tokenizer = collected
    renderer = ChatRenderer(tokenizer)
    turn = episode.turns[1]
    ids = episode.segments[0].input_ids
    row = build_teacher_row(episode, turn, "Reply with the word only.", renderer)
    p = turn.action_span[0] - turn.gen_prompt_len
    delta = renderer.note_delta(note_message("Reply with the word only."))
    assert row.input_ids == ids[:p] + delta + ids[p : turn.action_span[1]]
    assert tokenizer.decode(ids[:p]).endswith("Reply with exactly one word: apple\nReward: 0.0<|im_end|>\n")
    assert tokenizer.decode(row.input_ids[p:]) == (
        "<|im_start|>user\n=== HINDSIGHT CONTEXT ===\n[Guidance about what the user needs; use it to shape your "
        "reply.]\nReply with the word only.<|im_end|>\n<|im_start|>assistant\napple<|im_end|>"
    )
    start, end = row.teacher_span
    assert row.shift == len(delta) and row.input_ids[start:end] == ids[turn.action_span[0] : turn.action_span[1]]


def test_null_probe(collected):
    episode, tokenizer = collected
    try:
        model, _ = tiny_random_model(seed=0)
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    scorer = PolicyScorer(model)
    segment = episode.segments[0]
    turn = episode.turns[0]  # the episode goes on after it: the student row is longer than the teacher row
    start, end = turn.action_span
    null_row = teacher_ids(segment.input_ids, turn, [])
    assert null_row == segment.input_ids[:end]  # a note-free teacher row reproduces the student ids

    def score(rows, packing):
        batch = collate(rows, packing=packing, pad_id=2)
        masks = batch.place([[1] * len(r) for r in rows], dtype=torch.bool)
        with torch.no_grad():
            values, _ = scorer(batch.input_ids, masks, batch.position_ids, batch.attention_mask)
        return batch.take(values)

    other = list(reversed(segment.input_ids))[:30]
    student = score([segment.input_ids, other], packing=False)[0][start:end]
    same_layout = score([segment.input_ids, other], packing=False)[0][start:end]
    assert student == same_layout  # Δ = 0 exactly in the same layout
    alone = score([null_row], packing=True)[0][start:end]
    assert max(abs(a - b) for a, b in zip(alone, student, strict=True)) <= 1e-4


def test_gate_is_detached_and_gradients_reach_the_model_only_through_the_student():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, requires_grad=True)
    ids = torch.tensor([1, 2, 3])
    student = torch.log_softmax(logits, -1)[torch.arange(3), ids]
    teacher_logits = torch.randn(3, 5, requires_grad=True)
    teacher = torch.log_softmax(teacher_logits, -1)[torch.arange(3), ids]
    loss = csd_loss(student, teacher, torch.ones(3))
    loss.backward()
    assert teacher_logits.grad is None  # the teacher term is a constant of the loss
    gate = csd_gate(teacher - student)
    expected = torch.autograd.grad(
        -(gate.detach() * torch.log_softmax(logits, -1)[torch.arange(3), ids]).mean(), logits
    )
    assert torch.allclose(logits.grad, expected[0])
    assert all(logits.grad[k, ids[k]] < 0 for k in range(3))  # a descent step raises every sampled id

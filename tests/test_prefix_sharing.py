"""A prefix the rows share runs once (docs/algorithms.md, "Micro-batches and packing"): the plan, the
scorer's log-probs and gradients, and two trainer steps against the recorded numbers."""

import json
import random

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.batching import (  # noqa: E402
    MIN_SHARED_PREFIX,
    MicroPlan,
    collate,
    common_prefix,
    plan_micro,
    plan_shared_prefixes,
)
from mimesis_gym.algorithms.config import TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.logprobs import PolicyScorer  # noqa: E402
from mimesis_gym.algorithms.policy import prefix_sharing_supported  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401
from tests.test_learner_golden import ABSOLUTE, GOLDEN, RELATIVE, SCENARIOS, replay_scenario  # noqa: E402

SYSTEM = list(range(10, 310))  # 300 tokens every row starts with


def group(prompt_token: int, replies: list[int]) -> list[list[int]]:
    """The rows of one group: the system prompt, a 280-token task prompt, then replies of these lengths."""
    prompt = SYSTEM + [prompt_token] * 280
    return [prompt + [1000 + k] * n for k, n in enumerate(replies)]


def test_rows_of_one_group_share_their_prompt_and_groups_stay_apart():
    first, second = group(5, [40, 12, 30, 5]), group(6, [7, 9, 11])
    rows = [second[0], first[2], [3] * 100, first[0], second[2], first[1], first[3], second[1]]
    plans, rest = plan_shared_prefixes(rows, 4096)
    assert sorted(map(tuple, (p.rows for p in plans))) == [(0, 4, 7), (1, 3, 5, 6)]
    assert all(p.shared_prefix == 580 for p in plans)  # the group's prompt, not just the system prompt
    assert rest == [2]
    assert plan_shared_prefixes(list(reversed(rows)), 4096)[0] != []  # the input order does not matter
    # every row exactly once, and every shared batch within the budget
    budget = 700
    plan = plan_micro(rows, budget, packing=True, share_prefix=True)
    assert sorted(i for p in plan for i in p.rows) == list(range(len(rows)))
    for p in plan:
        if p.shared_prefix:
            longest = max(len(rows[i]) for i in p.rows)
            assert p.shared_prefix + len(p.rows) * (longest - p.shared_prefix) <= budget
            assert all(common_prefix(rows[p.rows[0]], rows[i]) >= p.shared_prefix for i in p.rows)
            assert all(len(rows[i]) > p.shared_prefix for i in p.rows)
    off = plan_micro(rows, 4096, packing=True, share_prefix=False)
    assert all(p.shared_prefix == 0 for p in off)


def test_short_prefixes_and_single_rows_are_left_to_the_plain_plan():
    assert TrainerConfig().update.prefix_sharing_min_tokens == MIN_SHARED_PREFIX  # one default, two places
    rows = [[1] * 50 + [2], [1] * 50 + [3], [4] * 400]
    assert plan_shared_prefixes(rows, 4096) == ([], [0, 1, 2])
    assert plan_shared_prefixes(rows, 4096, min_prefix=16) == ([MicroPlan([0, 1], 50)], [2])
    identical = [[7] * 300, [7] * 300]  # a row keeps at least one token of its own
    assert plan_shared_prefixes(identical, 4096) == ([MicroPlan([0, 1], 299)], [])
    rng = random.Random(0)
    many = [SYSTEM + [rng.randint(3, 9)] * rng.randint(1, 40) for _ in range(30)]
    plans, rest = plan_shared_prefixes(many, 4096)
    assert sorted([i for p in plans for i in p.rows] + rest) == list(range(30))


def test_the_shared_prefix_scores_and_backpropagates_like_the_full_rows():
    torch.manual_seed(0)
    model, _ = tiny_random_model(seed=0)
    scorer = PolicyScorer(model)
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, 5000, (120,), generator=generator).tolist()
    rows = [prompt + torch.randint(3, 5000, (n,), generator=generator).tolist() for n in (9, 3, 6)]
    batch = collate(rows, packing=False, pad_id=0)
    # positions 100.. are scored: some inside the shared prefix
    mask = batch.place([[0] * 100 + [1] * (len(row) - 100) for row in rows], dtype=torch.bool)
    results = []
    for shared in (0, len(prompt)):
        model.zero_grad()
        logprobs, entropy = scorer(batch.input_ids, mask, batch.position_ids, batch.attention_mask, 1.0, True, shared)
        (logprobs.sum() + entropy.sum()).backward()
        results.append((logprobs.detach(), entropy.detach(), [p.grad.clone() for p in model.parameters()]))
    (full, full_entropy, full_grads), (once, once_entropy, once_grads) = results
    assert (full != 0).sum() == mask[:, 1:].sum()
    assert torch.allclose(full, once, atol=1e-5) and torch.allclose(full_entropy, once_entropy, atol=1e-5)
    for a, b in zip(full_grads, once_grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="at least one token"):
        scorer(batch.input_ids, mask, batch.position_ids, batch.attention_mask, 1.0, False, batch.input_ids.shape[1])
    assert prefix_sharing_supported(scorer, 0, "cpu")


@pytest.mark.parametrize("name", ["grpo", "csd", "infopo"])
def test_two_steps_with_shared_prefixes_match_the_recorded_numbers(tmp_path, name, monkeypatch):
    """The golden scenarios, replayed, with every group's prompt run once: the same metrics (rounding aside)."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    spec = dict(SCENARIOS[name])
    spec["overrides"] = [*spec.get("overrides", []), "update.prefix_sharing=on", "update.prefix_sharing_min_tokens=8"]
    monkeypatch.setitem(SCENARIOS, name, spec)
    actual = replay_scenario(name, tmp_path)
    assert all(step["batch/prefix_shared_frac"] > 0 for step in actual["steps"])  # short prompts: a small share
    assert actual["counters"]["student_forwards"] > golden["counters"]["student_forwards"]  # a batch per group
    for got, want in zip(actual["steps"], golden["steps"], strict=True):
        assert sorted(got) == sorted(want)
        for key, value in want.items():
            if key not in ("batch/prefix_shared_frac", "batch/padding_frac"):  # shared batches are padded
                assert got[key] == pytest.approx(value, rel=RELATIVE, abs=ABSOLUTE), key
    assert actual["weight_change"] == pytest.approx(golden["weight_change"], rel=RELATIVE)


def test_prefix_sharing_on_with_gradient_checkpointing_is_refused(tmp_path):
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [f"run.output_dir={tmp_path}", "update.prefix_sharing=on", "update.gradient_checkpointing=true"]
    )
    with pytest.raises(ValueError, match="gradient_checkpointing=false"):
        Trainer([(ENV_ID, {})], tiny_random_model(seed=0), algorithm="grpo", config=config)

"""Token-exact collection (docs/algorithms.md) on the tiny random model, SmolLM2 and a scripted engine."""

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import RolloutConfig  # noqa: E402
from mimesis_gym.algorithms.engines.base import Sample  # noqa: E402
from mimesis_gym.algorithms.engines.local import LocalEngine  # noqa: E402
from mimesis_gym.algorithms.logprobs import PolicyScorer  # noqa: E402
from mimesis_gym.algorithms.render import ChatRenderer  # noqa: E402
from mimesis_gym.algorithms.rollout import Collector, EpisodeRequest  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model, tiny_tokenizer  # noqa: E402
from mimesis_gym.core.tiny import TinyModelUnavailable  # noqa: E402
from tests.support.torch_fixtures import one_thread  # noqa: E402, F401


@pytest.fixture(scope="module")
def random_model():
    try:
        return tiny_random_model(seed=0)
    except TinyModelUnavailable as error:
        pytest.skip(str(error))


def requests(count, env_id=ENV_ID, task="train-00", **kwargs):
    kwargs = {"split": "train", "reward_profile": "train", **kwargs}
    return [
        EpisodeRequest(lambda: gym.make(env_id, **kwargs), env_id, task, 0, f"0:0:{env_id}:{task}:0", f"0:0:{m}")
        for m in range(count)
    ]


def collect_with(model, tokenizer, count=6, **config):
    renderer = ChatRenderer(tokenizer)
    engine = LocalEngine(model, tokenizer, stop_ids=renderer.stop_ids, end_of_turn_id=renderer.end_of_turn_id)
    collector = Collector(engine, tokenizer, RolloutConfig(max_tokens_per_turn=config.pop("max_tokens", 16), **config))
    return collector.collect(requests(count, reward_rule="parity"), seed=3)


def assert_token_exact(episodes, model, tokenizer):
    renderer = ChatRenderer(tokenizer)
    scorer = PolicyScorer(model)
    worst = 0.0
    for episode in episodes:
        (segment,) = episode.segments
        ids = segment.input_ids
        position = segment.prompt_len
        for turn in episode.turns:
            # prompt, then each turn's action ids and observation ids, in order and contiguous
            assert turn.action_span[0] == position
            position = turn.action_span[1]
            action = ids[turn.action_span[0] : turn.action_span[1]]
            visible = action[:-1] if turn.finish in ("stop", "eos") else action
            assert tokenizer.decode(visible, skip_special_tokens=False) == turn.action_text
            assert all(m == 1 for m in segment.loss_mask[turn.action_span[0] : turn.action_span[1]])
            if turn.obs_span is not None:
                assert turn.obs_span[0] == position
                assert ids[turn.obs_span[0] : turn.obs_span[1]] == renderer.observation_delta(turn.observation).ids
                assert all(m == 0 for m in segment.loss_mask[turn.obs_span[0] : turn.obs_span[1]])
                position = turn.obs_span[1]
        assert position == len(ids)
        assert sum(segment.loss_mask) == sum(t.action_tokens for t in episode.turns)
        # the trainer conditions on what the sampler conditioned on: recompute every sampled id's log-prob
        with torch.no_grad():
            batch = torch.tensor([ids])
            recomputed, _ = scorer(batch, torch.tensor([segment.loss_mask], dtype=torch.bool))
        for turn in episode.turns:
            start, end = turn.action_span
            for k, sampled in zip(range(start, end), turn.sampler_logprobs, strict=True):
                worst = max(worst, abs(float(recomputed[0, k]) - sampled))
    return worst


def test_token_fidelity_on_the_tiny_random_model(random_model):
    model, tokenizer = random_model
    episodes = collect_with(model, tokenizer)
    assert len(episodes) == 6
    assert any(turn.obs_span for e in episodes for turn in e.turns)  # multi-turn episodes happened
    assert assert_token_exact(episodes, model, tokenizer) <= 1e-3


def test_group_members_share_task_and_seed_and_get_their_own_ids(random_model):
    model, tokenizer = random_model
    episodes = collect_with(model, tokenizer, count=4)
    assert [e.rollout_id for e in episodes] == ["0:0:0", "0:0:1", "0:0:2", "0:0:3"]
    assert {e.group_id for e in episodes} == {f"0:0:{ENV_ID}:train-00:0"}
    assert all(e.segments[0].rollout_id == e.rollout_id for e in episodes)
    assert len({tuple(e.segments[0].input_ids) for e in episodes}) > 1  # the policy's samples differ
    for episode in episodes:
        assert episode.messages[0] == {"role": "user", "content": "Reply with exactly one word: apple"}
        for turn in episode.turns:
            assert turn.reward in (0.0, 1.0)
            assert turn.user_utterance is None or "Reward:" not in turn.user_utterance


@pytest.mark.slow
def test_token_fidelity_on_smollm2():
    from transformers import AutoModelForCausalLM

    from mimesis_gym.core.tiny import ensure_tiny_model

    try:
        path = ensure_tiny_model()
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    episodes = collect_with(model, tiny_tokenizer(), count=4, max_tokens=12)
    assert assert_token_exact(episodes, model, tiny_tokenizer()) <= 1e-3


class ScriptedEngine:
    """Emits fixed completions (encoded text + stop id), so collection paths are deterministic."""

    def __init__(self, tokenizer, completions, finish="stop"):
        self.tokenizer, self.completions, self.finish = tokenizer, list(completions), finish
        self.stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.prompts = []

    def generate(self, prompts, *, max_new_tokens, sampling, seed=None):
        samples = []
        for prompt, limit in zip(prompts, max_new_tokens, strict=True):
            self.prompts.append(list(prompt))
            ids = self.tokenizer(self.completions.pop(0), add_special_tokens=False)["input_ids"]
            if self.finish == "stop" and len(ids) < limit:
                samples.append(Sample([*ids, self.stop], [0.0] * (len(ids) + 1), "stop"))
            else:
                samples.append(Sample(ids[:limit], [0.0] * min(limit, len(ids)), "length"))
        return samples


def scripted_collect(completions, *, env_id=ENV_ID, task="train-00", finish="stop", **config):
    tokenizer = tiny_tokenizer()
    engine = ScriptedEngine(tokenizer, completions, finish)
    collector = Collector(engine, tokenizer, RolloutConfig(**config))
    kwargs = {"split": "demo"} if env_id != ENV_ID else {}
    (episode,) = collector.collect(requests(1, env_id=env_id, task=task, **kwargs))
    return episode, engine, tokenizer


def test_turns_condition_on_the_accumulated_ids():
    episode, engine, _ = scripted_collect(["banana split", "apple"])
    assert [t.reward for t in episode.turns] == [0.0, 1.0] and episode.terminated
    first, second = engine.prompts
    assert second[: len(first)] == first  # never re-tokenised: the second prompt extends the first
    assert second == episode.segments[0].input_ids[: episode.turns[1].action_span[0]]
    assert episode.turns[1].gen_prompt_len == 4 and episode.turns[0].feedback_span is not None


def test_length_finish_ends_truncated_without_stepping():
    episode, _, _ = scripted_collect(["a b c d e f g h"], finish="length", max_tokens_per_turn=4)
    (turn,) = episode.turns
    assert (turn.finish, turn.stepped, episode.truncated, turn.reward) == ("length", False, True, 0.0)
    assert episode.messages == [{"role": "user", "content": "Reply with exactly one word: apple"}]
    assert sum(episode.segments[0].loss_mask) == 4


def test_mask_truncated_turns():
    episode, _, _ = scripted_collect(
        ["a b c d e f g h"], finish="length", max_tokens_per_turn=4, mask_truncated_turns=True
    )
    assert sum(episode.segments[0].loss_mask) == 0


def test_the_response_budget_ends_the_episode():
    episode, _, _ = scripted_collect(["no", "no"], max_response_tokens=20)
    assert episode.turns[0].finish == "budget" and episode.truncated
    assert len(episode.segments[0].input_ids) - episode.segments[0].prompt_len <= 20


def test_max_turns_and_end_on_invalid_action():
    episode, _, _ = scripted_collect(["no", "no", "no"], max_turns=2)
    assert len(episode.turns) == 2 and episode.truncated and episode.turns[-1].obs_span is None
    episode, _, _ = scripted_collect(["", "apple"], end_on_invalid_action=True)
    assert len(episode.turns) == 1 and not episode.turns[0].valid_action


def test_a_too_long_prompt_skips_the_task():
    tokenizer = tiny_tokenizer()
    collector = Collector(ScriptedEngine(tokenizer, []), tokenizer, RolloutConfig(max_prompt_tokens=10))
    assert collector.collect(requests(2)) == []
    assert collector.skipped_tasks == [f"{ENV_ID}:train-00"]


def test_tool_calls_become_tool_messages_and_the_grammar_note_is_added():
    arguments = '{"choice": "action", "content": "Is it alive?"}'
    call = f'<tool_call>{{"name": "interact_with_env", "arguments": {arguments}}}</tool_call>'
    episode, engine, tokenizer = scripted_collect(
        [call, "[answer] a cat"], env_id="mimesis/TelepathyGym-v0", task="telepathy-demo-01", max_turns=2
    )
    first = episode.turns[0]
    assert first.tool_call and first.parsed_action == {"choice": "action", "content": "Is it alive?"}
    obs_text = tokenizer.decode(episode.segments[0].input_ids[first.obs_span[0] : first.obs_span[1]])
    assert obs_text.startswith("\n<|im_start|>tool\n")
    assert episode.turns[1].parsed_action == "[answer] a cat"
    prompt = tokenizer.decode(engine.prompts[0])
    assert "To interact, write exactly one line that starts with one of these tags" in prompt


def test_per_turn_context_mode_makes_one_segment_per_turn():
    episode, engine, _ = scripted_collect(["banana", "apple"], context_mode="per_turn")
    assert len(episode.segments) == 2 and [t.segment for t in episode.turns] == [0, 1]
    for turn, segment in zip(episode.turns, episode.segments, strict=True):
        assert segment.input_ids[: segment.prompt_len] == engine.prompts[turn.index - 1]
        assert sum(segment.loss_mask) == turn.action_tokens
        assert segment.rollout_id == episode.rollout_id

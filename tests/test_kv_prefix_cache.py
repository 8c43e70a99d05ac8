"""The local engine's KV prefix cache: matching, LRU eviction under a byte budget (docs/users.md, "A local model")."""

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.core.kv_prefix_cache import PrefixCache, shared_prefix_lengths  # noqa: E402

LAYERS = 2
BYTES_PER_TOKEN = LAYERS * 2 * 3 * 4 * 4  # layers x (keys, values) x heads x head_dim x float32


def kv(ids):
    """Layers whose values encode the token ids, so a reused prefix can be checked by value."""
    column = torch.tensor(ids, dtype=torch.float32).view(1, 1, -1, 1).expand(1, 3, -1, 4).contiguous()
    return [(column + layer, column - layer) for layer in range(LAYERS)]


def test_the_longest_prefix_is_reused_and_cut_to_the_match():
    cache = PrefixCache(10_000)
    cache.put([1, 2, 3], kv([1, 2, 3]))
    cache.put([1, 2, 7, 8, 9], kv([1, 2, 7, 8, 9]))
    n, layers = cache.take([1, 2, 7, 8, 5, 6])
    assert n == 4
    assert layers[1][0][0, 0, :, 0].tolist() == [2.0, 3.0, 8.0, 9.0]  # ids 1, 2, 7, 8 plus layer 1
    assert len(cache) == 2  # matched in part: it stays for other requests


def test_an_entry_the_prompt_extends_is_taken_out_and_at_least_one_token_is_left_to_prefill():
    cache = PrefixCache(10_000)
    cache.put([4, 5, 6], kv([4, 5, 6]))
    n, layers = cache.take([4, 5, 6])
    assert n == 2 and layers[0][0].shape[2] == 2
    assert len(cache) == 0 and cache.bytes_used == 0
    assert cache.take([4, 5, 6, 7]) == (0, None)


def test_no_match_and_single_token_prompts_reuse_nothing():
    cache = PrefixCache(10_000)
    cache.put([1, 2], kv([1, 2]))
    assert cache.take([9, 1, 2]) == (0, None)
    assert cache.take([1]) == (0, None)


def test_least_recently_used_entries_are_evicted_under_the_budget():
    cache = PrefixCache(9 * BYTES_PER_TOKEN)
    cache.put([1, 1, 1], kv([1, 1, 1]))
    cache.put([2, 2, 2], kv([2, 2, 2]))
    cache.put([3, 3, 3], kv([3, 3, 3]))
    assert cache.bytes_used == 9 * BYTES_PER_TOKEN
    assert cache.take([1, 1, 9])[0] == 2  # touches entry 1; entry 2 is now the oldest
    cache.put([4, 4, 4], kv([4, 4, 4]))
    assert cache.take([2, 2, 9]) == (0, None)
    assert cache.take([1, 1, 9])[0] == 2 and cache.take([3, 3, 9])[0] == 2
    assert cache.bytes_used <= cache.budget_bytes


def test_entries_larger_than_the_budget_and_a_zero_budget_store_nothing():
    assert not PrefixCache(2 * BYTES_PER_TOKEN).put([1, 2, 3], kv([1, 2, 3]))
    off = PrefixCache(0)
    assert not off.put([1], kv([1])) and len(off) == 0
    with pytest.raises(ValueError, match="budget"):
        PrefixCache(-1)


def test_a_longer_sequence_replaces_its_own_prefix():
    cache = PrefixCache(10_000)
    cache.put([1, 2], kv([1, 2]))
    cache.put([1, 2, 3, 4], kv([1, 2, 3, 4]))
    assert len(cache) == 1 and cache.bytes_used == 4 * BYTES_PER_TOKEN
    cache.clear()
    assert len(cache) == 0 and cache.bytes_used == 0


def test_a_shared_entry_stays_when_prompts_extend_it_and_match_changes_nothing():
    cache = PrefixCache(10_000)
    cache.put([1, 2, 3], kv([1, 2, 3]), shared=True)  # a system prompt several joining prompts start with
    assert cache.match([1, 2, 3, 4]) == 3 and len(cache) == 1
    for tail in ([4], [5, 6]):
        n, layers = cache.take([1, 2, 3, *tail])
        assert n == 3 and layers[0][0][0, 0, :, 0].tolist() == [1.0, 2.0, 3.0]
    assert len(cache) == 1
    cache.put([1, 2, 3, 4], kv([1, 2, 3, 4]))  # a longer entry that extends it still replaces it
    assert len(cache) == 1 and cache.match([1, 2, 3, 4, 5]) == 4


def test_shared_prefix_lengths_leave_each_prompt_a_token_to_prefill():
    prompts = [[1, 2, 3, 4], [1, 2, 3, 9, 9], [1, 2, 3, 4], [7, 8]]
    assert shared_prefix_lengths(prompts) == [3, 3, 3, 0]
    assert shared_prefix_lengths([[5, 6]]) == [0]

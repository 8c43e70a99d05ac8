"""Balancing, micro-batching, packing and the chunked log-probs (docs/algorithms.md, "Micro-batches and packing")."""

import random

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.batching import (  # noqa: E402
    PAD_SLACK,
    balance,
    collate,
    packed_spans,
    padding_fraction,
    plan_micro_batches,
)
from mimesis_gym.algorithms.logprobs import PolicyScorer, selective_log_softmax  # noqa: E402


def test_balance_gives_equal_counts_and_balanced_tokens():
    assert balance([100, 90, 10, 5], 2) == [[0, 3], [1, 2]]
    rng = random.Random(0)
    for n in range(0, 13):
        for ranks in (1, 2, 3, 4):
            lengths = [rng.randint(1, 500) for _ in range(n)]
            shares = balance(lengths, ranks)
            counts = [len(share) for share in shares]
            assert sorted(i for share in shares for i in share) == list(range(n))
            assert max(counts) - min(counts) <= 1


def test_packing_fills_the_budget_and_padding_stays_under_a_quarter():
    rng = random.Random(1)
    lengths = [rng.randint(40, 600) for _ in range(64)]
    packed = plan_micro_batches(lengths, 2048, packing=True)
    assert all(sum(lengths[i] for i in group) <= 2048 for group in packed)
    assert sorted(i for group in packed for i in group) == list(range(64))
    assert padding_fraction(lengths, packed, packing=True) == 0.0
    padded = plan_micro_batches(lengths, 2048, packing=False)
    for group in padded:
        width, real = max(lengths[i] for i in group), sum(lengths[i] for i in group)
        assert len(group) == 1 or (len(group) * width <= 2048 and len(group) * width <= PAD_SLACK * real)
    assert padding_fraction(lengths, padded, packing=False) <= PAD_SLACK - 1
    assert plan_micro_batches([5000, 10], 2048, packing=True) == [[0], [1]]  # a long row gets its own batch


def test_collate_places_and_takes_rows_back():
    rows = [[5, 6, 7], [8, 9]]
    for packing in (True, False):
        batch = collate(rows, packing=packing, pad_id=0)
        values = batch.place([[1.0, 2.0, 3.0], [4.0, 5.0]])
        assert batch.take(values) == [[1.0, 2.0, 3.0], [4.0, 5.0]]
    packed = collate(rows, packing=True, pad_id=0)
    assert packed.input_ids.tolist() == [[5, 6, 7, 8, 9]] and packed.position_ids.tolist() == [[0, 1, 2, 0, 1]]
    assert packed.attention_mask is None and packed.padded_tokens == packed.real_tokens == 5
    padded = collate(rows, packing=False, pad_id=0)
    assert padded.input_ids.tolist() == [[5, 6, 7], [8, 9, 0]] and padded.padded_tokens == 6


def test_selective_log_softmax_and_temperature():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    chosen, entropy = selective_log_softmax(logits, torch.tensor([1]), temperature=2.0, with_entropy=True)
    expected = torch.log_softmax(logits / 2.0, -1)
    assert chosen.item() == pytest.approx(expected[0, 1].item())
    assert entropy.item() == pytest.approx(-(expected.exp() * expected).sum().item())


@pytest.fixture(scope="module")
def scorer():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)  # fmt: skip
    return PolicyScorer(LlamaForCausalLM(config).eval(), chunk_size=3)


def test_packed_and_padded_log_probs_match_a_full_forward(scorer):
    rows = [[1, 5, 9, 13, 17, 21], [2, 4, 8], [3, 6, 9, 12]]
    masks = [[0, 0, 1, 1, 1, 1], [0, 1, 1], [0, 1, 1, 1]]
    with torch.no_grad():
        reference = []
        for row in rows:
            logits = scorer.model(torch.tensor([row])).logits[0].float()
            full = torch.log_softmax(logits, -1)
            reference.append([0.0] + [full[k - 1, row[k]].item() for k in range(1, len(row))])
        for packing in (True, False):
            batch = collate(rows, packing=packing, pad_id=0)
            values, _ = scorer(
                batch.input_ids, batch.place(masks, dtype=torch.bool), batch.position_ids, batch.attention_mask
            )
            for got, ref, mask in zip(batch.take(values), reference, masks, strict=True):
                for g, r, m in zip(got, ref, mask, strict=True):
                    assert g == (pytest.approx(r, abs=1e-5) if m else 0.0)


def test_gradients_flow_only_through_scored_positions(scorer):
    batch = collate([[1, 2, 3, 4]], packing=True, pad_id=0)
    mask = batch.place([[0, 0, 1, 0]], dtype=torch.bool)
    values, _ = scorer(batch.input_ids, mask, batch.position_ids)
    assert values.requires_grad and values[0, 3].item() == 0.0 and values[0, 1].item() == 0.0
    values.sum().backward()
    assert scorer.model.lm_head.weight.grad.abs().sum() > 0


def test_packed_spans_hold_whole_sequences_within_the_width():
    positions = [0, 1, 2, 0, 1, 0, 1, 2, 3, 0]  # sequences of 3, 2, 4 and 1 tokens
    assert packed_spans(positions, 5) == [(0, 5), (5, 10)]
    assert packed_spans(positions, 100) == [(0, 10)]
    assert packed_spans([0, 1, 0, 1, 2, 3, 4, 5, 6, 0, 1], 5) == [(0, 2), (2, 9), (9, 11)]  # a long one alone
    assert packed_spans([], 5) == [] and packed_spans([0, 1, 2], 2) == [(0, 3)]


def test_a_long_packed_row_runs_in_bounded_spans_with_the_same_log_probs_and_gradients(scorer):
    """Attention over one packed row costs time quadratic in its tokens: the scorer runs spans of whole
    sequences instead (issue 31.2), and the log-probs and gradients stay those of the whole row."""
    generator = random.Random(3)
    rows = [[generator.randrange(3, 97) for _ in range(n)] for n in (9, 4, 12, 7, 5, 11, 3)]
    masks = [[0] * 2 + [1] * (len(row) - 2) for row in rows]
    batch = collate(rows, packing=True, pad_id=0)
    mask = batch.place(masks, dtype=torch.bool)
    lengths: list[int] = []
    hook = scorer.model.model.register_forward_pre_hook(
        lambda module, args, kwargs: lengths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    results, saved = [], scorer.span_tokens
    try:
        for span_tokens in (10**6, 16):  # one span of the whole row, then spans of at most 16 tokens
            scorer.span_tokens, lengths[:] = span_tokens, []
            scorer.zero_grad()
            values, _ = scorer(batch.input_ids, mask, batch.position_ids, batch.attention_mask)
            values.sum().backward()
            gradient = scorer.model.model.layers[0].self_attn.q_proj.weight.grad.clone()
            results.append((batch.take(values.detach()), gradient, list(lengths)))
    finally:
        hook.remove()
        scorer.span_tokens = saved
        scorer.zero_grad()
    (whole, whole_grad, whole_calls), (spans, span_grad, span_calls) = results
    assert whole_calls == [51] and len(span_calls) > 1 and max(span_calls) <= 16 and sum(span_calls) == 51
    for a, b in zip(whole, spans, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert torch.allclose(whole_grad, span_grad, atol=1e-6)

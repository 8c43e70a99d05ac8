"""The local engine's running batch: rows join, decode and leave in one slab cache (docs/users.md, "A local model").

Every row's logits are checked against the same row decoded alone through transformers'
``DynamicCache``, while rows join longer and shorter than the view, leave from the middle, and the
slabs run out of columns (a tiny headroom forces every relayout path).
"""

import inspect

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")
pytest.importorskip("transformers", reason="the local stack is installed by `make test`")

from mimesis_gym.core import running_batch  # noqa: E402
from mimesis_gym.core.running_batch import RunningBatch  # noqa: E402
from mimesis_gym.core.tiny import ensure_tiny_model  # noqa: E402

FEED = [(37 * i * i + 11) % 30000 + 50 for i in range(24)]
"""Tokens fed to every row, one per step, after its prompt."""


@pytest.fixture(scope="module")
def model():
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(ensure_tiny_model(), dtype=torch.float32)
    return loaded.eval()


@pytest.fixture(autouse=True)
def inference_mode():
    """The engine's worker runs under inference mode; so do these tests (slabs are inference tensors)."""
    with torch.inference_mode():
        yield


@pytest.fixture(scope="module")
def cache_arg(model):
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def prompt(length: int, offset: int) -> list[int]:
    return [(offset + 31 * i) % 20000 + 100 for i in range(length)]


def prefill(model, cache_arg, ids):
    output = model(input_ids=torch.tensor([ids]), use_cache=True)
    cache = getattr(output, cache_arg)
    return [(keys, values) for keys, values, *_ in cache], cache


def alone(model, cache_arg, ids):
    """Logits after each FEED token, and the final keys of layer 0, decoding this row by itself."""
    _, cache = prefill(model, cache_arg, ids)
    logits = []
    for position, token in enumerate(FEED, start=len(ids)):
        output = model(
            input_ids=torch.tensor([[token]]),
            position_ids=torch.tensor([[position]]),
            use_cache=True,
            **{cache_arg: cache},
        )
        cache = getattr(output, cache_arg)
        logits.append(output.logits[0, -1])
    return logits, cache.layers[0].keys


def test_rows_decode_as_if_alone_through_joins_leaves_and_relayouts(model, cache_arg, monkeypatch):
    monkeypatch.setattr(running_batch, "MIN_HEADROOM", 2)
    prompts = {"short": prompt(5, 0), "long": prompt(30, 1), "middle": prompt(12, 2)}
    expected = {name: alone(model, cache_arg, ids) for name, ids in prompts.items()}
    batch: RunningBatch[str] = RunningBatch(model, cache_arg, capacity=3)
    fed = {}
    relayouts = []
    relayout = RunningBatch._relayout
    monkeypatch.setattr(
        RunningBatch,
        "_relayout",
        lambda self, width, **slots: relayouts.append(width) or relayout(self, width, **slots),
    )

    def step() -> None:
        logits = batch.step([FEED[fed[name]] for name in batch.rows])
        for index, name in enumerate(batch.rows):
            want = expected[name][0][fed[name]]
            assert torch.allclose(logits[index], want, atol=1e-4), (name, fed[name])
            fed[name] += 1
        for index, name in enumerate(batch.rows):  # a slot's mask marks exactly its row's tokens
            assert int(batch._mask[index].sum()) == batch.lengths[index] == len(prompts[name]) + fed[name]

    def join(name: str) -> None:
        batch.join(name, prefill(model, cache_arg, prompts[name])[0])
        fed[name] = 0

    join("short")
    for _ in range(3):
        step()
    join("long")  # longer than the view: the live region moves right
    step()
    join("middle")
    for _ in range(2):
        step()
    with pytest.raises(ValueError, match="full"):
        batch.join("extra", prefill(model, cache_arg, prompts["short"])[0])
    batch.leave([batch.rows.index("long")])  # from the middle: the last row takes its slot
    assert sorted(batch.rows) == ["middle", "short"] and batch.width == max(batch.lengths)
    while fed["short"] < len(FEED):
        step()
    short = batch.rows.index("short")
    keys = batch.row_layers(short)[0][0]
    assert torch.allclose(keys, expected["short"][1], atol=1e-5)
    batch.leave([short])
    while fed["middle"] < len(FEED):
        step()
    assert len(relayouts) >= 3 and 30 in relayouts  # the long row's join, and the headroom ran out more than once
    batch.leave([0])
    assert len(batch) == 0 and batch.columns == 0  # an empty batch frees its slabs


def test_several_rows_leave_at_once_in_any_order(model, cache_arg):
    batch: RunningBatch[int] = RunningBatch(model, cache_arg, capacity=4)
    slots = []
    for index in range(4):
        batch.join(index, prefill(model, cache_arg, prompt(6 + index, index))[0])
        slots.append(batch.slots)
    assert slots == [1, 2, 4, 4]  # slots double as rows join, up to the capacity
    batch.leave([2, 0])
    assert sorted(batch.rows) == [1, 3]
    for slot, name in enumerate(batch.rows):
        assert batch.lengths[slot] == 6 + name and int(batch._mask[slot].sum()) == 6 + name
    assert batch.width == 9


def test_a_batch_needs_room_for_a_row(model, cache_arg):
    with pytest.raises(ValueError, match="at least one row"):
        RunningBatch(model, cache_arg, capacity=0)


def test_rows_of_equal_length_keep_their_mask_and_decode_as_if_alone(model, cache_arg, monkeypatch):
    """Without padding transformers would drop a 2-D mask, and SDPA would repeat keys per head group (slow on CPU)."""
    if model.config._attn_implementation != "sdpa":
        pytest.skip("the 4-D mask is for SDPA")
    ids = prompt(9, 3)
    expected = alone(model, cache_arg, ids)[0]
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(
        torch.nn.functional,
        "scaled_dot_product_attention",
        lambda *args, **kwargs: (
            calls.append((kwargs.get("attn_mask"), kwargs.get("enable_gqa"))) or sdpa(*args, **kwargs)
        ),
    )
    batch: RunningBatch[int] = RunningBatch(model, cache_arg, capacity=2)
    for name in range(2):
        batch.join(name, prefill(model, cache_arg, ids)[0])
    calls.clear()  # the decode steps' attention only
    for step in range(3):
        logits = batch.step([FEED[step]] * 2)
        assert all(torch.allclose(row, expected[step], atol=1e-4) for row in logits)
    assert calls and all(mask is not None and not gqa for mask, gqa in calls)

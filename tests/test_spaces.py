import numpy as np

from mimesis_gym.core.spaces import UnicodeText, printable_code_points


def test_contains_any_string_up_to_max_length():
    space = UnicodeText(max_length=11)
    assert "héllo, 世界 🙂" in space  # 11 characters
    assert "" in space
    assert "x" * 12 not in space
    assert b"bytes" not in space
    assert 5 not in space


def test_default_max_length_is_one_million():
    assert UnicodeText().max_length == 1_000_000


def test_samples_are_printable_unicode_of_bounded_length():
    space = UnicodeText(seed=0)
    samples = [space.sample() for _ in range(300)]
    assert all(isinstance(s, str) and 0 <= len(s) <= 256 for s in samples)
    assert all(ch.isprintable() for s in samples for ch in s)
    assert any(ord(ch) > 0x2FFF for s in samples for ch in s), "samples should go beyond ASCII and Latin"
    assert len({len(s) for s in samples}) > 50


def test_sampling_is_reproducible_under_a_seed():
    assert [UnicodeText(seed=3).sample() for _ in range(2)] == [UnicodeText(seed=3).sample() for _ in range(2)]


def test_code_point_table_excludes_surrogates_controls_and_unassigned():
    table = printable_code_points()
    assert table.dtype == np.int32
    assert 0x41 in table and 0x20 in table
    assert 0x0A not in table and 0xD800 not in table and 0xE000 not in table  # control, surrogate, private use


def test_equality_and_repr():
    assert UnicodeText(5) == UnicodeText(5) != UnicodeText(6)
    assert repr(UnicodeText(5)) == "UnicodeText(max_length=5)"

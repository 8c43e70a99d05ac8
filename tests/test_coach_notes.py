"""Coach note handling (docs/algorithms.md)."""

from mimesis_gym.algorithms.learners.csd.notes import clean_note, leaked_items


def test_no_note_answers():
    assert clean_note("NONE") is None and clean_note("none.") is None and clean_note("   ") is None
    assert clean_note(None) is None


def test_long_notes_are_cut_to_600_characters():
    assert len(clean_note("Ask about the budget. " * 40)) == 600


def test_a_figure_only_in_the_privileged_data_is_dropped():
    privileged = "Budget: 1200 euros per night; prefers Lisbon."
    public = "user: I want a hotel for my trip."
    assert clean_note("The user needs a hotel under 1200 euros.", privileged=privileged, public=public) is None
    assert leaked_items("Ask whether they like Lisbon.", privileged, public) == ["Lisbon"]
    kept = clean_note("The user needs a hotel; ask about the budget.", privileged=privileged, public=public)
    assert kept == "The user needs a hotel; ask about the budget."


def test_items_already_public_are_allowed():
    privileged = "The user lives in Porto."
    public = "user: I am in Porto this week."
    assert clean_note("Ask what they need in Porto.", privileged=privileged, public=public) is not None

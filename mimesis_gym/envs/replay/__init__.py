"""HumanReplay: the user under test writes the user side of real human conversations, turn by turn
(docs/humans.md, "The replay protocol")."""

"""How human is a user? The scorecard's metrics against real people (docs/humans.md).

- :mod:`.behaviour`: four behaviour dimensions (D1 style, D2 information, D3 clarification,
  D4 reaction), feature rates per conversation and the Dice–Sørensen similarity of two rows;
- :mod:`.lexical`: lexical diversity (MATTR, HD-D, Yule's K, type–token ratio) z-scored against humans;
- :mod:`.userlm`: judge-free measures (first-turn diversity, intent decomposition, termination F1);
- :mod:`.turing`: the optional judge that names the human of two turns on the same context.
"""

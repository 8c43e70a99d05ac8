"""TauGym data: the shipped original pack (``original/``) and its seeded generator (``build_original``)."""

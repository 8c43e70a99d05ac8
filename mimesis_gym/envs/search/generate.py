"""The seeded generator of SearchGym's invented world, its corpus and its question pack.

See docs/envs/search.md, "Task data".

``python -m mimesis_gym.envs.search.generate --seed 2207`` rewrites ``data/corpus.jsonl``,
``data/world.json``, ``data/{train,test,demo}.jsonl`` and ``data/manifest.json``; the output is
byte-identical for the same arguments (a slow test regenerates and compares). Everything is drawn
from ``numpy.random.default_rng(seed)`` with ``integers``, ``random`` and ``permutation`` only.

The world: 8 regions (named, no passage), 90 towns, 30 rivers, 220 people, 80 companies, 100 works,
60 structures and 20 clubs, each with functional attributes and relations (a town's river, a
person's birthplace, a company's founder and headquarters, …). Every entity gets one passage
(title = its name, 2–5 sentences stating its attributes in one of three phrasings each, plus at most
one neutral sentence, 40–120 words). Questions chain two or three relations ("Where was the founder
of Brackwell Mills born?"); each records its hops (the one-relation question, its answer and the
passage that states it), so every answer can be reached by searching hop by hop.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mimesis_gym.envs._matching import STOPWORDS

__all__ = [
    "DEFAULT_SEED",
    "DEMO_NAMES",
    "DEMO_PASSAGES",
    "DEMO_QUESTION",
    "RELATIONS",
    "TEMPLATES",
    "World",
    "generate",
    "main",
    "write_pack",
]

DEFAULT_SEED = 2207
DATA_DIR = Path(__file__).parent / "data"
COUNTS = {"town": 90, "river": 30, "person": 220, "company": 80, "work": 100, "structure": 60, "club": 20}
N_REGIONS = 8
N_TRAIN, N_TEST = 200, 50
THREE_HOP_SHARE = 0.2
TEST_ENTITY_SHARE = 0.25
MAX_REFERENCES_PER_PERSON = 3
MIN_WORDS, MAX_WORDS = 40, 120

# ---------------------------------------------------------------------------------------------- demo

DEMO_PASSAGES: tuple[dict[str, str], ...] = (
    {
        "id": "p-demo-1",
        "title": "Harrowgate Bridge",
        "text": (
            "The Harrowgate Bridge is a stone arch bridge over the Velm River in the town of Carrowmere. "
            "It was designed by the engineer Odile Marsh and opened to traffic in 1874. Its seven arches made "
            "it the longest crossing in the region for decades."
        ),
        "entity_type": "structure",
    },
    {
        "id": "p-demo-2",
        "title": "Odile Marsh",
        "text": (
            "Odile Marsh (born 1831) was an engineer known for her work on bridges and canals. She was born in "
            "the coastal village of Penmoor and trained at the Tessaly Ironworks before designing the "
            "Harrowgate Bridge."
        ),
        "entity_type": "person",
    },
)
DEMO_QUESTION: dict[str, Any] = {
    "id": "search-demo-01",
    "split": "demo",
    "question": "In which village was the designer of the Harrowgate Bridge born?",
    "answer": "Penmoor",
    "aliases": ["Penmoor village"],
    "support": ["p-demo-1", "p-demo-2"],
    "hops": [
        {"question": "Who designed the Harrowgate Bridge?", "answer": "Odile Marsh", "passage": "p-demo-1"},
        {"question": "Where was Odile Marsh born?", "answer": "Penmoor", "passage": "p-demo-2"},
    ],
    "template": "structure.designer.birthplace",
}
DEMO_NAMES: tuple[str, ...] = ("Harrowgate", "Odile", "Marsh", "Penmoor", "Carrowmere", "Velm", "Tessaly")
"""Names of the demo fixture; no generated passage contains any of them (case-insensitively)."""

# ---------------------------------------------------------------------------------------------- tables

ONSETS = (
    "b", "br", "c", "cr", "d", "dr", "f", "fl", "g", "gr", "h", "k", "l", "m", "n", "p", "pr", "r", "s",
    "sc", "st", "t", "tr", "v", "w", "th", "bl", "gl", "cl",
)  # fmt: skip
VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou")
CODAS = ("", "", "l", "m", "n", "r", "s", "ck", "nd", "rn", "st", "th", "ld", "rk")
ENDINGS = ("an", "en", "in", "on", "ar", "er", "el", "is", "ow", "ey", "ick", "ock", "ett", "ine", "al", "ith")
RIVER_STARTS = ("a", "e", "i", "o", "u", "ar", "el", "is", "or", "ul", "ab", "ev", "ot")
TOWN_SUFFIXES = (
    "ford", "wick", "by", "ton", "stead", "holm", "bury", "field", "combe", "worth", "ley", "haven",
    "mouth", "dale", "thorpe", "well", "hurst", "ham",
)  # fmt: skip
REGION_SUFFIXES = ("ia", "and", "mark", "ara", "ency", "oria")
SURNAME_SUFFIXES = ("son", "er", "ley", "well", "wood", "ett", "ock", "ard", "in", "ton", "by", "ridge")
FEMALE_SUFFIXES = ("a", "ine", "elle", "ia", "wen", "ys", "ette", "ora")
MALE_SUFFIXES = ("o", "an", "ric", "ius", "en", "as", "bert", "ald")

TOWN_ADJECTIVES = ("coastal", "hill", "market", "mining", "fishing", "border", "lakeside", "valley", "moorland")
COASTAL = frozenset({"coastal", "fishing"})
TOWN_DETAILS: dict[str, tuple[str, ...]] = {
    "coastal": (
        "Its harbour wall shelters a small fleet of working boats that still go out in most weathers.",
        "Salt winds from the nearby shore have shaped its low stone houses and narrow lanes.",
    ),
    "hill": (
        "Its streets climb steeply from the lower square towards an old watchtower on the summit.",
        "From its upper lanes one can see far across the farmland and woods below.",
    ),
    "market": (
        "Traders from the surrounding farms still gather in its cobbled square every week.",
        "Its covered market hall, with a clock above the door, is the oldest building in the centre.",
    ),
    "mining": (
        "Old spoil heaps on its edge recall the pits that once employed most of its families.",
        "A small museum in the former pithead office tells the story of its mines and miners.",
    ),
    "fishing": (
        "Nets are hung to dry along its quay on most mornings, as they have been for generations.",
        "Its smokehouses are known along the whole of the surrounding coast.",
    ),
    "border": (
        "Its old customs house, with thick walls and barred windows, now serves as a meeting hall.",
        "Travellers crossing between neighbouring lands have stopped there for food and rest for centuries.",
    ),
    "lakeside": (
        "Its tree-lined promenade runs for a long way along the shore of a quiet lake.",
        "Small rowing boats can be hired from its wooden jetty during the summer months.",
    ),
    "valley": (
        "Orchards and small fields cover the gentle slopes on either side of it.",
        "Mist often settles over its rooftops in the early morning before the sun clears the ridge.",
    ),
    "moorland": (
        "Open heath and scattered granite boulders surround it on every side.",
        "Sheep graze on the high ground just beyond its last houses for most of the year.",
    ),
}
SETTLEMENTS = ("village", "town", "city")

OCCUPATIONS = (
    "engineer", "architect", "painter", "novelist", "composer", "physician", "inventor", "mayor", "botanist",
    "astronomer",
)  # fmt: skip
KNOWN_FOR: dict[str, tuple[str, ...]] = {
    "engineer": ("work on canals and harbour locks", "careful surveys of difficult ground", "sturdy iron footbridges"),
    "architect": (
        "buildings of pale brick and tall windows",
        "plain and well-lit public halls",
        "restoring old churches",
    ),
    "painter": ("broad landscapes in muted colours", "portraits of working people", "small studies of winter light"),
    "novelist": ("long novels about small towns", "stories told through letters", "sharp comedies of family life"),
    "composer": ("choral music and large orchestral works", "songs written for amateur choirs", "music for the stage"),
    "physician": ("campaigns for clean water", "a widely read handbook on fevers", "founding a clinic for sailors"),
    "inventor": ("improvements to the steam pump", "a folding printing frame", "an early mechanical loom counter"),
    "mayor": ("reforms of local schools", "building the first public baths of the district", "paving the old roads"),
    "botanist": ("studies of mountain ferns", "a large collection of pressed grasses", "work on hardy fruit trees"),
    "astronomer": ("catalogues of faint comets", "measurements of the motion of double stars", "maps of the moon"),
}
PERSON_DETAILS = (
    "{She} spent most of {her} working life travelling between the towns of the region.",
    "Letters and notebooks written by {him} survive in a private collection.",
    "Colleagues described {him} as patient, exacting and generous with {her} time.",
    "{She} also taught for several years and trained a number of younger students.",
)
ATLAS_MAKERS = ("botanist", "astronomer")

INDUSTRIES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("textiles", ("Mills", "Weavers"), (
        "Its looms produce wool and linen cloth for tailors and upholsterers.",
        "It employs several hundred spinners and weavers in its long brick sheds.",
    )),
    ("shipbuilding", ("Shipyards", "Marine Works"), (
        "Its slipways have launched many cargo vessels, ferries and fishing boats.",
        "Its dry dock is large enough to repair ocean-going steamers.",
    )),
    ("printing", ("Press", "Printers"), (
        "It prints newspapers, railway timetables and school books on its own presses.",
        "Its type foundry once supplied letters to printers across the country.",
    )),
    ("brewing", ("Brewery", "Ales"), (
        "Its dark ales are sold in inns across the surrounding district.",
        "Its brewhouse still uses water drawn from a deep well beneath the yard.",
    )),
    ("glassmaking", ("Glassworks", "Glass Company"), (
        "Its furnaces turn out bottles, jars and window panes day and night.",
        "Its cut-glass tableware is prized by collectors.",
    )),
    ("ironfounding", ("Foundry", "Iron Company"), (
        "It casts railings, water pipes and machine parts for customers far and wide.",
        "Many of the lamp posts in the district were cast in its works.",
    )),
    ("instrument making", ("Instruments", "Optical Works"), (
        "Its workshops make lenses, compasses and fine measuring tools.",
        "Surveyors and ship captains have long relied on its instruments.",
    )),
    ("rail transport", ("Railway Company", "Rail Lines"), (
        "It runs passenger and goods trains on several branch lines.",
        "Its locomotives are painted a deep green with brass trim.",
    )),
    ("pottery", ("Potteries", "Ceramics"), (
        "Its kilns fire plates, jugs and glazed tiles for homes and hotels.",
        "Its blue and white tableware is recognised by its distinctive mark.",
    )),
)  # fmt: skip

WORK_KINDS = ("novel", "painting", "symphony", "opera", "atlas")
WORK_CREATORS = {"novel": ("novelist",), "painting": ("painter",), "symphony": ("composer",), "opera": ("composer",)}
WORK_DETAILS: dict[str, tuple[str, ...]] = {
    "novel": (
        "The story follows a family of shopkeepers through three generations of good and bad fortune.",
        "Its chapters alternate between two narrators who disagree about almost everything.",
        "It was first published in monthly parts before appearing as a single volume.",
    ),
    "painting": (
        "The canvas shows a wide view of fields and roofs under a heavy evening sky.",
        "It is painted in thin layers of oil, with the figures kept small against the landscape.",
        "It now hangs in a public gallery, where it is one of the most visited pictures.",
    ),
    "symphony": (
        "It is written in four movements for a large orchestra with an unusually big brass section.",
        "Its slow movement, built on a simple folk tune, is often played on its own.",
        "Its first performance was received with long applause and several encores.",
    ),
    "opera": (
        "Its libretto tells of a long quarrel between two rival families of merchants.",
        "It is sung in three acts and calls for a large chorus of townspeople.",
        "Its overture is still a favourite of concert orchestras.",
    ),
    "atlas": (
        "Its plates were engraved from the author's own drawings made on long field journeys.",
        "It runs to more than two hundred plates, each with a page of careful notes.",
        "Copies of the first edition are now rare and are kept in a few libraries.",
    ),
}
TITLE_ADJECTIVES = (
    "Amber", "Silent", "Distant", "Winter", "Golden", "Hollow", "Crimson", "Patient", "Broken", "Northern",
    "Quiet", "Restless", "Silver", "Last", "Burning", "Gentle", "Lonely", "Scattered", "Endless", "Hidden",
)  # fmt: skip
TITLE_NOUNS = (
    "Orchard", "Lantern", "Harvest", "Compass", "Meadow", "Garden", "Voyage", "Kingdom", "Letters", "Shadows",
    "Summer", "Tide", "Journey", "Threshold", "Season", "Hours", "Wanderer", "Chorus", "Horizon", "Embers",
)  # fmt: skip
TITLE_FORMS = {
    "novel": ("The {adj} {noun}", "{adj} {noun}"),
    "painting": ("The {adj} {noun}", "Study of the {adj} {noun}"),
    "symphony": ("The {adj} {noun} Symphony", "Symphony of the {adj} {noun}"),
    "opera": ("The {adj} {noun}", "{adj} {noun}"),
    "atlas": ("Atlas of the {adj} {noun}", "The {adj} {noun} Atlas"),
}

STRUCTURE_KINDS = ("bridge", "library", "theatre", "observatory", "lighthouse")
STRUCTURE_DETAILS: dict[str, tuple[str, ...]] = {
    "bridge": (
        "It carries a road across the water on five low arches of dressed stone.",
        "Its iron railings and lamps were renewed during a careful restoration last century.",
    ),
    "library": (
        "Its reading room holds more than forty thousand volumes and a large map collection.",
        "A glass dome lights its main hall, where long oak tables stand in rows.",
    ),
    "theatre": (
        "Its horseshoe auditorium seats about nine hundred people on three levels.",
        "Its painted ceiling shows the muses of the arts among clouds and garlands.",
    ),
    "observatory": (
        "Its copper dome houses a large refracting telescope that is still in working order.",
        "Students and amateur stargazers still use it for night classes.",
    ),
    "lighthouse": (
        "Its lamp can be seen far out at sea on clear nights.",
        "Its white tower is banded with a single red stripe and has a gallery near the top.",
    ),
}
DESIGNER_OCCUPATIONS = ("engineer", "architect")

SPORTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("football", ("Rovers", "Athletic", "United")),
    ("rowing", ("Rowing Club", "Boat Club")),
    ("cricket", ("Cricket Club",)),
    ("rugby", ("Rugby Club",)),
    ("hockey", ("Hockey Club",)),
    ("cycling", ("Wheelers", "Cycling Club")),
)
CLUB_DETAILS = (
    "Its members train together on weekday evenings and compete in a regional league.",
    "It keeps a small museum of old trophies and photographs in its clubhouse.",
    "Its colours are green and white, and its supporters are known for their loud singing.",
    "It has produced several players who went on to represent the region.",
)
RIVER_DETAILS = (
    "Its lower course is slow and winding, with wide meadows on either bank.",
    "Several old mills once stood along its banks, and a few of their wheels survive.",
    "Otters and herons are common along its quieter stretches.",
)
FILLERS: dict[str, tuple[str, ...]] = {
    "place": (
        "Local archives hold several accounts of its early history.",
        "It appears in a number of regional guidebooks.",
        "A short entry about it appears in older gazetteers.",
    ),
    "person": (
        "A short biography of {him} appears in a regional dictionary of notable people.",
        "Little is known about {her} early schooling.",
    ),
    "thing": (
        "It is described in several local histories.",
        "A short entry about it appears in older reference books.",
    ),
}
FILLER_GROUP = {
    "town": "place", "river": "place", "person": "person", "company": "thing", "work": "thing",
    "structure": "thing", "club": "thing",
}  # fmt: skip

# ---------------------------------------------------------------------------------------------- relations

RELATIONS: dict[str, dict[str, str]] = {
    "town": {"region": "region", "river": "river"},
    "river": {"source": "region"},
    "person": {"birthplace": "town"},
    "company": {"founder": "person", "headquarters": "town"},
    "work": {"creator": "person"},
    "structure": {"designer": "person", "located_in": "town"},
    "club": {"home_town": "town"},
}
"""For each entity type, its relation attributes and the type they point to (the others are values)."""

HOP_QUESTIONS: dict[tuple[str, str], str] = {
    ("company", "founder"): "Who founded {e}?",
    ("company", "headquarters"): "Where does {e} have its headquarters?",
    ("person", "birthplace"): "Where was {e} born?",
    ("person", "born"): "In what year was {e} born?",
    ("person", "occupation"): "What was the occupation of {e}?",
    ("town", "river"): "Which river flows through {e}?",
    ("town", "region"): "In which region is {e}?",
    ("town", "population"): "What is the population of {e}?",
    ("river", "length_km"): "How long is {e} in kilometres?",
    ("river", "source"): "In which region does {e} rise?",
    ("work", "creator"): "Who created {e}?",
    ("structure", "designer"): "Who designed {e}?",
    ("structure", "located_in"): "Where is {e}?",
    ("club", "home_town"): "Where is {e} based?",
}
"""The one-relation question of each hop; ``{e}`` is the entity as a question names it."""

TEMPLATES: tuple[tuple[str, str], ...] = (
    ("company.founder.birthplace", "Where was the founder of {e} born?"),
    ("company.founder.born", "In what year was the founder of {e} born?"),
    ("company.founder.occupation", "What was the occupation of the founder of {e}?"),
    ("company.headquarters.region", "In which region is the place where {e} has its headquarters?"),
    ("company.headquarters.river", "Which river flows through the place where {e} has its headquarters?"),
    ("person.birthplace.river", "Which river flows through the birthplace of {e}?"),
    ("person.birthplace.region", "In which region is the birthplace of {e}?"),
    ("person.birthplace.population", "What is the population of the place where {e} was born?"),
    ("structure.designer.born", "In what year was the designer of {e} born?"),
    ("structure.designer.birthplace", "Where was the designer of {e} born?"),
    ("structure.located_in.river", "Which river flows through the place where {e} stands?"),
    ("work.creator.occupation", "What was the occupation of the person who created {e}?"),
    ("work.creator.birthplace", "Where was the creator of {e} born?"),
    ("club.home_town.region", "In which region is the home town of {e}?"),
    ("town.river.length_km", "How long, in kilometres, is the river that flows through {e}?"),
    ("town.river.source", "In which region does the river that flows through {e} rise?"),
    ("company.founder.birthplace.river", "Which river flows through the birthplace of the founder of {e}?"),
    (
        "company.headquarters.river.source",
        "In which region does the river that flows through the headquarters of {e} rise?",
    ),
    (
        "person.birthplace.river.length_km",
        "How long, in kilometres, is the river that flows through the birthplace of {e}?",
    ),
    ("structure.designer.birthplace.river", "Which river flows through the birthplace of the designer of {e}?"),
    ("work.creator.birthplace.region", "In which region was the creator of {e} born?"),
    (
        "club.home_town.river.length_km",
        "How long, in kilometres, is the river that flows through the home town of {e}?",
    ),
)
"""Question templates: the relation path from the named entity (``type.rel….attribute``) and the wording."""

# ---------------------------------------------------------------------------------------------- world


@dataclass
class World:
    """The generated entities, by type; each record is a dict with ``name`` and its attributes."""

    region: list[dict[str, Any]] = field(default_factory=list)
    town: list[dict[str, Any]] = field(default_factory=list)
    river: list[dict[str, Any]] = field(default_factory=list)
    person: list[dict[str, Any]] = field(default_factory=list)
    company: list[dict[str, Any]] = field(default_factory=list)
    work: list[dict[str, Any]] = field(default_factory=list)
    structure: list[dict[str, Any]] = field(default_factory=list)
    club: list[dict[str, Any]] = field(default_factory=list)

    def of(self, entity_type: str) -> list[dict[str, Any]]:
        return getattr(self, entity_type)

    def by_name(self, entity_type: str) -> dict[str, dict[str, Any]]:
        return {record["name"]: record for record in self.of(entity_type)}


class _Picker:
    """Draws with the generator's rng, using ``integers``, ``random`` and ``permutation`` only."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def one(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def between(self, low: int, high: int) -> int:
        """An int in ``[low, high]``."""
        return int(self.rng.integers(low, high + 1))

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def order(self, n: int) -> list[int]:
        return [int(i) for i in self.rng.permutation(n)]


class _Names:
    """Unique invented words: no word repeats, none is an English function word or contains a demo name."""

    def __init__(self, pick: _Picker) -> None:
        self.pick = pick
        self.used: set[str] = set()

    def _free(self, word: str, min_len: int) -> bool:
        lowered = word.lower()
        return (
            len(lowered) >= min_len
            and lowered not in self.used
            and lowered not in STOPWORDS
            and not any(name.lower() in lowered for name in DEMO_NAMES)
        )

    def draw(self, make: Callable[[], str], min_len: int = 4) -> str:
        while True:
            word = make()
            if self._free(word, min_len):
                self.used.add(word.lower())
                return word[0].upper() + word[1:]

    def syllable(self) -> str:
        return self.pick.one(ONSETS) + self.pick.one(VOWELS) + self.pick.one(CODAS)

    def stem(self) -> str:
        return self.draw(lambda: self.syllable() + self.pick.one(ENDINGS), 5)

    def town(self) -> str:
        return self.draw(lambda: self.syllable() + self.pick.one(TOWN_SUFFIXES), 5)

    def river(self) -> str:
        return self.draw(lambda: self.pick.one(RIVER_STARTS) + self.syllable(), 4)

    def region(self) -> str:
        return self.draw(lambda: self.syllable() + self.pick.one(REGION_SUFFIXES), 5)

    def surname(self) -> str:
        return self.draw(lambda: self.syllable() + self.pick.one(SURNAME_SUFFIXES), 5)

    def first_name(self, female: bool) -> str:
        suffixes = FEMALE_SUFFIXES if female else MALE_SUFFIXES
        return self.draw(lambda: self.syllable() + self.pick.one(suffixes), 4)


def build_world(pick: _Picker) -> World:
    """Draw every entity and its attributes (towns, rivers, people, then what refers to people)."""
    names = _Names(pick)
    world = World()
    world.region = [{"name": names.region()} for _ in range(N_REGIONS)]
    region_names = [region["name"] for region in world.region]
    for _ in range(COUNTS["river"]):
        world.river.append(
            {"name": names.river(), "length_km": pick.between(35, 1400), "source": pick.one(region_names)}
        )
    river_order = pick.order(COUNTS["town"])
    for index in range(COUNTS["town"]):
        draw = pick.rng.random()
        kind = SETTLEMENTS[0 if draw < 0.4 else 1 if draw < 0.8 else 2]
        population = {
            "village": pick.between(30, 400) * 10,
            "town": pick.between(30, 400) * 100,
            "city": pick.between(40, 600) * 1000,
        }[kind]
        world.town.append(
            {
                "name": names.town(),
                "adjective": pick.one(TOWN_ADJECTIVES),
                "kind": kind,
                "region": pick.one(region_names),
                "river": world.river[river_order[index] % COUNTS["river"]]["name"],
                "founded": pick.between(700, 1700),
                "population": population,
            }
        )
    town_names = [town["name"] for town in world.town]
    first_names = [(names.first_name(female=True), True) for _ in range(70)]
    first_names += [(names.first_name(female=False), False) for _ in range(70)]
    surnames = [names.surname() for _ in range(170)]
    seen_people: set[str] = set()
    for index in range(COUNTS["person"]):
        occupation = OCCUPATIONS[index % len(OCCUPATIONS)]
        while True:
            first, female = pick.one(first_names)
            full = f"{first} {pick.one(surnames)}"
            if full not in seen_people:
                seen_people.add(full)
                break
        world.person.append(
            {
                "name": full,
                "gender": "female" if female else "male",
                "born": pick.between(1760, 1900),
                "birthplace": pick.one(town_names),
                "occupation": occupation,
            }
        )
    references: dict[str, int] = {}

    def person_for(occupations: Sequence[str] | None) -> dict[str, Any]:
        while True:
            person = pick.one(world.person)
            if occupations is not None and person["occupation"] not in occupations:
                continue
            if references.get(person["name"], 0) < MAX_REFERENCES_PER_PERSON:
                references[person["name"]] = references.get(person["name"], 0) + 1
                return person

    for _ in range(COUNTS["company"]):
        industry, suffixes, _details = pick.one(INDUSTRIES)
        founder = person_for(None)
        world.company.append(
            {
                "name": f"{names.stem()} {pick.one(suffixes)}",
                "industry": industry,
                "founded": min(1960, founder["born"] + pick.between(20, 60)),
                "founder": founder["name"],
                "headquarters": pick.one(town_names),
            }
        )
    titles: set[str] = set()
    for index in range(COUNTS["work"]):
        kind = WORK_KINDS[index % len(WORK_KINDS)]
        creator = person_for(WORK_CREATORS.get(kind, ATLAS_MAKERS))
        while True:
            title = pick.one(TITLE_FORMS[kind]).format(adj=pick.one(TITLE_ADJECTIVES), noun=pick.one(TITLE_NOUNS))
            if title not in titles:
                titles.add(title)
                break
        world.work.append(
            {"name": title, "kind": kind, "year": creator["born"] + pick.between(15, 70), "creator": creator["name"]}
        )
    coastal_towns = [town["name"] for town in world.town if town["adjective"] in COASTAL]
    for index in range(COUNTS["structure"]):
        kind = STRUCTURE_KINDS[index % len(STRUCTURE_KINDS)]
        designer = person_for(DESIGNER_OCCUPATIONS)
        world.structure.append(
            {
                "name": f"{names.stem()} {kind.title()}",
                "kind": kind,
                "opened": designer["born"] + pick.between(25, 70),
                "designer": designer["name"],
                "located_in": pick.one(coastal_towns if kind == "lighthouse" else town_names),
            }
        )
    for _ in range(COUNTS["club"]):
        sport, suffixes = pick.one(SPORTS)
        world.club.append(
            {
                "name": f"{names.stem()} {pick.one(suffixes)}",
                "sport": sport,
                "founded": pick.between(1840, 1960),
                "home_town": pick.one(town_names),
            }
        )
    return world


# ---------------------------------------------------------------------------------------------- passages


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _place(town: dict[str, Any]) -> str:
    """A town as the passages describe it: ``the coastal village of Brackford``."""
    return f"the {town['adjective']} {town['kind']} of {town['name']}"


class _Writer:
    """Writes one passage per entity: attribute sentences in one of three phrasings, then detail/filler."""

    def __init__(self, pick: _Picker, world: World) -> None:
        self.pick = pick
        self.world = world
        self.towns = world.by_name("town")
        self.people = world.by_name("person")

    def phrase(self, *variants: str) -> str:
        return self.pick.one(variants)

    def finish(
        self, entity_type: str, sentences: list[str], details: Sequence[str], pronouns: dict[str, str] | None = None
    ) -> str:
        """Add a detail sentence (a second one while under ``MIN_WORDS`` words), then maybe a filler."""
        pronouns = pronouns or {}
        pool = [detail.format(**pronouns) for detail in details]
        order = self.pick.order(len(pool))
        sentences = [*sentences, pool[order[0]]]
        if _words(sentences) < MIN_WORDS and len(pool) > 1:
            sentences.append(pool[order[1]])
        if _words(sentences) < MIN_WORDS or self.pick.chance(0.3):
            sentences.append(self.pick.one(FILLERS[FILLER_GROUP[entity_type]]).format(**pronouns))
        return " ".join(sentences)

    def town(self, town: dict[str, Any]) -> str:
        n, kind, adj = town["name"], town["kind"], town["adjective"]
        first = self.phrase(
            f"{n} is {_article(adj)} {adj} {kind} in the region of {town['region']}.",
            f"The {adj} {kind} of {n} lies in the region of {town['region']}.",
            f"{n}, {_article(adj)} {adj} {kind}, belongs to the region of {town['region']}.",
        )
        river = self.phrase(
            f"The {town['river']} River flows through the {kind}.",
            f"It stands on the banks of the {town['river']} River, which flows through its centre.",
            f"The {kind} grew up at a ford of the {town['river']} River, which still flows through it.",
        )
        founded = self.phrase(
            f"It was founded in {town['founded']}.",
            f"Its founding is dated to {town['founded']}.",
            f"The first settlement there was established in {town['founded']}.",
        )
        population = self.phrase(
            f"Its population is {town['population']}.",
            f"The latest count gave it a population of {town['population']}.",
            f"It has a population of {town['population']}.",
        )
        return self.finish("town", [first, river, founded, population], TOWN_DETAILS[adj])

    def river(self, river: dict[str, Any]) -> str:
        n = river["name"]
        source = self.phrase(
            f"The {n} River rises in the region of {river['source']}.",
            f"The {n} is a river whose source lies in the region of {river['source']}.",
            f"From its source in the region of {river['source']}, the {n} River runs towards the sea.",
        )
        length = self.phrase(
            f"It is {river['length_km']} kilometres long.",
            f"Its course runs for {river['length_km']} kilometres.",
            f"The river measures {river['length_km']} kilometres from source to mouth.",
        )
        towns = sorted(town["name"] for town in self.world.town if town["river"] == n)
        along = self.phrase(
            f"Towns along its banks include {_listing(towns)}.",
            f"It passes {_listing(towns)} on its way.",
            f"Among the places it flows through are {_listing(towns)}.",
        )
        return self.finish("river", [source, length, along], RIVER_DETAILS)

    def person(self, person: dict[str, Any]) -> str:
        n, job = person["name"], person["occupation"]
        she = "She" if person["gender"] == "female" else "He"
        known = self.pick.one(KNOWN_FOR[job])
        first = self.phrase(
            f"{n} (born {person['born']}) was {_article(job)} {job} known for {known}.",
            f"Born in {person['born']}, {n} worked as {_article(job)} {job} and became known for {known}.",
            f"{n} was {_article(job)} {job}, born in {person['born']}, remembered for {known}.",
        )
        place = _place(self.towns[person["birthplace"]])
        birth = self.phrase(
            f"{she} was born in {place}.",
            f"{n} came from {place}, where {she.lower()} was born.",
            f"{she} was born and raised in {place}.",
        )
        pronouns = {"She": she, "her": "her" if she == "She" else "his", "him": "her" if she == "She" else "him"}
        return self.finish("person", [first, birth], PERSON_DETAILS, pronouns)

    def company(self, company: dict[str, Any]) -> str:
        n, industry = company["name"], company["industry"]
        first = self.phrase(
            f"{n} is {_article(industry)} {industry} company founded in {company['founded']}.",
            f"Founded in {company['founded']}, {n} works in {industry}.",
            f"{n} has been active in {industry} since it was set up in {company['founded']}.",
        )
        founder = self.phrase(
            f"It was founded by {company['founder']}.",
            f"Its founder was {company['founder']}.",
            f"{company['founder']} started the company.",
        )
        place = _place(self.towns[company["headquarters"]])
        seat = self.phrase(
            f"The company has its headquarters in {place}.",
            f"Its head office is in {place}.",
            f"It is headquartered in {place}.",
        )
        details = next(details for name, _, details in INDUSTRIES if name == industry)
        return self.finish("company", [first, founder, seat], details)

    def work(self, work: dict[str, Any]) -> str:
        n, kind = work["name"], work["kind"]
        first = self.phrase(
            f"{n} is {_article(kind)} {kind} by {work['creator']}.",
            f"{work['creator']} created {n}, {_article(kind)} {kind}.",
            f"{n}, {_article(kind)} {kind}, is the work of {work['creator']}.",
        )
        year = self.phrase(
            f"It was completed in {work['year']}.",
            f"It first appeared in {work['year']}.",
            f"{work['creator']} finished it in {work['year']}.",
        )
        return self.finish("work", [first, year], WORK_DETAILS[kind])

    def structure(self, structure: dict[str, Any]) -> str:
        n, kind = structure["name"], structure["kind"]
        place = _place(self.towns[structure["located_in"]])
        first = self.phrase(
            f"The {n} is {_article(kind)} {kind} in {place}.",
            f"Standing in {place}, the {n} is one of its best-known landmarks.",
            f"The {n} is found in {place}.",
        )
        designer = self.phrase(
            f"It was designed by {structure['designer']}.",
            f"{structure['designer']} drew up its plans.",
            f"Its design was the work of {structure['designer']}.",
        )
        opened = self.phrase(
            f"It opened in {structure['opened']}.",
            f"It was opened to the public in {structure['opened']}.",
            f"Building work finished and it opened in {structure['opened']}.",
        )
        return self.finish("structure", [first, designer, opened], STRUCTURE_DETAILS[kind])

    def club(self, club: dict[str, Any]) -> str:
        n, sport = club["name"], club["sport"]
        place = _place(self.towns[club["home_town"]])
        first = self.phrase(
            f"{n} is {_article(sport)} {sport} club based in {place}.",
            f"Based in {place}, {n} is {_article(sport)} {sport} club.",
            f"{n} plays {sport} and has its home in {place}.",
        )
        founded = self.phrase(
            f"It was founded in {club['founded']}.",
            f"The club was formed in {club['founded']}.",
            f"Its first season was in {club['founded']}.",
        )
        return self.finish("club", [first, founded], CLUB_DETAILS)


def _words(sentences: Sequence[str]) -> int:
    return sum(len(sentence.split()) for sentence in sentences)


def _listing(items: Sequence[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def write_passages(pick: _Picker, world: World) -> list[dict[str, str]]:
    """One passage per entity in a random order (ids ``p0001`` …), then the two demo passages.

    Each entity record gains a ``passage`` field with its passage id.
    """
    writer = _Writer(pick, world)
    entities = [(entity_type, record) for entity_type in COUNTS for record in world.of(entity_type)]
    passages: list[dict[str, str]] = []
    for number, index in enumerate(pick.order(len(entities)), start=1):
        entity_type, record = entities[index]
        record["passage"] = f"p{number:04d}"
        text = getattr(writer, entity_type)(record)
        passages.append({"id": record["passage"], "title": record["name"], "text": text, "entity_type": entity_type})
    return passages + [dict(passage) for passage in DEMO_PASSAGES]


# ---------------------------------------------------------------------------------------------- questions


def _mention(entity_type: str, name: str) -> str:
    """The entity as a question names it."""
    if entity_type == "structure":
        return f"the {name}"
    if entity_type == "river":
        return f"the {name} River"
    return name


def _aliases(entity_type: str | None, attribute: str, value: Any, record: dict[str, Any] | None) -> list[str]:
    """Answer aliases: numbers ≥ 1000 (not years) with thousands separators; names with their descriptor."""
    if isinstance(value, int):
        return [f"{value:,}"] if value >= 1000 and attribute in ("population", "length_km") else []
    if entity_type == "town" and record is not None:
        return [f"{value} {record['kind']}"]
    if entity_type == "river":
        return [f"{value} River"]
    if entity_type == "region":
        return [f"{value} region"]
    return []


def chain(world: World, template: str, start: dict[str, Any]) -> dict[str, Any]:
    """Follow ``template`` (``type.rel….attribute``) from ``start``; the answer, aliases and hops."""
    entity_type, *path = template.split(".")
    record = start
    hops: list[dict[str, str]] = []
    value: Any = None
    target_type: str | None = None
    target: dict[str, Any] | None = None
    for attribute in path:
        question = HOP_QUESTIONS[(entity_type, attribute)].format(e=_mention(entity_type, record["name"]))
        value = record[attribute]
        target_type = RELATIONS[entity_type].get(attribute)
        target = world.by_name(target_type)[value] if target_type else None
        hops.append({"question": question, "answer": str(value), "passage": record["passage"]})
        if target_type is not None and target_type != "region":
            entity_type, record = target_type, target  # type: ignore[assignment]
    return {
        "answer": str(value),
        "aliases": _aliases(target_type, path[-1], value, target),
        "hops": hops,
    }


def _draw_questions(
    pick: _Picker,
    world: World,
    split: str,
    templates: list[tuple[str, str]],
    count: int,
    test_names: set[str],
) -> list[dict[str, Any]]:
    """``count`` questions of ``split``: rounds over the templates in random order, each round taking
    the next unused first entity of each template (entities of the split's side only)."""
    pools: dict[str, list[dict[str, Any]]] = {}
    for name, _ in templates:
        eligible = [r for r in world.of(name.split(".")[0]) if (r["name"] in test_names) == (split == "test")]
        pools[name] = [eligible[i] for i in pick.order(len(eligible))]
    drawn: list[dict[str, Any]] = []
    while len(drawn) < count:
        before = len(drawn)
        for template_index in pick.order(len(templates)):
            name, text = templates[template_index]
            if not pools[name] or len(drawn) >= count:
                continue
            start = pools[name].pop(0)
            entity_type = name.split(".")[0]
            drawn.append(
                {
                    "split": split,
                    "question": text.format(e=_mention(entity_type, start["name"])),
                    **chain(world, name, start),
                    "template": name,
                }
            )
        if len(drawn) == before:
            raise RuntimeError(f"ran out of first entities for {split} questions")
    return drawn


def make_questions(pick: _Picker, world: World) -> list[dict[str, Any]]:
    """200 train and 50 test questions (80 % two-hop), first entities disjoint between the splits."""
    test_names: set[str] = set()
    for entity_type in ("company", "person", "structure", "work", "club", "town"):
        records = world.of(entity_type)
        for index in pick.order(len(records))[: round(len(records) * TEST_ENTITY_SHARE)]:
            test_names.add(records[index]["name"])
    questions: list[dict[str, Any]] = []
    for split, total in (("train", N_TRAIN), ("test", N_TEST)):
        three = round(total * THREE_HOP_SHARE)
        for hops, count in ((2, total - three), (3, three)):
            templates = [(name, text) for name, text in TEMPLATES if name.count(".") == hops]
            questions += _draw_questions(pick, world, split, templates, count, test_names)
    shuffled: list[dict[str, Any]] = []
    for split in ("train", "test"):
        in_split = [record for record in questions if record["split"] == split]
        shuffled += [in_split[index] for index in pick.order(len(in_split))]
    ordered: list[dict[str, Any]] = []
    for number, record in enumerate(shuffled, start=1):
        ordered.append(
            {
                "id": f"search-{number:04d}",
                "split": record["split"],
                "question": record["question"],
                "answer": record["answer"],
                "aliases": record["aliases"],
                "support": [hop["passage"] for hop in record["hops"]],
                "hops": record["hops"],
                "template": record["template"],
            }
        )
    return ordered


# ---------------------------------------------------------------------------------------------- output


def generate(seed: int = DEFAULT_SEED) -> tuple[World, list[dict[str, str]], list[dict[str, Any]]]:
    """The world, the corpus (generated passages, then the demo passages) and the questions."""
    pick = _Picker(np.random.default_rng(seed))
    world = build_world(pick)
    passages = write_passages(pick, world)
    questions = make_questions(pick, world)
    _check(passages, questions)
    return world, passages, questions


def _check(passages: list[dict[str, str]], questions: list[dict[str, Any]]) -> None:
    """Generator-side sanity checks (the tests check the quality rules independently)."""
    for passage in passages:
        words = len(passage["text"].split())
        if not passage["id"].startswith("p-demo") and not MIN_WORDS <= words <= MAX_WORDS:
            raise AssertionError(f"{passage['id']} has {words} words")
    texts = {passage["id"]: passage["text"].lower() for passage in passages}
    for question in questions:
        for hop in question["hops"]:
            if hop["answer"].lower() not in texts[hop["passage"]]:
                raise AssertionError(f"{question['id']}: {hop['answer']!r} not in {hop['passage']}")


def _jsonl(records: Sequence[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")


def write_pack(out_dir: Path, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write the corpus, the world, the three question files and ``manifest.json``; return the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    world, passages, questions = generate(seed)
    payloads = {
        "corpus.jsonl": _jsonl(passages),
        "world.json": (
            json.dumps({"seed": seed, "relations": RELATIONS, **asdict(world)}, indent=1, ensure_ascii=False) + "\n"
        ).encode("utf-8"),
        "train.jsonl": _jsonl([q for q in questions if q["split"] == "train"]),
        "test.jsonl": _jsonl([q for q in questions if q["split"] == "test"]),
        "demo.jsonl": _jsonl([DEMO_QUESTION]),
    }
    for name, payload in payloads.items():
        (out_dir / name).write_bytes(payload)
    manifest: dict[str, Any] = {
        "generator": "python -m mimesis_gym.envs.search.generate",
        "seed": seed,
        "counts": {
            "passages": len(passages),
            "train": sum(q["split"] == "train" for q in questions),
            "test": sum(q["split"] == "test" for q in questions),
            "demo": 1,
            **{f"entities.{name}": count for name, count in COUNTS.items()},
        },
        "sha256": {name: hashlib.sha256(payload).hexdigest() for name, payload in payloads.items()},
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate SearchGym's invented world, corpus and questions.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    print(json.dumps(write_pack(args.out, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

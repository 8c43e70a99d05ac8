"""The learner registry (docs/writing-a-learner.md): which learners an algorithm name and a config turn on."""

import re

import pytest

pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import ALGORITHMS, Algorithm, TrainerConfig
from mimesis_gym.algorithms.learners import (
    LEARNERS,
    Learner,
    algorithm_names,
    register_learner,
    select_learners,
)
from mimesis_gym.algorithms.learners.csd import CSD
from mimesis_gym.algorithms.learners.infopo import InfoPO
from tests.support.torch_fixtures import learner_registry  # noqa: F401

SCRIPTED = ["csd.coach.kind=scripted", "csd.coach.callable=mimesis_gym.algorithms.testing:keyword_echo_coach"]


class Custom(Learner):
    name = "custom"

    def advantages(self, batch):
        return [[1.0] * len(e.turns) for e in batch.episodes]


def names(classes):
    return [learner.name for learner in classes]


def test_built_in_names_turn_on_their_learners():
    config = TrainerConfig().with_overrides(SCRIPTED)
    assert names(select_learners(config, "grpo")[1]) == []
    assert names(select_learners(config, "foldgrpo")[1]) == []
    infopo_config, infopo = select_learners(config, "infopo")
    assert infopo == [InfoPO] and infopo_config.advantage.estimator == "infopo"
    csd_config, csd = select_learners(config, "csd")
    assert csd == [CSD] and csd_config.csd.enabled and csd_config.advantage.estimator == "grpo_multiturn"
    assert algorithm_names()[:5] == ["grpo", "grpo-outcome", "foldgrpo", "infopo", "csd"]


def test_a_config_alone_turns_learners_on_and_alpha_zero_is_off():
    both = TrainerConfig().with_overrides([*SCRIPTED, "advantage.estimator=infopo", "csd.enabled=true"])
    assert select_learners(both, None)[1] == [InfoPO, CSD]
    assert select_learners(both.with_overrides(["csd.alpha=0"]), None)[1] == [InfoPO]


def test_learners_check_their_settings_and_unknown_names_fail():
    with pytest.raises(ValueError, match=r"csd\.coach\.callable"):
        select_learners(TrainerConfig().with_overrides(["csd.enabled=true", "csd.coach.kind=scripted"]), None)
    with pytest.raises(ValueError, match="context_mode='accumulate'"):
        select_learners(TrainerConfig().with_overrides(["rollout.context_mode=per_turn"]), "infopo")
    with pytest.raises(ValueError, match="unknown algorithm 'ppo'; known: grpo, grpo-outcome, foldgrpo, infopo, csd"):
        select_learners(TrainerConfig(), "ppo")


@pytest.mark.usefixtures("learner_registry")
def test_a_learner_registered_at_run_time_is_selected_by_name():
    assert register_learner(Custom) is Custom
    assert "custom" in algorithm_names()
    base = TrainerConfig().with_overrides([*SCRIPTED, "csd.enabled=true", "advantage.estimator=foldgrpo"])
    config, chosen = select_learners(base, "custom")
    assert chosen == [Custom] and not config.csd.enabled and config.advantage.estimator == "foldgrpo"
    assert select_learners(base, "grpo")[1] == []  # never on unless named


@pytest.mark.usefixtures("learner_registry")
def test_registration_refuses_mistakes():
    register_learner(Custom)
    with pytest.raises(TypeError, match="Learner subclass"):
        register_learner(object)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="name is empty"):
        register_learner(type("Nameless", (Learner,), {}))
    other = type("Other", (Custom,), {})
    with pytest.raises(ValueError, match="already registered"):
        register_learner(other)
    assert register_learner(other, replace=True) is other and LEARNERS["custom"] is other


@pytest.mark.usefixtures("learner_registry")
def test_two_learners_replacing_the_advantages_are_refused():
    register_learner(Custom)
    rival = register_learner(type("Rival", (Custom,), {"name": "rival", "enabled": classmethod(lambda cls, c: True)}))
    with pytest.raises(ValueError, match="custom, rival would each replace the advantages"):
        select_learners(TrainerConfig(), "custom")
    assert rival in LEARNERS.values()


@pytest.mark.usefixtures("learner_registry")
def test_one_table_answers_what_every_algorithm_name_means():
    assert algorithm_names() == list(ALGORITHMS) and ALGORITHMS["sft"] == Algorithm(learner="sft")
    assert ALGORITHMS["csd"] == Algorithm("grpo_multiturn", csd=True, learner="csd", by_name=False)
    register_learner(Custom)
    assert ALGORITHMS["custom"] == Algorithm(learner="custom")
    base = TrainerConfig().with_overrides(["csd.enabled=true", "advantage.estimator=foldgrpo"])
    for name in ("sft", "custom"):  # the config reads the same table as the registry
        config = base.with_algorithm(name)
        assert config.advantage.estimator == "foldgrpo" and not config.csd.enabled
    control = TrainerConfig().with_overrides([*SCRIPTED, "csd.alpha=0"])
    assert select_learners(control, "csd")[1] == []  # the name turns CSD on through the config: α = 0 is off


@pytest.mark.usefixtures("learner_registry")
def test_a_learner_named_after_a_built_in_algorithm_is_refused():
    for name in ("grpo", "foldgrpo"):
        with pytest.raises(ValueError, match=f"name '{name}' is a built-in algorithm .* choose another name"):
            register_learner(type("Shadow", (Custom,), {"name": name}))
        assert name not in LEARNERS
    assert register_learner(CSD) is CSD and ALGORITHMS["csd"].learner == "csd"  # a row's own learner keeps it


@pytest.mark.usefixtures("learner_registry")
def test_a_learner_class_named_by_module_path_is_imported_registered_and_selected():
    _, chosen = select_learners(TrainerConfig(), "tests.test_learner_registry:Custom")
    assert chosen == [Custom] and LEARNERS["custom"] is Custom and "custom" in algorithm_names()
    with pytest.raises(ValueError, match=r"algorithm 'sft' needs sft\.data"):  # the built-in SFT, by its name
        select_learners(TrainerConfig(), "mimesis_gym.algorithms.learners.sft.learner:SFT")
    for path, problem in [
        ("tests.test_learner_registry:Nope", "cannot import it (module 'tests.test_learner_registry' has no attribute"),
        ("tests.no_such_module:Custom", "cannot import it (No module named 'tests.no_such_module')"),
        (
            "mimesis_gym.algorithms.config:TrainerConfig",
            "is <class 'mimesis_gym.algorithms.config.TrainerConfig'>, not",
        ),
    ]:
        with pytest.raises(
            ValueError, match=re.escape(f"algorithm {path!r}: {problem}" if "cannot" in problem else problem)
        ):
            select_learners(TrainerConfig(), path)


def test_scoped_learners_forget_the_learners_registered_inside():
    from mimesis_gym.algorithms.config import ALGORITHMS
    from mimesis_gym.algorithms.learners import LEARNERS
    from mimesis_gym.algorithms.learners.base import Learner
    from mimesis_gym.algorithms.learners.registry import register_learner, scoped_learners

    class Scoped(Learner):
        name = "scoped-only"

    with scoped_learners():
        register_learner(Scoped)
        assert "scoped-only" in LEARNERS and "scoped-only" in ALGORITHMS
    assert "scoped-only" not in LEARNERS and "scoped-only" not in ALGORITHMS

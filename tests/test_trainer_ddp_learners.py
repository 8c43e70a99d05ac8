"""CSD and InfoPO under ``accelerate launch`` with two CPU processes.

See docs/algorithms.md, "Several processes: DDP and FSDP".

Each rank coaches (CSD) or scores counterfactuals (InfoPO) for the episodes it collected only, then
gathers the notes or gains. The test checks that both replicas end identical, that the notes of
both ranks reached the teacher (every action token is coached, placebos after the first batch) and
that the counterfactual forwards ran.
"""

import json
import textwrap

import pytest

from tests.support.accelerate_launch import launch_two_cpu_processes

pytest.importorskip("accelerate", reason="the train extra is installed by `make test`")

SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    import torch
    from accelerate import PartialState
    from mimesis_gym.algorithms.config import TrainerConfig
    from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model
    from mimesis_gym.algorithms.trainer import Trainer

    out, algorithm = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    config = TrainerConfig.preset("cpu-tiny").with_overrides([
        "rollout.group_size=4", "rollout.prompts_per_batch=4", "update.mini_batch_prompts=2", "optim.lr=1e-4",
        "run.eval_every=0", "run.save_every=0", "run.progress=false", f"run.output_dir={out}",
        "csd.coach.kind=scripted", "csd.coach.callable=mimesis_gym.algorithms.testing:keyword_echo_coach",
        "csd.placebo=true", "csd.placebo_min=2", "update.micro_batch_tokens=128",
    ])
    model, tokenizer = tiny_random_model(seed=0)
    trainer = Trainer([(ENV_ID, {"reward_rule": "parity"})], (model, tokenizer), algorithm=algorithm, config=config)
    history = [trainer.step() for _ in range(2)]
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    with open(f"{out}/rank{PartialState().process_index}.json", "w") as handle:
        json.dump({"final": digest, "counters": dict(trainer.counters), "history": history}, handle)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["csd", "infopo"])
def test_two_processes_share_the_learners_passes(tmp_path, algorithm):
    launch_two_cpu_processes(SCRIPT, tmp_path, algorithm)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["final"] == ranks[1]["final"]
    assert ranks[0]["counters"]["student_forwards"] == ranks[1]["counters"]["student_forwards"]
    first, second = ranks[0]["history"]
    if algorithm == "csd":
        assert first["csd/coached_token_frac"] == 1.0 and second["csd/coached_token_frac"] == 1.0
        assert first["csd/placebo_frac"] == 0.0 and second["csd/placebo_frac"] == 1.0
        assert ranks[0]["counters"]["teacher_forwards"] == ranks[1]["counters"]["teacher_forwards"] > 0
    else:
        assert all(rank["counters"]["counterfactual_forwards"] > 0 for rank in ranks)
        assert first["infopo/ig_turns"] > 0

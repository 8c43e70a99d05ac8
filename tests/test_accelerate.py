"""The trainer runs unchanged under ``accelerate launch`` (docs/algorithms.md): two CPU processes, gloo DDP.

Both ranks train two steps on the tiny random model; the test checks that the two replicas hold
identical parameters afterwards (DDP averaged every gradient), that they moved, and that rank 0
alone wrote the metrics.
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

    out = sys.argv[1]
    torch.set_num_threads(1)
    config = TrainerConfig.preset("cpu-tiny").with_overrides([
        "rollout.group_size=4", "rollout.prompts_per_batch=4", "update.mini_batch_prompts=2", "optim.lr=1e-4",
        "run.total_steps=2", "run.eval_every=0", "run.save_every=0", "run.progress=false", f"run.output_dir={out}",
    ])
    model, tokenizer = tiny_random_model(seed=0)
    initial = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    trainer = Trainer([(ENV_ID, {"reward_rule": "parity"})], (model, tokenizer), algorithm="grpo", config=config)
    trainer.fit()
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    rank = PartialState().process_index
    with open(f"{out}/rank{rank}.json", "w") as handle:
        json.dump({"world": trainer.world, "initial": initial, "final": digest}, handle)
    """
)


@pytest.mark.slow
def test_two_cpu_processes_keep_identical_replicas(tmp_path):
    launch_two_cpu_processes(SCRIPT, tmp_path)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert ranks[0]["final"] == ranks[1]["final"]
    assert ranks[0]["final"] != ranks[0]["initial"]
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]

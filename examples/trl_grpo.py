"""TelepathyGym in TRL's GRPOTrainer through mimesis_gym's adapter (docs/integrations.md, "TRL"; extra `trl`).

Usage: ``python examples/trl_grpo.py [MODEL|tiny] [STEPS]``. The embedded tiny model (the default) runs on
CPU but has never seen a tool call, so its rewards stay 0: pass a tool-calling model (Qwen/Qwen3-0.6B, …).
"""

import sys

import torch
from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template

from mimesis_gym.core.tiny import ensure_tiny_model
from mimesis_gym.integrations.trl import build_dataset, environment_factory, reward_function

tiny = len(sys.argv) < 2 or sys.argv[1] == "tiny"
model = str(ensure_tiny_model()) if tiny else sys.argv[1]
tokenizer = AutoTokenizer.from_pretrained(model)
if tiny:
    tokenizer.chat_template = qwen2_5_chat_template  # SmolLM2's own template cannot render tool calls
factory = environment_factory("mimesis/TelepathyGym-v0", user="scripted", max_episode_steps=8)
config = GRPOConfig(
    output_dir="runs/trl_grpo", max_steps=int(sys.argv[2]) if len(sys.argv) > 2 else 2, logging_steps=1,
    per_device_train_batch_size=4, num_generations=4, max_completion_length=256, report_to="none",
    save_strategy="no", use_cpu=not torch.cuda.is_available(),
)  # fmt: skip
trainer = GRPOTrainer(
    model=model,
    processing_class=tokenizer,
    reward_funcs=reward_function("episode_score"),  # or "turn_rewards"
    train_dataset=build_dataset(factory, split="train", limit=32, seeds=[0, 1]),
    environment_factory=factory,
    args=config,
)
trainer.train()
factory.close()
print([(log["step"], log["reward"], log["tools/call_frequency"]) for log in trainer.state.log_history[:-1]])

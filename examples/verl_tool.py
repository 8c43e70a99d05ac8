"""verl's view of an env: write the data and tool config, load the tool as verl does, play one row.

    python examples/verl_tool.py [ENV_ID] [OUT_DIR]      # needs the extra `verl` (make test-verl's venv)

Writes ``test.parquet``, ``tool_config.yaml`` and ``agent_loop.yaml`` (as ``mimesis-gym verl-data``
does), builds the tool with verl's own loader, then drives the first row's episode through the
tool's lifecycle with a few fixed calls and prints what verl's agent loop would see.
"""

import asyncio
import sys
import tempfile

from verl.tools.tool_registry import initialize_tools_from_config

from mimesis_gym.integrations.verl_data import ToolSettings, dataset_rows, write_configs, write_dataset

env_id = sys.argv[1] if len(sys.argv) > 1 else "mimesis/TelepathyGym-v0"
out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="verl-data-")
settings = ToolSettings(env_ids=[env_id], max_episode_steps=4)
rows, schema = dataset_rows(settings, split="test", limit=2)
write_dataset(rows, f"{out}/test.parquet")
tool_config, _ = write_configs(settings, schema, out)
[tool] = initialize_tools_from_config(tool_config)  # verl prints the tool schema


async def play(row: dict) -> None:
    create_kwargs = row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"]
    _, opening = await tool.create("trajectory-0", create_kwargs=create_kwargs)
    print(f"system: {row['prompt'][0]['content'][:100]}...\nuser: {opening.text}")
    for content in ["Is it alive?", "Is it bigger than a car?", "Is it used indoors?", "Is it made of metal?"]:
        response, reward, metrics = await tool.execute("trajectory-0", {"choice": "action", "content": content})
        print(f"tool call: {content!r} -> {response.text!r} (reward {reward}, {metrics})")
    print(f"episode score (calc_reward): {await tool.calc_reward('trajectory-0')}")
    await tool.release("trajectory-0")


asyncio.run(play(rows[0]))
tool.close()
print(f"data and configs in {out}")

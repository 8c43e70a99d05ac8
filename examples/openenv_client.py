"""Play TelepathyGym over OpenEnv's WebSocket protocol (docs/integrations.md, "OpenEnv"; extra `openenv`).

Usage: ``python examples/openenv_client.py [BASE_URL]``. Without BASE_URL it starts
``mimesis-gym serve-env telepathy --port 0`` itself and stops it at the end; with one (e.g.
``http://127.0.0.1:8000``) it plays against that server. Set ``MIMESIS_OPENENV_TOKEN`` when the
server was started with ``--token-env``. The "policy" is a fixed list of questions.
"""

import os
import re
import subprocess
import sys

from mimesis_gym.integrations.openenv import MimesisAction, MimesisEnvClient

server = None
if len(sys.argv) > 1:
    base_url = sys.argv[1]
else:
    command = [sys.executable, "-m", "mimesis_gym.cli", "serve-env", "telepathy", "--port", "0"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    base_url = "http://127.0.0.1:" + re.search(r":(\d+) ", server.stderr.readline()).group(1)

questions = ["Is it an animal?", "Does it have four legs?", "Is it the tallest animal?"]
try:
    with MimesisEnvClient(base_url, token=os.environ.get("MIMESIS_OPENENV_TOKEN")).sync() as env:
        result = env.reset(task_id="telepathy-demo-01", seed=0)
        print("opening:", result.observation.text)
        for question in questions:
            result = env.step(MimesisAction(choice="action", content=question))
            print(f"{question} -> {result.observation.text!r} (reward {result.reward})")
        result = env.step(MimesisAction(choice="answer", content="giraffe"))
        print(f"answer giraffe -> {result.observation.text!r} (reward {result.reward}, done {result.done})")
        print("state:", env.state())
finally:
    if server is not None:
        server.terminate()
        server.wait(30)

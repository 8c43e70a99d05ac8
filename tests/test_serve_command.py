"""The vLLM server commands of serve-user (docs/users.md, "Plugging in MIMESIS"), checked without launching anything."""

import pytest

from mimesis_gym.agents.registry import RELEASED_AGENTS, released_agent_endpoint
from mimesis_gym.agents.serve import agent_base_url_variable, build_agent_serve_command
from mimesis_gym.cli import main
from mimesis_gym.users.serve import build_serve_command


def test_mimesis_9b_command_matches_the_spec():
    command = build_serve_command("mimesis-9b", python="python")
    assert command.shell() == (
        "python -m vllm.entrypoints.openai.api_server --model phanviethoang1512/MIMESIS-9B "
        "--served-model-name mimesis-9b --host 127.0.0.1 --port 8000 --trust-remote-code "
        "--generation-config vllm --max-model-len 32768 --seed 0"
    )
    assert command.base_url == "http://127.0.0.1:8000/v1"


def test_options_and_passthrough(monkeypatch):
    monkeypatch.setenv("MIMESIS_VLLM_PYTHON", "/opt/vllm/bin/python")
    command = build_serve_command(
        "mimesis-4b",
        port=9001,
        tensor_parallel=2,
        data_parallel=4,
        gpu_memory_utilization=0.4,
        max_model_len=8192,
        passthrough=["--enforce-eager"],
    )
    argv = command.argv
    assert argv[0] == "/opt/vllm/bin/python"
    assert argv[argv.index("--port") + 1] == "9001" and argv[argv.index("--max-model-len") + 1] == "8192"
    assert argv[argv.index("--seed") :] == [
        "--seed",
        "0",
        "--tensor-parallel-size",
        "2",
        "--data-parallel-size",
        "4",
        "--gpu-memory-utilization",
        "0.4",
        "--enforce-eager",
    ]


def test_open_checkpoint_without_hub_id_names_the_variable(monkeypatch):
    monkeypatch.delenv("MIMESIS_USER_OSIM_8B_HUB_ID", raising=False)
    with pytest.raises(ValueError, match="set MIMESIS_USER_OSIM_8B_HUB_ID"):
        build_serve_command("osim-8b")
    monkeypatch.setenv("MIMESIS_USER_OSIM_8B_HUB_ID", "lab/osim-8b")
    command = build_serve_command("osim-8b", python="py")
    assert command.argv[3:8] == ["--model", "lab/osim-8b", "--served-model-name", "osim-8b", "--host"]
    assert command.port == 8003


def test_hosted_apis_cannot_be_served():
    with pytest.raises(ValueError, match="hosted API"):
        build_serve_command("gpt-5.5")


def test_non_loopback_host_needs_an_api_key(monkeypatch):
    with pytest.raises(ValueError, match="--api-key-env"):
        build_serve_command("mimesis-9b", host="0.0.0.0")
    with pytest.raises(ValueError, match="SERVE_KEY, which is not set"):
        build_serve_command("mimesis-9b", host="0.0.0.0", api_key_env="SERVE_KEY")
    monkeypatch.setenv("SERVE_KEY", "secret-value")
    command = build_serve_command("mimesis-9b", host="0.0.0.0", api_key_env="SERVE_KEY")
    assert command.key_variable == "SERVE_KEY" and command.key() == "secret-value"
    assert "--api-key" not in command.argv and "secret-value" not in command.shell()  # ps would show argv


def test_vllm_grammar_is_servable():
    command = build_serve_command("vllm:org/Some-Model", python="py")
    assert command.served_model_name == "Some-Model" and "--trust-remote-code" in command.argv


def test_print_mode_of_the_cli(capsys):
    assert main(["serve-user", "mimesis-9b", "--print", "--python", "py", "--port", "8100", "--", "--x", "1"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("py -m vllm.entrypoints.openai.api_server --model phanviethoang1512/MIMESIS-9B")
    assert "--port 8100" in out and out.endswith("--seed 0 --x 1")


def test_cli_reports_unservable_aliases(capsys):
    assert main(["serve-user", "gpt-5.6", "--print"]) == 2
    assert "nothing to serve" in capsys.readouterr().err


def _fake_cpuinfo(tmp_path, flags: str):
    path = tmp_path / "cpuinfo"
    block = "processor\t: {n}\nflags\t\t: fpu sse2 avx2 {flags}\n"
    path.write_text("\n".join(block.format(n=n, flags=flags) for n in range(2)))
    return str(path)


def test_bf16_instructions_are_read_from_the_cpu_flags(tmp_path):
    from mimesis_gym.users.serve import cpu_has_bf16

    assert cpu_has_bf16(_fake_cpuinfo(tmp_path, "avx512f avx512_bf16"))
    assert cpu_has_bf16(_fake_cpuinfo(tmp_path, "amx_tile amx_bf16"))
    assert not cpu_has_bf16(_fake_cpuinfo(tmp_path, "avx512f avx512bw"))
    assert cpu_has_bf16(str(tmp_path / "missing"))  # unreadable: vLLM's own dtype choice stands


@pytest.mark.parametrize(
    ("has_bf16", "passthrough", "expected"),
    [(False, [], ["--dtype", "float32"]), (True, [], []), (False, ["--dtype", "bfloat16"], ["--dtype", "bfloat16"])],
)
def test_tiny_is_served_in_float32_on_cpus_without_bf16(monkeypatch, tmp_path, has_bf16, passthrough, expected):
    import mimesis_gym.core.tiny
    import mimesis_gym.users.serve as serve

    monkeypatch.setattr(mimesis_gym.core.tiny, "ensure_tiny_model", lambda: tmp_path)
    monkeypatch.setattr(serve, "_has_cuda", lambda: False)
    monkeypatch.setattr(serve, "cpu_has_bf16", lambda: has_bf16)
    argv = build_serve_command("tiny", python="python", passthrough=passthrough).argv
    dtype = [argv[i : i + 2] for i, arg in enumerate(argv) if arg == "--dtype"]
    assert dtype == ([expected] if expected else [])


@pytest.mark.parametrize("alias", sorted(RELEASED_AGENTS))
def test_released_agents_are_served_where_the_agent_client_looks_with_tool_calls_on(monkeypatch, alias):
    monkeypatch.delenv(agent_base_url_variable(alias), raising=False)
    command = build_agent_serve_command(alias.upper(), python="python")
    assert command.shell() == (
        f"python -m vllm.entrypoints.openai.api_server --model {RELEASED_AGENTS[alias][0]} "
        f"--served-model-name {alias} --host 127.0.0.1 --port 8100 --generation-config vllm --seed 0 "
        "--enable-auto-tool-choice --tool-call-parser hermes"
    )
    endpoint, _ = released_agent_endpoint(alias)
    assert (command.base_url, command.served_model_name) == (endpoint.base_url, endpoint.model)
    assert command.base_url_variable == f"MIMESIS_AGENT_{alias.upper().replace('-', '_')}_BASE_URL"


def test_a_released_agent_takes_the_port_of_its_variable_and_the_usual_options(monkeypatch):
    monkeypatch.setenv("MIMESIS_AGENT_CSD_AGENT_BASE_URL", "http://127.0.0.1:8107/v1")
    command = build_agent_serve_command("csd-agent", python="python", tensor_parallel=2, passthrough=["--x"])
    assert command.port == 8107 and command.base_url == released_agent_endpoint("csd-agent")[0].base_url
    assert command.argv[-3:] == ["--tensor-parallel-size", "2", "--x"]
    assert build_agent_serve_command("csd-agent", port=9000).port == 9000
    with pytest.raises(ValueError, match="'mimesis-9b' is not a released agent; known: base-agent"):
        build_agent_serve_command("mimesis-9b")
    with pytest.raises(ValueError, match="requires --api-key-env"):
        build_agent_serve_command("csd-agent", host="0.0.0.0")


def test_serve_user_serves_a_released_agent_from_the_cli(monkeypatch, capsys):
    monkeypatch.delenv("MIMESIS_AGENT_CSD_AGENT_BASE_URL", raising=False)
    assert main(["serve-user", "csd-agent", "--print", "--python", "python"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("python -m vllm.entrypoints.openai.api_server --model phanviethoang1512/Qwen3-8B-CSD-Agent")
    assert out.endswith(
        "--port 8100 --generation-config vllm --seed 0 --enable-auto-tool-choice --tool-call-parser hermes"
    )

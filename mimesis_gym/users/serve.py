"""``mimesis-gym serve-user ALIAS``: serve a user alias with vLLM's OpenAI server.

The command and its options: docs/users.md, "Plugging in MIMESIS".

Always ``python -m vllm.entrypoints.openai.api_server`` (the CPU build's ``vllm`` console script
fails), with ``--generation-config vllm`` so that the server takes no sampling defaults from the
model's generation config: the client sends every sampling parameter it means. Users get no
reasoning parser: the thought stays inline, is stripped by the conventions and kept privileged.

:class:`VLLMServer` launches the command in its own process group, streams its output with a
prefix, waits for ``/health``, checks ``/v1/models`` and shuts the group down cleanly; the
``vllm`` test suite uses the same class.

An API key (``--api-key-env VAR``) never appears on the server's argv (which ``ps`` shows) or in
anything printed: the command names the variable, and the key reaches vLLM through the environment
as ``VLLM_API_KEY``, read from ``VAR`` only when the process starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from mimesis_gym.core.redact import redact, remember_key_variables
from mimesis_gym.users.builtin import alias_variable
from mimesis_gym.users.registry import ServeSpec, UserSpec, resolve_user

__all__ = [
    "ServeCommand",
    "ServeOptions",
    "VLLMServer",
    "build_serve_command",
    "free_port",
    "serve_spec_command",
    "tiny_server",
    "vllm_importable",
]

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
VLLM_KEY_VARIABLE = "VLLM_API_KEY"
"""The variable vLLM's server reads its API key from (an ``--api-key`` flag would show in ``ps``)."""


@dataclass
class ServeCommand:
    """The argv and extra environment of one vLLM server, plus where it will answer.

    ``key_variable`` names the variable holding the API key the server requires (``None``: no key);
    its value is not stored here, only read by :meth:`key` when the server starts or is probed.
    """

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str = ""
    alias: str = ""
    key_variable: str | None = None
    base_url_variable: str = ""
    """The variable clients read the server's URL from (printed as an ``export`` line once it is up)."""

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def key(self) -> str | None:
        """The API key from ``$key_variable`` (``None`` without one); ``RuntimeError`` when it is unset."""
        if self.key_variable is None:
            return None
        value = os.environ.get(self.key_variable)
        if not value:
            raise RuntimeError(f"{self.key_variable} (the server's API key) is not set")
        return value

    def shell(self) -> str:
        """The command as a shell line; the key appears as a reference to its variable, never as a value."""
        parts = [f"{key}={value}" for key, value in self.env.items()]
        if self.key_variable is not None:
            parts.append(f'{VLLM_KEY_VARIABLE}="${self.key_variable}"')
        return " ".join([*parts, *self.argv])


@dataclass(frozen=True)
class ServeOptions:
    """The ``serve-user`` options every served model takes (``None``: the value the ``ServeSpec`` gives)."""

    port: int | None = None
    host: str = "127.0.0.1"
    python: str | None = None
    tensor_parallel: int | None = None
    data_parallel: int | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    api_key_env: str | None = None
    passthrough: Sequence[str] = ()


def build_serve_command(alias: str, **options: Any) -> ServeCommand:
    """The vLLM server command for user ``alias`` (``ValueError`` for an alias nothing can serve).

    ``options`` are the fields of :class:`ServeOptions`.
    """
    spec: UserSpec = resolve_user(alias)
    if spec.alias == "tiny" and spec.serve is None:
        raise ValueError("tiny has no serve spec")
    if spec.serve is None:
        raise ValueError(f"user alias {alias!r} is a hosted API ({spec.kind}); there is nothing to serve")
    serve = spec.serve
    model = serve.model
    if spec.alias == "tiny":
        from mimesis_gym.core.tiny import ensure_tiny_model

        model = str(ensure_tiny_model())
    if not model:
        variable = serve.hub_variable or alias_variable(spec.alias, "HUB_ID")
        raise ValueError(f"user alias {spec.alias!r} has no pinned checkpoint: set {variable} to its hub id or path")
    base_url_variable = "MIMESIS_TINY_BASE_URL" if spec.alias == "tiny" else alias_variable(spec.alias, "BASE_URL")
    command = serve_spec_command(serve, model, spec.alias, base_url_variable, ServeOptions(**options))
    if spec.alias == "tiny" and not _has_cuda() and "--dtype" not in command.argv and not cpu_has_bf16():
        # vLLM-CPU resolves the tiny model to bfloat16; without bf16 instructions its oneDNN linear
        # falls back to a torch bf16 matmul about 6x slower than float32 (docs/users.md).
        command.argv += ["--dtype", "float32"]
    return command


def serve_spec_command(
    serve: ServeSpec, model: str, alias: str, base_url_variable: str, options: ServeOptions
) -> ServeCommand:
    """The vLLM server command for ``model`` served as ``serve`` says (users' and released agents' alike)."""
    if options.host not in ("127.0.0.1", "localhost", "::1") and not options.api_key_env:
        raise ValueError(
            f"serving on a non-loopback host requires --api-key-env VAR (passed to vLLM as ${VLLM_KEY_VARIABLE})"
        )
    chosen_port = options.port if options.port is not None else serve.port
    argv = [
        options.python or os.environ.get("MIMESIS_VLLM_PYTHON") or sys.executable,
        "-m",
        API_SERVER_MODULE,
        "--model",
        model,
        "--served-model-name",
        serve.served_model_name,
        "--host",
        options.host,
        "--port",
        str(chosen_port),
    ]
    if serve.trust_remote_code:
        argv.append("--trust-remote-code")
    argv += ["--generation-config", "vllm"]
    length = options.max_model_len or serve.max_model_len
    if length:
        argv += ["--max-model-len", str(length)]
    argv += ["--seed", "0", *serve.extra_args]
    if options.tensor_parallel:
        argv += ["--tensor-parallel-size", str(options.tensor_parallel)]
    if options.data_parallel:
        argv += ["--data-parallel-size", str(options.data_parallel)]
    if options.gpu_memory_utilization is not None:
        argv += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    if options.api_key_env:
        if not os.environ.get(options.api_key_env):
            raise ValueError(f"--api-key-env names {options.api_key_env}, which is not set")
        remember_key_variables([options.api_key_env])
    argv += list(options.passthrough)
    env = dict(serve.env)
    if "VLLM_CPU_KVCACHE_SPACE" in env and _has_cuda():
        env.pop("VLLM_CPU_KVCACHE_SPACE")
    return ServeCommand(
        argv,
        env,
        options.host,
        chosen_port,
        serve.served_model_name,
        alias,
        options.api_key_env or None,
        base_url_variable,
    )


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU has bfloat16 matrix instructions (``avx512_bf16`` or ``amx_bf16``).

    Read from the flags in ``cpuinfo``; ``True`` when the file cannot be read (vLLM's own choice stands).
    """
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return True
    flags = {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[-1].split()}
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def vllm_importable(python: str) -> bool:
    """Whether ``python`` can import vLLM (checked without importing it)."""
    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 1)"
    try:
        return subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class VLLMServer:
    """A vLLM server child process: start, wait for health, stop the whole process group."""

    def __init__(self, command: ServeCommand, *, prefix: str = "[vllm] ", log_file: str | None = None) -> None:
        self.command = command
        self.prefix = prefix
        self.log_file = log_file
        self.process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self.lines: list[str] = []

    def start(self) -> None:
        env = {**os.environ, **self.command.env}
        key = self.command.key()
        if key is not None:
            env[VLLM_KEY_VARIABLE] = key
        self.process = subprocess.Popen(
            self.command.argv,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: signals reach every worker
        )
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        sink = open(self.log_file, "a", encoding="utf-8") if self.log_file else None  # noqa: SIM115
        try:
            for line in self.process.stdout:
                line = redact(line)
                self.lines.append(line)
                del self.lines[:-200]
                if sink:
                    sink.write(line)
                    sink.flush()
                else:
                    sys.stdout.write(self.prefix + line)
        finally:
            if sink:
                sink.close()

    def wait_healthy(self, timeout_s: float = 900.0, poll_s: float = 2.0) -> None:
        """Poll ``/health`` until 200; fail early if the child exits; check ``/v1/models``.

        ``/v1/models`` is asked with the server's key when it has one (vLLM guards ``/v1``); a server
        bound to every interface is probed on 127.0.0.1, so the key stays on this machine.
        """
        assert self.process is not None
        host = "127.0.0.1" if self.command.host in ("0.0.0.0", "::", "") else self.command.host
        root = f"http://{host}:{self.command.port}"
        key = self.command.key()
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                tail = "".join(self.lines[-20:])
                raise RuntimeError(f"the vLLM server exited with code {self.process.returncode}:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{root}/health", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the vLLM server was not healthy within {timeout_s:.0f}s")
            time.sleep(poll_s)
        models = httpx.get(f"{root}/v1/models", headers=headers, timeout=10).json()
        served = [entry.get("id") for entry in models.get("data", [])]
        if self.command.served_model_name not in served:
            raise RuntimeError(f"the server lists {served}, not {self.command.served_model_name!r}")

    def stop(self, grace_s: float = 20.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace_s``; the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait(timeout=10)

    def __enter__(self) -> VLLMServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (for test and benchmark servers)."""
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tiny_server(python: str, *, log_file: str | None = None, passthrough: Sequence[str] = ()) -> VLLMServer:
    """A (not yet started) vLLM server for the tiny model on a free loopback port (``passthrough``: more vLLM flags)."""
    command = build_serve_command("tiny", python=python, port=free_port(), passthrough=tuple(passthrough))
    return VLLMServer(command, log_file=log_file)


def serve_user_main(command: ServeCommand, *, print_only: bool, wait_s: float) -> int:
    """The body of ``mimesis-gym serve-user``: print, or launch and wait until the child ends."""
    if print_only:
        print(command.shell())
        return 0
    if not vllm_importable(command.argv[0]):
        print(
            f"mimesis-gym serve-user: vLLM is not importable by {command.argv[0]}; install it there (see "
            "`make vllm-cpu`) or pass --python / set MIMESIS_VLLM_PYTHON (--print shows the command)",
            file=sys.stderr,
        )
        return 2
    server = VLLMServer(command)

    def forward(signum: int, _frame: object) -> None:
        if server.process is not None and server.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signum)

    try:
        server.start()
    except RuntimeError as error:  # the key variable was unset after the command was built
        print(f"mimesis-gym serve-user: {error}", file=sys.stderr)
        return 2
    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.wait_healthy(timeout_s=wait_s)
        key = command.base_url_variable or alias_variable(command.alias, "BASE_URL")
        print(f"serving {command.alias} at {command.base_url}")
        if command.key_variable is not None:
            print(f"# clients must send the API key held in ${command.key_variable}")
        print(f"export {key}={command.base_url}", flush=True)
        assert server.process is not None
        while True:
            try:
                return server.process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                continue
    except (RuntimeError, TimeoutError) as error:
        print(f"mimesis-gym serve-user: {error}", file=sys.stderr)
        server.stop()
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if server.process is not None and server.process.poll() is None:
            server.stop()

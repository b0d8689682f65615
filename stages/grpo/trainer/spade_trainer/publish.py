"""Publishing new weights to the generation servers (docs/architecture.md, "Contracts").

Modes, picked by ``grpo.publish``:

- ``lora``: the update saved a LoRA adapter under a new versioned name; it is loaded into a
  running vLLM server with ``POST <base_url>/v1/load_lora_adapter {"lora_name", "lora_path"}`` (the server
  started with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``; ``lora_path`` must be
  readable by the server). Later generation calls use the name as their model, and record it as
  ``weights_version``. The previous adapter is then unloaded (best effort).
- ``command``: a command template run without a shell, each argument formatted with ``{weights_dir}``,
  ``{version}``, ``{step}`` and ``{base_url}`` (full weights, a server restart, a copy to object storage).
- ``sglang``: full fine-tuning (``grpo.lora_rank`` 0); the new Hugging Face checkpoint is loaded into every
  SGLang server of ``grpo.publish_urls`` with ``POST <url>/update_weights_from_disk {"model_path"}``; the
  server keeps its served model name. Every replica must answer ``success``; the first that does not stops
  the step with its URL.
- ``vllm_reload``: the same for vLLM servers, in place, through the development API (the server started
  with ``VLLM_SERVER_DEV_MODE=1``): ``POST <url>/collective_rpc`` with ``update_config`` pointing the
  workers' model path at the checkpoint, then ``reload_weights``, then ``POST <url>/reset_prefix_cache`` so
  no cached prefix of the old weights is reused. A vLLM without these routes answers 404: restart its
  servers on the new checkpoint through ``grpo.publish = command`` instead (a template using
  ``{weights_dir}``).
- ``none``: the weights are saved, nothing is told.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, Optional, Sequence

MODE_LORA = "lora"
MODE_COMMAND = "command"
MODE_NONE = "none"
MODE_SGLANG = "sglang"
MODE_VLLM_RELOAD = "vllm_reload"
#: The modes that load a full checkpoint into servers that keep their served model name.
FULL_WEIGHT_MODES = (MODE_SGLANG, MODE_VLLM_RELOAD)


class PublishError(RuntimeError):
    """Publishing failed; the message says what the server or command answered."""


def version_name(prefix: str, step: int) -> str:
    """The weights version of step ``step``: ``<prefix>-step<NNNNNN>`` (sorts by step)."""
    return f"{prefix}-step{step:06d}"


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _post(url: str, body: Dict[str, Any], timeout_s: float) -> bytes:
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    api_key = os.environ.get("OPENAI_API_KEY")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:500]
        raise PublishError(f"POST {url}: HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise PublishError(f"POST {url}: {exc}") from exc


def publish_vllm_lora(
    base_url: str,
    version: str,
    adapter_dir: str,
    *,
    previous: Optional[str] = None,
    timeout_s: float = 120.0,
    log: Callable[[str], None] = lambda _: None,
) -> None:
    """Load the adapter in ``adapter_dir`` into the vLLM server at ``base_url`` under the name ``version``.

    Raises :class:`PublishError` with the server's answer when the load fails. Unloading ``previous``
    afterwards is best effort (a failure is logged): requests already using it are not disturbed.
    """
    if not base_url:
        raise PublishError("grpo.publish_url is empty: no vLLM server to load the adapter into")
    root = _api_root(base_url)
    _post(root + "/v1/load_lora_adapter", {"lora_name": version, "lora_path": os.path.abspath(adapter_dir)}, timeout_s)
    log(f"published LoRA adapter {version} to {root}")
    if previous and previous != version:
        try:
            _post(root + "/v1/unload_lora_adapter", {"lora_name": previous}, timeout_s)
        except PublishError as exc:
            log(f"could not unload previous adapter {previous}: {exc}")


def publish_command(template: str, fields: Dict[str, str], *, log: Callable[[str], None] = lambda _: None) -> None:
    """Run ``template`` (split like a shell would, no shell run) with ``{field}``s filled in.

    Raises :class:`PublishError` with the command's exit status and the end of its output when it fails.
    """
    try:
        argv = [arg.format(**fields) for arg in shlex.split(template)]
    except (KeyError, ValueError, IndexError) as exc:
        raise PublishError(f"grpo.publish_command: bad template {template!r}: {exc!r}") from exc
    if not argv:
        raise PublishError("grpo.publish_command is empty")
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    except OSError as exc:
        raise PublishError(f"grpo.publish_command: {argv[0]}: {exc}") from exc
    output = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        raise PublishError(f"grpo.publish_command exited {done.returncode}: {output[-500:]}")
    log(f"published with {argv[0]}: {output[-200:]}" if output else f"published with {argv[0]}")


def publish_sglang(
    urls: Sequence[str], checkpoint_dir: str, *, timeout_s: float = 600.0, log: Callable[[str], None] = lambda _: None
) -> None:
    """Load the full checkpoint in ``checkpoint_dir`` into every SGLang server of ``urls``, in order.

    Raises :class:`PublishError` naming the first replica that fails (an HTTP error, no answer, or an
    answer whose ``success`` is false); the replicas after it are not asked.
    """
    if not urls:
        raise PublishError("grpo.publish sglang: no server to load the checkpoint into (set grpo.publish_urls)")
    path = os.path.abspath(checkpoint_dir)
    for url in urls:
        endpoint = _api_root(url) + "/update_weights_from_disk"
        try:
            answer = _answer(_post(endpoint, {"model_path": path}, timeout_s))
        except PublishError as exc:
            raise PublishError(f"replica {url} did not load {path}: {exc}") from exc
        if answer.get("success") is False:
            raise PublishError(f"replica {url} did not load {path}: {answer.get('message', answer)}")
        log(f"replica {url} loaded {path}")


def publish_vllm_reload(
    urls: Sequence[str], checkpoint_dir: str, *, timeout_s: float = 600.0, log: Callable[[str], None] = lambda _: None
) -> None:
    """Reload every vLLM server of ``urls`` from the full checkpoint in ``checkpoint_dir``, in order.

    Per replica: ``update_config`` (the workers' model path), ``reload_weights``, then a best-effort
    ``reset_prefix_cache``. Raises :class:`PublishError` naming the first replica that fails.
    """
    if not urls:
        raise PublishError("grpo.publish vllm_reload: no server to reload (set grpo.publish_urls)")
    path = os.path.abspath(checkpoint_dir)
    for url in urls:
        root = _api_root(url)
        try:
            _post(root + "/collective_rpc", {"method": "update_config", "args": [{"model_config": {"model": path}}]}, timeout_s)
            _post(root + "/collective_rpc", {"method": "reload_weights"}, timeout_s)
        except PublishError as exc:
            raise PublishError(
                f"replica {url} did not reload {path}: {exc} (start vLLM with VLLM_SERVER_DEV_MODE=1, or restart it on "
                "the checkpoint with grpo.publish = command)"
            ) from exc
        try:
            _post(root + "/reset_prefix_cache", {}, timeout_s)
        except PublishError as exc:
            log(f"replica {url}: could not reset the prefix cache: {exc}")
        log(f"replica {url} reloaded {path}")


def _answer(body: bytes) -> Dict[str, Any]:
    try:
        value = json.loads(body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}

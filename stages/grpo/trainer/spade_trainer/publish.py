"""Publishing new weights to the generation server (docs/architecture.md, "Contracts"; issue 6 §5).

Modes, picked by ``grpo.publish``:

- ``lora`` (default): the update saved a LoRA adapter under a new versioned name; it is loaded into a
  running vLLM server with ``POST <base_url>/v1/load_lora_adapter {"lora_name", "lora_path"}`` (the server
  started with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``; ``lora_path`` must be
  readable by the server). Later generation calls use the name as their model, and record it as
  ``weights_version``. The previous adapter is then unloaded (best effort).
- ``command``: a command template run without a shell, each argument formatted with ``{weights_dir}``,
  ``{version}``, ``{step}`` and ``{base_url}`` (full weights, a server restart, a copy to object storage).
- ``none``: the weights are saved, nothing is told.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from typing import Callable, Dict, Optional

MODE_LORA = "lora"
MODE_COMMAND = "command"
MODE_NONE = "none"


class PublishError(RuntimeError):
    """Publishing failed; the message says what the server or command answered."""


def version_name(prefix: str, step: int) -> str:
    """The weights version of step ``step``: ``<prefix>-step<NNNNNN>`` (sorts by step)."""
    return f"{prefix}-step{step:06d}"


def _api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _post(url: str, body: Dict[str, str], timeout_s: float) -> None:
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    api_key = os.environ.get("OPENAI_API_KEY")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
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

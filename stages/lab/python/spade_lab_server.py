"""The lab's policy: a tiny decoder served the way SGLang serves a model, for ``spade lab``.

Two modes, both started by the Go package internal/lab with the trainer's package (spade_trainer) and
the chat-template helper (chattemplate.py) on PYTHONPATH:

    spade_lab_server.py init MODEL_DIR --seed N [--warm-steps K]
        writes a model directory in the Hugging Face layout: spade_tiny.json (the trainer's tiny decoder),
        tokenizer.json (a ByteLevel BPE whose added tokens are the lab world's words and code fragments),
        tokenizer_config.json (the chat template, eos_token), and model.pt: the decoder initialised from
        the seed, then warm-started by K supervised steps on answers of the right form (random content).

    spade_lab_server.py serve MODEL_DIR --port P [--name NAME] [--call-log FILE]
        serves MODEL_DIR's weights: GET /v1/models (owned_by sglang), POST /v1/chat/completions (SGLang's
        layout: choices[].prompt_token_ids, choices[].meta_info.output_token_logprobs), POST /generate
        (input_ids, return_logprob), POST /tokenize (a prompt), POST /update_weights_from_disk (a
        directory holding model.pt, the trainer's save format) and GET /get_model_info (the loaded
        weights' version and SHA-256). Every sampled call appends one JSON line to the call log:
        {"seed", "weights_version", "weights_sha256", "prompt_tokens", "completion_tokens"}.

Sampling is real: temperature, top-p and top-k filter the model's next-token distribution, and a
generator seeded with the request's seed draws from it. The log-prob reported for a sampled token is
log softmax(logits / temperature) at that token, the distribution it was drawn from before top-p/top-k
truncation; at temperature 1 without truncation (the lab's settings) it is exactly the trainer's
log π(token), so an on-policy update sees an importance weight of 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import torch

from chattemplate import Tokenizer, special_variables, template_environment
from spade_trainer import checkpoints
from spade_trainer import model as models

EOS = "<|im_end|>"
SPECIAL = ["<|endoftext|>", "<|im_start|>", EOS]
#: Role openers of the chat template, each one token.
OPENERS = ["<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n"]
#: Markers the lab's prompt templates start with: which role a prompt asks for.
MARKERS = ["[design]", "[hint]", "[play]"]
#: Markers of the Designer prompt's memory: a seed to mutate, a too-easy and a too-hard program.
MEMORY_MARKERS = ["[seed]", "[easy]", "[hard]"]
MOVES = ["up", "down", "left", "right"]
#: The system prompts spade sends the Designer and the hint writer, one token each.
SYSTEMS = {"[design]": "You are the Environment Designer of SPADE.", "[hint]": "You write hints for the Agent of SPADE."}

#: The env program's pieces. A valid answer is FENCE_OPEN, HEAD, then one GOAL, one NEED and one SHOW in any order,
#: then TAIL and FENCE_CLOSE; anything else is a program the gate refuses (a missing attribute fails its validation).
FENCE_OPEN = "```python\n"
FENCE_CLOSE = "\n```"
HEAD = (
    "class LabEnv:\n    def __init__(self, max_turns=6):\n        self.max_turns = max_turns\n\n"
    "    def reset(self, seed=None):\n        self.turn = 0\n        self.streak = 0\n"
)
GOALS = {m: '        self.goal = "%s"\n' % m for m in MOVES}
NEEDS = {k: "        self.need = %d\n" % k for k in (1, 2, 3, 4)}
SHOWS = {
    "shown": '        self.shown = "go " + self.goal\n',
    "hidden": '        self.shown = "go somewhere"\n',
}
TAIL = (
    "        return self.shown, {}\n\n"
    "    def step(self, action):\n"
    "        self.turn += 1\n"
    '        move = str(action).replace("\\\\boxed{", "").replace("}", "").strip()\n'
    "        if move == self.goal:\n"
    "            self.streak += 1\n"
    "        else:\n"
    "            self.streak = 0\n"
    "        won = self.streak >= self.need\n"
    "        over = self.turn >= self.max_turns\n"
    '        said = "yes " if move == self.goal else "no "\n'
    '        return said + self.shown, (1.0 if won else 0.0), won, over and not won, {"success": won}'
)
#: What the Agent and the hint writer answer with, and what the env shows.
ANSWERS = ["\\boxed{%s}" % m for m in MOVES]
HINTS = ["try %s" % m for m in MOVES] + ["repeat it"]
WORDS = ["go %s" % m for m in MOVES] + ["go somewhere", "yes ", "no ", "HINT: "]


def vocabulary() -> Tuple[Dict[str, int], List[str]]:
    """The byte alphabet (ids 0-255) and the added tokens after it, in id order."""
    from chattemplate import byte_alphabet

    alphabet = byte_alphabet()
    vocab = {alphabet[b]: b for b in range(256)}
    added = SPECIAL + OPENERS + MARKERS + MEMORY_MARKERS + list(SYSTEMS.values()) + [FENCE_OPEN, FENCE_CLOSE, HEAD, TAIL] + list(GOALS.values()) + list(NEEDS.values())
    added += list(SHOWS.values()) + ANSWERS + HINTS + WORDS
    return vocab, added


CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def tokenizer_json() -> Dict[str, Any]:
    """tokenizer.json in the tokenizers library's layout: ByteLevel BPE, no merges, the added tokens."""
    vocab, added = vocabulary()
    added_tokens = [
        {"id": 256 + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": t in SPECIAL}
        for i, t in enumerate(added)
    ]
    split = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    return {
        "version": "1.0",
        "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        ]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": []},
    }


def tokenizer_config() -> Dict[str, Any]:
    return {"chat_template": CHAT_TEMPLATE, "eos_token": EOS, "pad_token": "<|endoftext|>",
            "bos_token": None, "model_max_length": 512, "tokenizer_class": "Qwen2Tokenizer"}


# ---------------------------------------------------------------------------------------------------------
# init: the model directory and its warm start


def random_program(rng: random.Random) -> str:
    """A valid lab program (no fences) with a random goal, need and visibility."""
    middle = [GOALS[rng.choice(MOVES)], NEEDS[rng.choice([1, 2, 3, 4])], SHOWS[rng.choice(["shown", "hidden"])]]
    rng.shuffle(middle)
    return HEAD + "".join(middle) + TAIL


def warm_examples(tok: Tokenizer, rng: random.Random) -> List[Tuple[List[int], int]]:
    """One supervised example per role: (token ids, where the answer starts). The prompt is the role's
    marker with some filler, the answer one of the right form with random content, then EOS."""
    filler = "".join(rng.choice("abcdefghij klmno") for _ in range(rng.randint(0, 24)))
    role = rng.choice(MARKERS)
    if role == "[design]":
        for _ in range(rng.randint(0, 3)):
            filler += rng.choice(MEMORY_MARKERS) + random_program(rng)
        middle = [GOALS[rng.choice(MOVES)], NEEDS[rng.choice([1, 2, 3, 4])], SHOWS[rng.choice(["shown", "hidden"])]]
        rng.shuffle(middle)
        answer = FENCE_OPEN + HEAD + "".join(middle) + TAIL + FENCE_CLOSE
    elif role == "[hint]":
        answer = rng.choice(HINTS)
        filler += HEAD + GOALS[rng.choice(MOVES)] + TAIL
    else:
        answer = rng.choice(ANSWERS)
        filler += rng.choice(WORDS[:5])
        if rng.random() < 0.5:
            filler += "\n\nHINT: " + rng.choice(HINTS)
    system = OPENERS[0] + SYSTEMS[role] + EOS + "\n" if role in SYSTEMS else ""
    prompt = system + OPENERS[1] + role + filler + EOS + "\n" + OPENERS[2]
    ids = tok.encode(prompt)
    return [(ids + tok.encode(answer + EOS), len(ids))]


def warm_start(model: torch.nn.Module, tok: Tokenizer, steps: int, seed: int) -> float:
    """``steps`` Adam steps of next-token cross-entropy on answer tokens; returns the last loss."""
    rng = random.Random(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    last = 0.0
    for _ in range(steps):
        batch = []
        for _ in range(16):
            batch.extend(warm_examples(tok, rng))
        width = max(len(ids) for ids, _ in batch)
        inputs = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros(len(batch), width, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        for i, (ids, start) in enumerate(batch):
            inputs[i, : len(ids)] = torch.tensor(ids)
            mask[i, : len(ids)] = 1
            labels[i, start - 1 : len(ids) - 1] = torch.tensor(ids[start:])
        logits = model(inputs, mask)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = float(loss)
    return last


def init(model_dir: str, seed: int, warm_steps: int) -> None:
    os.makedirs(model_dir, exist_ok=True)
    spec = tokenizer_json()
    with open(os.path.join(model_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    with open(os.path.join(model_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, ensure_ascii=False)
    tok = Tokenizer(spec)
    vocab_size = 256 + len(spec["added_tokens"])
    cfg = models.TinyConfig(vocab_size=vocab_size, hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128, max_positions=512)
    models.write_tiny_config(model_dir, cfg)
    torch.manual_seed(seed)
    model = models.build_tiny(cfg, seed)
    loss = warm_start(model, tok, warm_steps, seed) if warm_steps > 0 else float("nan")
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, os.path.join(model_dir, checkpoints.TINY_WEIGHTS))
    print(json.dumps({"model_dir": model_dir, "vocab_size": vocab_size, "warm_steps": warm_steps, "warm_loss": loss}))


# ---------------------------------------------------------------------------------------------------------
# serve


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Policy:
    """The served weights and the sampler; one request samples at a time."""

    def __init__(self, model_dir: str, name: str, call_log: str) -> None:
        with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
            self.tok = Tokenizer(json.load(f))
        with open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        self.template = template_environment().from_string(config["chat_template"])
        self.specials = special_variables(config)
        self.eos = self.tok.added[EOS]
        self.name = name
        self.model_dir = model_dir
        self.call_log = call_log
        self.lock = threading.Lock()
        with open(os.path.join(model_dir, models.TINY_CONFIG_FILE)) as f:
            self.cfg = models.TinyConfig(**json.load(f))
        self.model = models.TinyDecoder(self.cfg)
        self.load(model_dir, name)

    def load(self, directory: str, version: str) -> str:
        """Load ``directory``/model.pt (the trainer's tiny save format); returns its SHA-256."""
        path = os.path.join(directory, checkpoints.TINY_WEIGHTS)
        if not os.path.isfile(path):
            raise ValueError("%s holds no %s" % (directory, checkpoints.TINY_WEIGHTS))
        state = torch.load(path, map_location="cpu")
        digest = file_sha256(path)
        with self.lock:
            self.model.load_state_dict(state)
            self.model.eval()
            self.version = version
            self.sha256 = digest
            self.path = os.path.abspath(directory)
        return digest

    def render(self, messages: List[Dict[str, Any]]) -> str:
        values = dict(self.specials)
        values["messages"] = [{"role": m.get("role", ""), "content": m.get("content") or ""} for m in messages]
        values["add_generation_prompt"] = True
        return self.template.render(**values)

    def sample(self, prompt: List[int], max_new: int, temperature: float, top_p: float, top_k: int, seed: int) -> Tuple[List[int], List[float], str]:
        """Sample up to ``max_new`` tokens after ``prompt``; returns ids, their log-probs and the finish."""
        room = self.cfg.max_positions - len(prompt)
        if room <= 0:
            raise ValueError("prompt of %d tokens leaves no room under max_positions %d" % (len(prompt), self.cfg.max_positions))
        limit = min(max_new if max_new > 0 else room, room)
        gen = torch.Generator().manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
        ids = list(prompt)
        out: List[int] = []
        lps: List[float] = []
        finish = "length"
        with self.lock, torch.no_grad():
            version, digest = self.version, self.sha256
            for _ in range(limit):
                logits = self.model(torch.tensor([ids]))[0, -1].float()
                t = temperature if temperature > 0 else 1.0
                logp = torch.log_softmax(logits / t, dim=-1)
                if temperature <= 0:
                    token = int(torch.argmax(logp))
                else:
                    probs = filtered(logp.exp(), top_p, top_k)
                    token = int(torch.multinomial(probs, 1, generator=gen))
                out.append(token)
                lps.append(float(logp[token]))
                ids.append(token)
                if token == self.eos:
                    finish = "stop"
                    break
        self.record({"seed": seed, "weights_version": version, "weights_sha256": digest,
                     "prompt_tokens": len(prompt), "completion_tokens": len(out)})
        return out, lps, finish

    def record(self, line: Dict[str, Any]) -> None:
        if self.call_log:
            with self.lock, open(self.call_log, "a") as f:
                f.write(json.dumps(line) + "\n")


def filtered(probs: torch.Tensor, top_p: float, top_k: int) -> torch.Tensor:
    """probs restricted to the top_k likeliest tokens (0: all) and the smallest head of them whose mass
    reaches top_p (1: all), unnormalised (multinomial normalises)."""
    keep = torch.ones_like(probs, dtype=torch.bool)
    order = torch.argsort(probs, descending=True)
    if top_k > 0:
        keep[order[top_k:]] = False
    if 0 < top_p < 1:
        sorted_p = probs[order]
        before = torch.cumsum(sorted_p, 0) - sorted_p
        keep[order[before >= top_p]] = False
    return torch.where(keep, probs, torch.zeros_like(probs))


def meta_info(policy: Policy, ids: List[int], lps: List[float], finish: str, prompt_tokens: int) -> Dict[str, Any]:
    return {
        "output_token_logprobs": [[lp, i, policy.tok.decode([i])] for i, lp in zip(ids, lps)],
        "output_ids": ids,
        "finish_reason": {"type": finish},
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(ids),
        "weights_version": policy.version,
    }


#: The routes answered to POST only.
POST_ROUTES = ("/v1/chat/completions", "/generate", "/tokenize", "/update_weights_from_disk")


class Handler(BaseHTTPRequestHandler):
    policy: Policy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base class's name)
        pass

    def reply(self, status: int, body: Dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status: int, message: str) -> None:
        self.reply(status, {"object": "error", "message": message, "code": status})

    def body(self) -> Optional[Dict[str, Any]]:
        n = int(self.headers.get("Content-Length") or 0)
        try:
            value = json.loads(self.rfile.read(n) or b"{}")
        except ValueError as exc:
            self.error(400, "body is not JSON: %s" % exc)
            return None
        if not isinstance(value, dict):
            self.error(400, "body is not a JSON object")
            return None
        return value

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        p = self.policy
        if self.path in ("/v1/models", "/models"):
            self.reply(200, {"object": "list", "data": [{"id": p.name, "object": "model", "owned_by": "sglang",
                                                         "root": p.name, "max_model_len": p.cfg.max_positions}]})
        elif self.path in ("/health", "/health_generate"):
            self.reply(200, {})
        elif self.path == "/get_model_info":
            self.reply(200, {"model_path": p.path, "weights_version": p.version, "weights_sha256": p.sha256,
                             "is_generation": True})
        elif self.path in POST_ROUTES:
            self.error(405, "Method Not Allowed")  # as a real server answers a GET of a POST route
        else:
            self.error(404, "no route GET %s" % self.path)

    def do_POST(self) -> None:  # noqa: N802
        routes = {"/v1/chat/completions": self.chat, "/generate": self.generate, "/tokenize": self.tokenize,
                  "/update_weights_from_disk": self.update}
        route = routes.get(self.path)
        if route is None:
            self.error(404, "no route POST %s" % self.path)
            return
        req = self.body()
        if req is None:
            return
        try:
            route(req)
        except ValueError as exc:
            self.error(400, str(exc))
        except Exception as exc:  # a bug answers 500 with its message, as a real server would
            self.error(500, "%s: %s" % (type(exc).__name__, exc))

    def chat(self, req: Dict[str, Any]) -> None:
        p = self.policy
        if req.get("model") != p.name:
            self.error(404, "The model `%s` does not exist." % req.get("model"))
            return
        prompt = p.tok.encode(p.render(req.get("messages") or []))
        max_new = int(req.get("max_tokens") or req.get("max_completion_tokens") or 0)
        ids, lps, finish = p.sample(prompt, max_new, float(req.get("temperature", 1.0)), float(req.get("top_p", 1.0)),
                                    int(req.get("top_k") or 0), int(req.get("seed") or 0))
        if ids and ids[-1] == p.eos:
            text = p.tok.decode(ids[:-1])
        else:
            text = p.tok.decode(ids)
        choice: Dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        if req.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": p.tok.decode([i]), "logprob": lp, "top_logprobs": []} for i, lp in zip(ids, lps)]}
        if req.get("return_prompt_token_ids"):
            choice["prompt_token_ids"] = prompt
        if req.get("return_meta_info"):
            choice["meta_info"] = meta_info(p, ids, lps, finish, len(prompt))
        self.reply(200, {"id": "chatcmpl-lab", "object": "chat.completion", "model": p.name, "choices": [choice],
                         "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids), "total_tokens": len(prompt) + len(ids)}})

    def generate(self, req: Dict[str, Any]) -> None:
        p = self.policy
        prompt = req.get("input_ids")
        if not isinstance(prompt, list) or not all(isinstance(i, int) for i in prompt):
            raise ValueError("input_ids: want a list of token ids")
        if any(i < 0 or i >= p.cfg.vocab_size for i in prompt):
            raise ValueError("input_ids: a token id is outside the vocabulary of %d" % p.cfg.vocab_size)
        sp = req.get("sampling_params") or {}
        ids, lps, finish = p.sample(prompt, int(sp.get("max_new_tokens") or 0), float(sp.get("temperature", 1.0)),
                                    float(sp.get("top_p", 1.0)), int(sp.get("top_k") or 0), int(sp.get("sampling_seed") or 0))
        text = p.tok.decode(ids[:-1] if ids and ids[-1] == p.eos else ids)
        meta = meta_info(p, ids, lps, finish, len(prompt))
        if not req.get("return_logprob"):
            del meta["output_token_logprobs"]
        self.reply(200, {"text": text, "output_ids": ids, "meta_info": meta})

    def tokenize(self, req: Dict[str, Any]) -> None:
        prompt = req.get("prompt")
        if not isinstance(prompt, str):
            raise ValueError("1 validation error: prompt: Field required")
        ids = self.policy.tok.encode(prompt)
        self.reply(200, {"tokens": ids, "count": len(ids), "max_model_len": self.policy.cfg.max_positions})

    def update(self, req: Dict[str, Any]) -> None:
        path = req.get("model_path")
        if not isinstance(path, str) or not os.path.isdir(path):
            self.reply(400, {"success": False, "message": "model_path %r is not a directory" % path})
            return
        try:
            digest = self.policy.load(path, os.path.basename(os.path.normpath(path)))
        except (ValueError, RuntimeError) as exc:
            self.reply(400, {"success": False, "message": str(exc)})
            return
        self.reply(200, {"success": True, "message": "loaded %s (sha256 %s)" % (path, digest), "num_paused_requests": 0})


def serve(model_dir: str, port: int, name: str, call_log: str) -> None:
    torch.set_num_threads(1)
    Handler.policy = Policy(model_dir, name, call_log)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(json.dumps({"listening": "http://127.0.0.1:%d" % server.server_address[1]}), flush=True)
    server.serve_forever()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spade_lab_server")
    sub = parser.add_subparsers(dest="mode", required=True)
    p_init = sub.add_parser("init")
    p_init.add_argument("model_dir")
    p_init.add_argument("--seed", type=int, default=0)
    p_init.add_argument("--warm-steps", type=int, default=300)
    p_serve = sub.add_parser("serve")
    p_serve.add_argument("model_dir")
    p_serve.add_argument("--port", type=int, default=0)
    p_serve.add_argument("--name", default="spade-lab")
    p_serve.add_argument("--call-log", default="")
    args = parser.parse_args(argv)
    if args.mode == "init":
        init(args.model_dir, args.seed, args.warm_steps)
    else:
        serve(args.model_dir, args.port, args.name, args.call_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

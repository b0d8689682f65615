"""A model's chat template and byte-level BPE tokenizer, served over stdin/stdout.

Started once by the Go package internal/chattemplate as `chattemplate.py MODEL_DIR [--template FILE]
[--render-only]`: MODEL_DIR holds the Hugging Face tokenizer_config.json (its chat_template, unless
--template names a Jinja2 file) and, unless --render-only, tokenizer.json. It reads one JSON request per line and
writes one JSON answer per line:

  {"op": "render", "messages": [...], "tools": [...] | null, "add_generation_prompt": bool,
   "kwargs": {...}}                          -> {"text": "..."}
  {"op": "encode", "text": "..."}           -> {"ids": [...]}
  {"op": "decode", "ids": [...]}            -> {"text": "..."}
  {"op": "pieces", "ids": [...]}            -> {"pieces": [[id, id], ...]}  (each id's merge parts, or [])
  {"op": "info"}                            -> {"eos_token_id": N, "special": {...}}

Any failure is {"error": "..."} on its line. Rendering follows transformers' apply_chat_template:
a sandboxed Jinja2 environment with trim_blocks and lstrip_blocks, the tojson filter that keeps
non-ASCII, raise_exception and strftime_now, and the special tokens as variables. Encoding follows the
tokenizers library for a ByteLevel BPE model: added tokens are matched in the text first (longest
first), the rest NFC-normalized, split by the pre-tokenizer's regex, mapped to the byte alphabet and
merged by rank.
"""

import datetime
import json
import sys
import unicodedata

import jinja2
import jinja2.ext
import jinja2.sandbox


def byte_alphabet():
    """GPT-2's reversible map from bytes to printable characters."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


class Tokenizer:
    """A ByteLevel BPE tokenizer read from tokenizer.json."""

    def __init__(self, spec):
        import regex  # the pre-tokenizer's \p{L} classes; only the tokenizer needs it

        model = spec["model"]
        if model.get("type") != "BPE":
            raise ValueError("tokenizer.json: model type %r, want BPE" % model.get("type"))
        self.vocab = model["vocab"]
        self.merges = {}
        for rank, merge in enumerate(model["merges"]):
            pair = tuple(merge) if isinstance(merge, list) else tuple(merge.split(" ", 1))
            self.merges[pair] = rank
        self.added = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
        self.inverse = {i: s for s, i in self.vocab.items()}
        for s, i in self.added.items():
            self.inverse[i] = s
        self.pattern = None
        for pre in self._pretokenizers(spec.get("pre_tokenizer")):
            if pre.get("type") == "Split":
                self.pattern = regex.compile(pre["pattern"]["Regex"])
        if self.pattern is None:
            raise ValueError("tokenizer.json: no Split pre-tokenizer")
        self.to_char = byte_alphabet()
        self.to_byte = {c: b for b, c in self.to_char.items()}
        alternatives = sorted(self.added, key=len, reverse=True)
        self.added_re = regex.compile("|".join(regex.escape(a) for a in alternatives)) if alternatives else None
        self.cache = {}
        self.parts = {}
        for (a, b) in self.merges:
            joined = a + b
            if joined in self.vocab and a in self.vocab and b in self.vocab:
                self.parts.setdefault(self.vocab[joined], [self.vocab[a], self.vocab[b]])

    @staticmethod
    def _pretokenizers(pre):
        if not pre:
            return []
        if pre.get("type") == "Sequence":
            return pre["pretokenizers"]
        return [pre]

    def _bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, at = None, -1
            for i in range(len(parts) - 1):
                rank = self.merges.get((parts[i], parts[i + 1]))
                if rank is not None and (best is None or rank < best):
                    best, at = rank, i
            if best is None:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        ids = [self.vocab[p] for p in parts]
        self.cache[word] = ids
        return ids

    def _encode_plain(self, text, out):
        text = unicodedata.normalize("NFC", text)
        for piece in self.pattern.findall(text):
            mapped = "".join(self.to_char[b] for b in piece.encode("utf-8"))
            out.extend(self._bpe(mapped))

    def encode(self, text):
        out = []
        at = 0
        if self.added_re is not None:
            for m in self.added_re.finditer(text):
                self._encode_plain(text[at:m.start()], out)
                out.append(self.added[m.group(0)])
                at = m.end()
        self._encode_plain(text[at:], out)
        return out

    def decode(self, ids):
        data = bytearray()
        for i in ids:
            s = self.inverse.get(i)
            if s is None:
                raise ValueError("decode: unknown token id %d" % i)
            if s in self.added:
                data.extend(s.encode("utf-8"))
            else:
                data.extend(self.to_byte[c] for c in s)
        return data.decode("utf-8", errors="replace")


def template_environment():
    """The Jinja2 environment transformers renders chat templates in."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special_variables(config):
    """The special tokens a template may name (bos_token, eos_token, ...)."""
    out = {}
    for key, value in config.items():
        if key.endswith("_token"):
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                out[key] = value
    return out


def main():
    args = sys.argv[1:]
    model_dir = args.pop(0)
    template_file, render_only = None, False
    while args:
        flag = args.pop(0)
        if flag == "--template":
            template_file = args.pop(0)
        elif flag == "--render-only":
            render_only = True
        else:
            raise SystemExit("chattemplate.py: unknown argument %r" % flag)
    tokenizer = None
    if not render_only:
        with open(model_dir + "/tokenizer.json", encoding="utf-8") as f:
            tokenizer = Tokenizer(json.load(f))
    with open(model_dir + "/tokenizer_config.json", encoding="utf-8") as f:
        config = json.load(f)
    source = config.get("chat_template")
    if template_file:
        with open(template_file, encoding="utf-8") as f:
            source = f.read()
    if isinstance(source, list):
        source = next((t["template"] for t in source if t.get("name") == "default"), source[0]["template"])
    template = template_environment().from_string(source) if source else None
    specials = special_variables(config)
    eos = specials.get("eos_token")
    out = sys.stdout
    for line in sys.stdin:
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "render":
                if template is None:
                    raise ValueError("the tokenizer_config.json has no chat_template")
                values = dict(specials)
                values.update(req.get("kwargs") or {})
                values["messages"] = req["messages"]
                if req.get("tools"):
                    values["tools"] = req["tools"]
                values["add_generation_prompt"] = bool(req.get("add_generation_prompt"))
                answer = {"text": template.render(**values)}
            elif tokenizer is None and op != "info":
                raise ValueError("started with --render-only: no tokenizer")
            elif op == "encode":
                answer = {"ids": tokenizer.encode(req["text"])}
            elif op == "decode":
                answer = {"text": tokenizer.decode(req["ids"])}
            elif op == "pieces":
                answer = {"pieces": [tokenizer.parts.get(i, []) for i in req["ids"]]}
            elif op == "info":
                eos_id = tokenizer.added.get(eos, -1) if tokenizer and eos else -1
                answer = {"eos_token_id": eos_id, "special": specials}
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # every failure is the answer of its line
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

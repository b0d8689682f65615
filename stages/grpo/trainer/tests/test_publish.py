"""Publishing to a vLLM-style server (a real HTTP server in the test) and through a command."""

import json
import os
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, HTTPServer

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)

from spade_trainer import publish as P


class FakeVLLM(HTTPServer):
    """Answers /v1/load_lora_adapter and /v1/unload_lora_adapter like vLLM and records the requests."""

    def __init__(self, fail_load: bool = False):
        self.requests = []
        self.fail_load = fail_load
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body, self.headers.get("Authorization")))
                if server.fail_load and self.path.endswith("/load_lora_adapter"):
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(b'{"error": "adapter not found at path"}')
                    return
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"Success")

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self):
        self.shutdown()
        self.server_close()


class VLLMLora(unittest.TestCase):
    def test_load_then_unload_previous(self):
        server = FakeVLLM()
        self.addCleanup(server.stop)
        os.environ["OPENAI_API_KEY"] = "k-test"
        self.addCleanup(os.environ.pop, "OPENAI_API_KEY")
        with tempfile.TemporaryDirectory() as adapter:
            P.publish_vllm_lora(server.url + "/v1", "run-step000002", adapter, previous="run-step000001")
            self.assertEqual(
                server.requests,
                [
                    ("/v1/load_lora_adapter", {"lora_name": "run-step000002", "lora_path": adapter}, "Bearer k-test"),
                    ("/v1/unload_lora_adapter", {"lora_name": "run-step000001"}, "Bearer k-test"),
                ],
            )

    def test_server_refusal_is_an_error_with_its_answer(self):
        server = FakeVLLM(fail_load=True)
        self.addCleanup(server.stop)
        with self.assertRaisesRegex(P.PublishError, "HTTP 400.*adapter not found"):
            P.publish_vllm_lora(server.url, "v", "/nowhere")
        self.assertEqual(len(server.requests), 1)  # nothing unloaded after a failed load

    def test_unreachable_server(self):
        with self.assertRaisesRegex(P.PublishError, "load_lora_adapter"):
            P.publish_vllm_lora("http://127.0.0.1:9", "v", "/nowhere", timeout_s=2)

    def test_version_names_sort_by_step(self):
        self.assertEqual(P.version_name("r", 7), "r-step000007")
        self.assertLess(P.version_name("r", 99), P.version_name("r", 100))


class Command(unittest.TestCase):
    def test_fields_are_filled_without_a_shell(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.txt")
            template = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write('|'.join(sys.argv[2:]))\" {out} {{version}} '{{weights_dir}}' $HOME"
            P.publish_command(template, {"version": "v1", "weights_dir": "/w d", "step": "1", "base_url": ""})
            with open(out) as f:
                self.assertEqual(f.read(), "v1|/w d|$HOME")

    def test_unknown_field(self):
        with self.assertRaisesRegex(P.PublishError, "bad template"):
            P.publish_command("echo {nope}", {"version": "v"})


if __name__ == "__main__":
    unittest.main()

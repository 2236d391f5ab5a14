"""What the tests' fake model servers share: a request handler that answers JSON and logs nothing, and a
server started on a free local port (tests/test_forecast_servers.py, test_forecast_replay.py,
test_forecast_methods.py)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JSONHandler(BaseHTTPRequestHandler):
    """A handler with :meth:`send_json`; the request log is kept quiet."""

    def send_json(self, status: int, obj, headers: dict | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve(handler) -> tuple[ThreadingHTTPServer, str]:
    """Start ``handler`` on 127.0.0.1 in a daemon thread; (the server, its base URL ending in ``/v1``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def reply_body(path: str, body: dict, text: str, usage: dict | None = None) -> dict:
    """An OpenAI reply holding ``text``: chat completions' shape for a ``/chat/completions`` path, else the
    Responses API's."""
    if path.endswith("/chat/completions"):
        return {"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": usage or {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}
    return {"id": "r1", "object": "response", "created_at": 0, "model": body.get("model"),
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "output": [{"type": "message", "id": "m1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def prompt_of(body: dict) -> str:
    """The text a chat-completions or Responses request sends (its messages' or input's texts, joined)."""
    if "messages" in body:
        return "\n".join(m["content"] if isinstance(m["content"], str) else
                         "".join(p.get("text", "") for p in m["content"]) for m in body["messages"])
    inp = body.get("input")
    if isinstance(inp, str):
        return inp
    return "\n".join(p.get("text", "") for item in inp for p in item.get("content", []))


def run_cli(args, capsys):
    """``python -m tpsviz ARGS`` in-process: (exit code, stdout, stderr)."""
    from tpsviz.cli import main as cli

    code = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err

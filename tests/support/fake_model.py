"""A scripted model API on loopback for driving the real Claude Code and Codex binaries offline.

Speaks Anthropic Messages (`POST /v1/messages`, SSE) or OpenAI Responses (`POST /v1/responses`,
SSE). Each session is scripted by a marker the test puts in its prompt (the script file is re-read
on every request); step k answers the request
that carries k earlier model turns, so a retried request gets the same answer. Every request body is
appended to a JSONL record. Standard library only: run as a process (`python fake_model.py`) by the
tests and by bench/agents.py alike.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# What an unscripted request gets (title generation, Codex's memory agent, a session with no script).
DEFAULT_STEP = {"text": "ok"}


def _user_text(body: dict, api: str) -> str:
    """Everything the user side said, to find which scripted session a request belongs to."""
    if api == "anthropic":
        items = [m for m in body.get("messages", []) if m.get("role") == "user"]
    else:
        items = [m for m in body.get("input", []) if isinstance(m, dict) and m.get("role") == "user"]
    return json.dumps(items)


def _turns(body: dict, api: str) -> int:
    """How many model turns the history already holds: the index of the step to answer with."""
    if api == "anthropic":
        return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    return sum(1 for m in body.get("input", []) if isinstance(m, dict)
               and m.get("type") in ("function_call_output", "custom_tool_call_output"))


def _patch_for(write: dict) -> str:
    lines = "".join(f"+{line}\n" for line in write["content"].splitlines())
    return f"*** Begin Patch\n*** Add File: {write['path']}\n{lines}*** End Patch\n"


def anthropic_events(step: dict, k: int, model: str) -> list[tuple[str, dict]]:
    if "write" in step:
        block = {"type": "tool_use", "id": f"toolu_{k:04d}", "name": "Write", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(
            {"file_path": step["write"]["path"], "content": step["write"]["content"]})}
        stop = "tool_use"
    elif "tool" in step:
        block = {"type": "tool_use", "id": f"toolu_{k:04d}", "name": step["tool"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step["input"])}
        stop = "tool_use"
    else:
        block, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": step["text"]}, "end_turn"
    message = {"id": f"msg_{k:04d}", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    return [("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"})]


def responses_events(step: dict, k: int) -> list[tuple[str, dict]]:
    call = f"call_{k:04d}"
    if "write" in step or "patch" in step:
        patch = _patch_for(step["write"]) if "write" in step else step["patch"]
        item = {"type": "custom_tool_call", "id": f"ctc_{k:04d}", "call_id": call, "name": "apply_patch",
                "input": patch, "status": "completed"}
    elif "exec" in step:
        item = {"type": "function_call", "id": f"fc_{k:04d}", "call_id": call, "name": "exec_command",
                "arguments": json.dumps({"cmd": step["exec"]}), "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{k:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": step["text"], "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    events = [{"type": "response.created", "response": {"id": f"resp_{k:04d}"}},
              {"type": "response.output_item.added", "output_index": 0, "item": item},
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.completed", "response": {"id": f"resp_{k:04d}", "usage": usage}}]
    return [(e["type"], e) for e in events]


class FakeModel(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api: str, script: Path, record: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api, self.script, self.record = api, script, record
        self.lock = threading.Lock()

    def answer(self, body: dict) -> bytes:
        said = _user_text(body, self.api)
        script = json.loads(self.script.read_text(encoding="utf-8"))  # re-read: tests add sessions as they go
        steps = next((s for marker, s in script.items() if marker in said), [])
        k = _turns(body, self.api)
        step = steps[k] if k < len(steps) else DEFAULT_STEP
        with self.lock, open(self.record, "a", encoding="utf-8") as out:
            out.write(json.dumps({"turn": k, "scripted": bool(steps), "body": body}) + "\n")
        events = anthropic_events(step, k, str(body.get("model"))) if self.api == "anthropic" else responses_events(step, k)
        return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeModel

    def log_message(self, *args: object) -> None:  # quiet: the record file is the log
        pass

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._reply(404, b"{}", "application/json")

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.split("?")[0].endswith(("/messages", "/responses")):
            self._reply(404, b"{}", "application/json")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._reply(400, b'{"error": "body is not JSON"}', "application/json")
            return
        self._reply(200, self.server.answer(body), "text/event-stream")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--api", choices=("anthropic", "responses"), required=True)
    parser.add_argument("--script", type=Path, required=True, help="JSON: {marker: [step, ...]}")
    parser.add_argument("--record", type=Path, required=True, help="JSONL file every request is appended to")
    args = parser.parse_args()
    server = FakeModel(args.api, args.script, args.record)
    print(server.server_address[1], flush=True)  # the port: the parent reads this line
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()

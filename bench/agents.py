"""Hook cost per session with the real agent binaries: the same scripted session with and without
kgbridge's hooks, against the fake model API on loopback (tests/support/fake_model.py, run as a
process: bench never imports the tests).

Run: .venv/bin/python -m bench.agents [--runs 7] [--agent claude|codex|both]
Each session makes five tool calls (two memory files, three source files) and ends. Runs alternate
with / without hooks; reported: median session wall time each way and the difference (target
<= 150 ms added per session), and what the agent waited on: Claude Code logs each synchronous hook's
time itself (--debug-file); for Codex, which logs none, each hook run of a session is replayed
through the installed command (`sh -c`, the real payloads; a source-file apply_patch is a memory one
with `.md` made `.py`); the replay also gives those processes' CPU time (load inflates it far less
than wall time) and the same with every command ungated, as before the gates (ADR 0010). Then how
often Python started: one more session, not timed, with a `kgbridge-hook` on PATH that counts the
payloads the sh gates let through.
Binaries from scripts/agents.sh (pinned); our packages byte-compiled first, as pip does.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE_MODEL = REPO / "tests" / "support" / "fake_model.py"
CODEX_MODEL = "gpt-5.5"  # one `codex debug models` lists, so apply_patch is offered
KEY_ENV = "KGBRIDGE_FAKE_MODEL_KEY"
# A hook command may hold brackets itself (the sh gate's `[ -r … ]`): match up to the outcome.
_HOOK_RUN = re.compile(r"Hooks: \S+ \[[^\n]*kgbridge-hook[^\n]*?\] (?:\(plugin \S+\) )?"
                       r"(?:finished with|completed with|moved to the background)")
_HOOK_MS = re.compile(r"Hooks: \S+ \[[^\n]*kgbridge-hook[^\n]*?\] (?:\(plugin \S+\) )?"
                      r"(?:finished|completed) with status \d+ \((\d+)ms\)")
_HOOK_WAITED = re.compile(r"Hooks: ([A-Za-z]+)\S* \[[^\n]*kgbridge-hook[^\n]*?\] (?:\(plugin \S+\) )?"
                          r"finished with status \d+ \((\d+)ms\)")  # synchronous: the agent waited
_CODEX_HOOK = re.compile(r"^hook: (\w+) Completed", re.M)  # what `codex exec` prints per hook run


def memory_text(i: int) -> str:
    return f"---\nname: fact-{i}\ndescription: fact {i}\ntype: project\n---\n- Fact {i} holds for the shop\n"


def steps(memory_dir: Path, project: Path) -> list[dict]:
    writes = [(memory_dir / "project_fact_1.md", memory_text(1)), (project / "a.py", "A = 1\n"),
              (memory_dir / "project_fact_2.md", memory_text(2)), (project / "b.py", "B = 2\n"),
              (project / "c.py", "C = 3\n")]
    return [*({"write": {"path": str(p), "content": c}} for p, c in writes), {"text": "Done."}]


class Sandbox:
    def __init__(self, base: Path, bin_dir: Path, port: int) -> None:
        self.base, self.bin = base, bin_dir
        self.home, self.project = base / "home", base / "work" / "shop"
        self.project.mkdir(parents=True)
        self.home.mkdir()
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        codex_home = self.home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nenv_key = "{KEY_ENV}"\n')
        inherited = {k: v for k, v in os.environ.items()
                     if not k.startswith(("KG_", "CLAUDE", "ANTHROPIC_", "OPENAI_", "CODEX_"))}
        self.env = {**inherited, "HOME": str(self.home), "CODEX_HOME": str(codex_home),
                    "KG_KNOWLEDGE_ROOT": str(base / "Knowledge"), "KG_STATE_DIR": str(base / "state"),
                    "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
                    "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "bench",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", KEY_ENV: "bench"}
        self.kg("activate")
        self.memory_dir = Path(json.loads(self.kg("status", "--json"))["memory_dir"])
        self.memory_dir.mkdir(parents=True, exist_ok=True)

    def trace_hook_starts(self) -> Path:
        """A `kgbridge-hook` first on PATH that logs each payload it is started with (one line)."""
        tracer, log = self.base / "tracer" / "kgbridge-hook", self.base / "hook-starts.jsonl"
        tracer.parent.mkdir(exist_ok=True)
        tracer.write_text(f"#!/bin/sh\np=$(cat)\nprintf '%s\\n' \"$p\" >> '{log}'\n"
                          f"printf %s \"$p\" | exec '{Path(sys.executable).parent / 'kgbridge-hook'}' \"$@\"\n")
        tracer.chmod(0o755)
        self.env["PATH"] = f"{tracer.parent}:{self.env['PATH']}"
        return log

    def kg(self, *args: str) -> str:
        return subprocess.run([sys.executable, "-m", "kgbridge.cli", *args], cwd=self.project, env=self.env,
                              check=True, capture_output=True, text=True).stdout

    def session(self, agent: str, prompt: str, debug: Path | None) -> tuple[float, str]:
        if agent == "claude":
            args = [str(self.bin / "claude"), "-p", prompt, "--output-format", "json",
                    *(["--debug-file", str(debug)] if debug else [])]
        else:
            args = [str(self.bin / "codex"), "exec", "--dangerously-bypass-approvals-and-sandbox", prompt]
        start = time.perf_counter()
        done = subprocess.run(args, cwd=self.project, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, check=True, timeout=300)
        return time.perf_counter() - start, done.stdout + done.stderr


def measure(agent: str, bin_dir: Path, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        script = base / "script.json"
        script.write_text("{}")
        fake = subprocess.Popen([sys.executable, str(FAKE_MODEL), "--api", "anthropic" if agent == "claude" else
                                 "responses", "--script", str(script), "--record", str(base / "requests.jsonl")],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert fake.stdout is not None
            box = Sandbox(base / "sandbox", bin_dir, int(fake.stdout.readline()))
            sessions: dict[str, list[dict]] = {}
            timings: dict[str, list[float]] = {"with": [], "without": []}
            hook_ms: list[float] = []
            waited_ms: list[float] = []
            hook_runs: list[int] = []
            fired: list[str] = []
            settings = box.project / (".claude/settings.json" if agent == "claude" else ".codex/hooks.json")
            for i in range(runs * 2 + 1):  # the first (with hooks) warms caches and is not counted
                hooked = i % 2 == 0
                if hooked:
                    box.kg("install-hooks", *(["--codex", "--trust-project"] if agent == "codex" else []))
                else:
                    settings.unlink()
                for path in [*box.memory_dir.glob("*.md"), *box.project.glob("*.py")]:
                    path.unlink()
                marker = f"bench-{agent}-{i}"
                sessions[marker] = steps(box.memory_dir, box.project)
                script.write_text(json.dumps(sessions))
                debug = base / f"debug-{i}.log" if agent == "claude" and hooked else None
                elapsed, output = box.session(agent, f"{marker}: go on", debug)
                if i == 0:
                    continue
                timings["with" if hooked else "without"].append(elapsed)
                if debug is not None:
                    log = debug.read_text()
                    hook_ms.append(sum(int(ms) for ms in _HOOK_MS.findall(log)))
                    waited = _HOOK_WAITED.findall(log)
                    waited_ms.append(sum(int(ms) for _, ms in waited))
                    fired = [event for event, _ in waited]
                    hook_runs.append(len(_HOOK_RUN.findall(log)))
                elif hooked:
                    fired = _CODEX_HOOK.findall(output)
                    hook_runs.append(len(fired))
            starts, payloads = python_starts(box, agent, script, sessions)
            if agent == "codex" and "SessionEnd" not in fired and any(
                    p.get("hook_event_name") == "SessionEnd" for p in payloads):
                fired.append("SessionEnd")  # it runs (traced) after `codex exec` stopped printing
            installed = {event: groups[0]["hooks"][0]["command"]
                         for event, groups in json.loads(settings.read_text())["hooks"].items()}
            replay_ms, replay_cpu_ms = replayed_ms(box, installed, fired, payloads)
            # as before the gates (ADR 0010): every fired event starts kgbridge-hook and is waited on
            ungated_ms, ungated_cpu_ms = replayed_ms(box, dict.fromkeys(installed, installed["SessionStart"]), fired,
                                                     payloads)
            if agent == "codex":  # Codex logs no hook times: the replay is the figure
                waited_ms = [replay_ms]
        finally:
            fake.terminate()
            fake.wait(10)
    with_ms, without_ms = (statistics.median(timings[k]) * 1000 for k in ("with", "without"))
    return {"with_ms": with_ms, "without_ms": without_ms, "added_ms": with_ms - without_ms,
            "hook_ms_logged": statistics.median(hook_ms) if hook_ms else float("nan"),
            "waited_ms": statistics.median(waited_ms) if waited_ms else float("nan"), "waited_cpu_ms": replay_cpu_ms,
            "ungated_ms": ungated_ms, "ungated_cpu_ms": ungated_cpu_ms,
            "hook_runs": statistics.median(hook_runs) if hook_runs else float("nan"), "starts": starts}


def python_starts(box: Sandbox, agent: str, script: Path, sessions: dict[str, list[dict]]) -> tuple[str, list[dict]]:
    """One more session (not timed) through a tracing kgbridge-hook: Python starts per event, and
    the payloads. The hooks are installed as before afterwards."""
    plain_path = box.env["PATH"]
    log = box.trace_hook_starts()
    box.kg("install-hooks", *(["--codex", "--trust-project"] if agent == "codex" else []))
    for path in [*box.memory_dir.glob("*.md"), *box.project.glob("*.py")]:
        path.unlink()
    sessions[f"bench-{agent}-traced"] = steps(box.memory_dir, box.project)
    script.write_text(json.dumps(sessions))
    box.session(agent, f"bench-{agent}-traced: go on", None)
    time.sleep(2)  # background hooks finish
    payloads = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    box.env["PATH"] = plain_path
    box.kg("install-hooks", *(["--codex", "--trust-project"] if agent == "codex" else []))
    events = [p.get("hook_event_name", "?") for p in payloads]
    return ", ".join(f"{e} {events.count(e)}" for e in dict.fromkeys(events)) or "none", payloads


def replayed_ms(box: Sandbox, commands: dict[str, str], fired: list[str], payloads: list[dict],
                runs: int = 5) -> tuple[float, float]:
    """The time a session's waited-on hook runs (`fired`, in order) keep the agent waiting: each
    installed command run with `sh -c` on a real payload of its event (a PreToolUse no gate let
    through: the PostToolUse one renamed), median of `runs`, summed; and the CPU time of those
    processes (what load does not inflate; what they leave in the background is not counted)."""
    memory = [p for p in payloads if p.get("hook_event_name") == "PostToolUse"]
    total, cpu, used = 0.0, 0.0, 0
    for event in (e for e in fired if e in commands):
        if event == "PostToolUse":
            payload = json.dumps(memory[used]) if used < len(memory) else json.dumps(memory[0]).replace(".md", ".py")
            used += 1
        else:
            seen = next((p for p in payloads if p.get("hook_event_name") == event), None)
            payload = json.dumps(seen or {**(memory or payloads)[0], "hook_event_name": event})
        times, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(["sh", "-c", commands[event]], input=payload, text=True, env=box.env, cwd=box.project,
                           capture_output=True, check=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            time.sleep(0.3)  # let what it started in the background settle
        total += statistics.median(times)
        cpu += statistics.median(cpus)
    return total * 1000, cpu * 1000


def interpreter_ms(runs: int = 15) -> float:
    """Median `python -c pass`: the floor of one hook process on this machine, right now."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="sessions each way per agent")
    parser.add_argument("--agent", choices=("claude", "codex", "both"), default="both")
    args = parser.parse_args()
    installed = subprocess.run(["bash", str(REPO / "scripts" / "agents.sh")], capture_output=True, text=True)
    if installed.returncode != 0:
        raise SystemExit(f"agent binaries unavailable: {installed.stderr.strip()}")
    bin_dir = Path(installed.stdout.strip().splitlines()[-1])
    for package in ("kgbridge", "ontology", "projection"):
        compileall.compile_dir(REPO / package, quiet=1)
    print(f"| agent | sessions each way | median without hooks | median with hooks | added per session | "
          f"agent waited on hooks | CPU of those hooks | the same ungated (wall / CPU) | "
          f"hook time the agent logged | hook runs per session | Python started for | "
          f"`python -c pass` now |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for agent in (("claude", "codex") if args.agent == "both" else (args.agent,)):
        r = measure(agent, bin_dir, args.runs)
        logged = "n/a" if r["hook_ms_logged"] != r["hook_ms_logged"] else f"{r['hook_ms_logged']:.0f} ms"
        print(f"| {agent} | {args.runs} | {r['without_ms']:.0f} ms | {r['with_ms']:.0f} ms | "
              f"{r['added_ms']:+.0f} ms | {r['waited_ms']:.0f} ms | {r['waited_cpu_ms']:.0f} ms | "
              f"{r['ungated_ms']:.0f} / {r['ungated_cpu_ms']:.0f} ms | {logged} | {r['hook_runs']:.0f} | {r['starts']} | "
              f"{interpreter_ms():.0f} ms |", flush=True)


if __name__ == "__main__":
    main()

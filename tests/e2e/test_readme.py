"""The README's "Try it" shell block, run as written against the real service process (`make serve`'s default).

A new user pastes these lines one by one. The test splits the block into the same commands, runs them in one bash
(so ``KEY`` and ``ID`` carry over), with ``curl`` failing on any 4xx or 5xx, and reads each command's answer. The
README's opening quote is checked against what the recall in that block really answers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers.feltsense import FeltsenseService, module_service

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
MARK = "@@@feltsense-readme-command "


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def try_it_block() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", section("Try it"), flags=re.DOTALL)
    found: list[str] = [block for block in blocks if "KEY=$(cat data/dev-key)" in block]
    assert found, "the README's Try it has no shell block that reads data/dev-key"
    return found[0]


def commands(block: str) -> list[str]:
    """One entry per command as a user would paste it: a line starts a command unless a quote is still open."""
    out: list[str] = []
    for line in block.splitlines():
        if not line.strip() or (line.lstrip().startswith("#") and (not out or out[-1].count("'") % 2 == 0)):
            continue
        if out and out[-1].count("'") % 2 == 1:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeltsenseService]:
    yield from module_service(tmp_path_factory, "readme")


@pytest.fixture(scope="module")
def answers(service: FeltsenseService) -> dict[str, Any]:
    """Each command of the block (with the README's port replaced by the test service's) and its parsed answer."""
    if shutil.which("curl") is None:
        pytest.fail("the README's examples use curl; install it (Debian: apt-get install -y curl)")
    steps = commands(try_it_block())
    script = ["set -euo pipefail", 'curl() { command curl --fail-with-body "$@"; }']
    for n, step in enumerate(steps):
        script += [f"echo '{MARK}{n}'", step.replace("localhost:8000", f"127.0.0.1:{service.port}")]
    # The README's paths are relative to the repository; the service's data directory stands in for ./data.
    ran = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True,
                         cwd=service.data_dir.parent, timeout=300)
    outputs = ran.stdout.split(MARK)[1:]
    if ran.returncode != 0:
        failed = steps[len(outputs) - 1] if outputs else "(before the first command)"
        pytest.fail(f"README command failed ({ran.returncode}):\n{failed}\n{outputs[-1] if outputs else ''}"
                    f"\n{ran.stderr}")
    assert len(outputs) == len(steps)
    parsed: dict[str, Any] = {}
    for step, output in zip(steps, outputs, strict=True):
        body = output.split("\n", 1)[1].strip()
        parsed[step] = json.loads(body) if body else None
    return parsed


def pick(answers: dict[str, Any], pattern: str) -> Any:
    """The answer of the one README command that matches this regular expression."""
    found = [out for step, out in answers.items() if re.search(pattern, step)]
    assert len(found) == 1, f"expected one README command matching {pattern!r}, found {len(found)}"
    return found[0]


def opening_quote() -> str:
    text = README.read_text(encoding="utf-8")
    head = text[:text.index("\n## ")]
    return " ".join(line[2:].strip() for line in head.splitlines() if line.startswith("> "))


def test_try_it_stores_the_luna_session_closes_it_and_recalls_it_with_the_grief_rule(answers: dict[str, Any]) -> None:
    stored = pick(answers, r"-d '\{\"turns\"")
    assert stored["stored"] == 3 and stored["memories"] >= 1
    closed = pick(answers, r"/v1/sessions/s1/close")
    assert closed["status"] == "complete" and closed["traces_pending"] == 0, closed
    recalled = pick(answers, r"/v1/recall ")
    assert recalled["memories"], recalled
    assert any("Luna" in m["text"] for m in recalled["memories"])
    # The README opens with this rule "as served": it is what the block's recall puts in the system message, with
    # the intensity it names.
    assert opening_quote() and opening_quote() in recalled["context"]["system"]
    intensity = re.search(r"\*grief, intensity (\d\.\d\d)\*", README.read_text(encoding="utf-8"))
    assert intensity, "the README's opening names the rule's intensity"
    rules = [r for r in recalled["tone_constraints"] + recalled["standing_rules"] if r["register"] == "grief"]
    assert [f"{r['intensity']:.2f}" for r in rules] == [intensity.group(1)]


def test_try_it_lists_searches_reads_and_erases_a_memory(service: FeltsenseService, answers: dict[str, Any]) -> None:
    listed = pick(answers, r"/v1/memories\?character_id=ava&user_id=tester-1\" ")
    assert {item["memory"]["text"] for item in listed["items"]} >= {
        "My dog Luna died last week.", "Luna and I walked in the park every single morning."}
    searched = pick(answers, r"^curl .*q=walk in the park")
    top = searched["items"][0]
    assert top["memory"]["text"] == "Luna and I walked in the park every single morning."
    assert top["state"]["status"] == "active" and top["faded"] is False and 0 < top["relevance"] <= 1
    read = pick(answers, r"^curl -s \"localhost:8000/v1/memories/\$MEMORY_ID")
    assert read["memory"]["memory_id"] == top["memory"]["memory_id"]
    receipt = pick(answers, r"-X DELETE")
    assert receipt["memories"] == [top["memory"]["memory_id"]] and receipt["turns"] == 1
    # Erased: the id is gone for good, and the search no longer finds those words.
    gone = httpx.get(f"{service.url}/v1/memories/{top['memory']['memory_id']}", headers=service.headers(),
                     params={"character_id": "ava", "user_id": "tester-1"})
    assert gone.status_code == 404
    again = httpx.get(f"{service.url}/v1/memories", headers=service.headers(),
                      params={"character_id": "ava", "user_id": "tester-1", "q": "walk in the park"}).json()
    assert "Luna and I walked in the park every single morning." not in {i["memory"]["text"] for i in again["items"]}


def test_try_it_recall_is_the_compact_answer_a_runtime_reads(answers: dict[str, Any]) -> None:
    recalled = pick(answers, r"/v1/recall ")
    assert recalled["trace"]["mode"] == "hybrid"
    for memory in recalled["memories"]:
        assert memory["tier"] in {"high", "standard", "low"} and "components" not in memory and "legs" not in memory
    floats = re.findall(r"\d+\.(\d+)", json.dumps(recalled["memories"]))
    assert all(len(decimals) <= 4 for decimals in floats)


def test_the_metrics_example_shows_the_try_it_requests(service: FeltsenseService, answers: dict[str, Any]) -> None:
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", section("Metrics and traces"), flags=re.DOTALL)
               if "/metrics" in b]
    command = block.strip().replace("localhost:8000", f"127.0.0.1:{service.port}")
    ran = subprocess.run(["bash", "-c", f"set -euo pipefail\n{command}"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    shown = dict(line.rsplit(" ", 1) for line in ran.stdout.strip().splitlines())
    assert float(shown['feltsense_recall_seconds_count{mode="hybrid"}']) >= 1
    assert float(shown['feltsense_turns_ingested_total{outcome="stored"}']) >= 3  # the block's three turns
    assert float(shown['feltsense_store_memories{backend="embedded"}']) >= 1


def test_the_export_and_import_example_runs_as_written(service: FeltsenseService, answers: dict[str, Any]) -> None:
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", section("Export and import"), flags=re.DOTALL)
               if "/export" in b]
    feltsense = str(Path(sys.executable).with_name("feltsense"))
    script = block.replace("localhost:8000", f"127.0.0.1:{service.port}").replace(".venv/bin/feltsense", feltsense)
    ran = subprocess.run(["bash", "-c", f"set -euo pipefail\n{script}"], capture_output=True, text=True,
                         cwd=service.data_dir.parent, timeout=300)
    assert ran.returncode == 0, ran.stderr
    exported = json.loads((service.data_dir.parent / "tester-1.json").read_text())
    assert exported["format"] == "feltsense.export" and exported["turns"], exported
    header, first, report = ran.stdout.strip().splitlines()[-3:]
    assert json.loads(header)["kind"] == "header" and json.loads(first)["kind"] == "session"
    assert json.loads(report)["added"]["memories"] == len(exported["memories"])

"""The JavaScript client (clients/js) agrees with the contract registry without a server: its generated types
and operation table are what `npm run generate` makes from the current contracts/mnemo.schema.json, every
event's Nats-Msg-Id is the one the registry's rule gives (the Python client's), and its own unit tests (the
outbox on an in-memory JetStream) pass. Needs node and clients/js/node_modules (`make install` runs npm ci)."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime

import pytest

from mnemo.runtime.contract_artifacts import ROOT
from mnemo.shared.contract_registry import OPERATIONS, nats_msg_id
from mnemo_client.wire.keyed import keyed_subject, subject_token

PACKAGE = ROOT / "clients" / "js"
NODE = shutil.which("node") or ""
if not NODE:  # CI installs Node 20 (the Makefile's install step); say so rather than pass
    pytest.skip("the JavaScript client's tests need node on PATH (Node 20+)", allow_module_level=True)


def node(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    assert (PACKAGE / "node_modules").is_dir(), "clients/js has no node_modules: run `make install` (npm ci)"
    return subprocess.run(
        [NODE, *argv], cwd=PACKAGE, input=stdin, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_generated_types_match_the_contract() -> None:
    done = node("scripts/generate.mjs", "--check")
    assert done.returncode == 0, f"{done.stderr}\nrun `npm run generate` in clients/js (or `make docs`)"
    declared = (PACKAGE / "src" / "contract.d.ts").read_text()
    for model in json.loads((ROOT / "contracts" / "mnemo.schema.json").read_text())["$defs"]:
        assert f"export interface {model} " in declared or f"export type {model} " in declared, model


# Each event's example, as JSON and with its date-time fields as JavaScript Dates: both must give the id the
# registry's rule gives for the body the Python client sends (pydantic's JSON of the validated model).
PARITY = """
import { natsMsgId } from "@mnemo/client";
const cases = JSON.parse(await new Response(process.stdin).text());
const out = cases.map(([name, body, dates]) => {
  const withDates = { ...body };
  for (const field of dates) withDates[field] = new Date(body[field]);
  return [natsMsgId(name, body), natsMsgId(name, withDates)];
});
console.log(JSON.stringify(out));
"""


def test_every_event_gets_the_registrys_nats_msg_id() -> None:
    events = [op for op in OPERATIONS if op.kind == "event"]
    cases, expected = [], []
    for op in events:
        model = op.payload.model_validate(op.example)
        body = model.model_dump(mode="json", exclude_none=True)
        dates = [f for f, v in model if isinstance(v, datetime) and f in body]
        cases.append([op.name, body, dates])
        expected.append(nats_msg_id(op, model.model_dump(mode="json")))
    assert any(set(op.msg_id) & set(dates) for op, (_, _, dates) in zip(events, cases, strict=True))
    done = node("--input-type=module", "-e", PARITY, stdin=json.dumps(cases))
    assert done.returncode == 0, done.stderr
    for op, want, (as_json, with_dates) in zip(events, expected, json.loads(done.stdout), strict=True):
        assert as_json == want, op.name
        assert with_dates == want, f"{op.name}: a Date must serialise as pydantic does"


def test_the_js_unit_tests_pass() -> None:
    done = node("--test", "test/unit/")
    assert done.returncode == 0, done.stdout + done.stderr


TOKENS = """
import { keyedSubject, subjectToken, OPERATIONS } from "@mnemo/client";
const [values, body] = JSON.parse(await new Response(process.stdin).text());
const subject = keyedSubject(OPERATIONS["chat.message.created"].keyedSubject, body);
console.log(JSON.stringify([values.map(subjectToken), subject]));
"""


def test_subject_tokens_and_keyed_subjects_are_the_python_clients() -> None:
    # A conversation must reach the same ingest partition whichever client published it: same tokens, byte for byte.
    values = ["conv-42_a", "a.b", "x y*>", "%", "é", "日本語", "tab\there", "~!'()"]
    op = next(op for op in OPERATIONS if op.name == "chat.message.created")
    body = {**op.example, "tenant_id": "t.1", "conversation_id": "c é"}
    done = node("--input-type=module", "-e", TOKENS, stdin=json.dumps([values, body]))
    assert done.returncode == 0, done.stderr
    tokens, subject = json.loads(done.stdout)
    assert tokens == [subject_token(v) for v in values]
    assert subject == keyed_subject(op.keyed_subject, body)

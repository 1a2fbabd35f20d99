// The client's request-reply on an in-memory connection fake (no server): replies come back as sent,
// an ErrorReply rejects with the MnemoError of its code, no responder and no reply in time with Unavailable.
import assert from "node:assert/strict";
import { test } from "node:test";
import { errors } from "@nats-io/nats-core";
import { BadRequest, Internal, MnemoClient, MnemoError, NotFound, OPERATIONS, Unavailable } from "@mnemo/client";

/** Answers each subject with `answers[subject]` (an object to send, or an Error to throw); records requests. */
function fakeConnection(answers) {
  const sent = [];
  return {
    sent,
    isClosed: () => false,
    async request(subject, data) {
      sent.push([subject, JSON.parse(new TextDecoder().decode(data))]);
      const answer = answers[subject];
      if (answer instanceof Error) throw answer;
      return { data: new TextEncoder().encode(JSON.stringify(answer)) };
    },
  };
}

const client = (answers) => {
  const nc = fakeConnection(answers);
  return [new MnemoClient(nc, { jetstream: {} }), nc];
};

test("a request goes to its operation's subject and its reply comes back", async () => {
  const reply = { books: [], total: 0, offset: 0, limit: 100 };
  const [mnemo, nc] = client({ "mnemo.rpc.lore.list.v1": reply });
  assert.deepEqual(await mnemo.loreList({ tenant_id: "t1", bot_id: "maren" }), reply);
  assert.deepEqual(nc.sent, [["mnemo.rpc.lore.list.v1", { tenant_id: "t1", bot_id: "maren" }]]);
});

test("every request method reaches its own operation", async () => {
  const answers = Object.fromEntries(Object.values(OPERATIONS).map((op) => [op.subject, { ok: op.subject }]));
  const [mnemo] = client(answers);
  const methods = {
    context: "context.assemble", loreImport: "lore.import", loreExport: "lore.export", loreList: "lore.list",
    loreAttach: "lore.attach", loreDetach: "lore.detach", loreBookCreate: "lore.book.create",
    loreBookDelete: "lore.book.delete", loreBookRename: "lore.book.rename", loreEntryCreate: "lore.entry.create", loreEntryUpdate: "lore.entry.update",
    loreEntryDelete: "lore.entry.delete", memoriesList: "memory.list", memoryConvertToLore: "memory.convert_to_lore",
    memoryDelete: "memory.delete", memoryEdit: "memory.edit", knowledgePromote: "memory.promote", knowledgeUnpromote: "memory.unpromote",
    documentImport: "lore.document.import", documentGet: "lore.document.get", documentList: "lore.document.list",
    documentDelete: "lore.document.delete", eraseUser: "privacy.erase_user", eraseTenant: "privacy.erase_tenant",
    exportUser: "privacy.export_user", conversationList: "conversation.list",
    conversationTimeline: "conversation.timeline", usage: "ops.usage", knowledgeFactList: "knowledge.fact.list",
    knowledgeFactAdd: "knowledge.fact.add", knowledgeFactEdit: "knowledge.fact.edit",
    knowledgeFactRetract: "knowledge.fact.retract", knowledgeFactHistory: "knowledge.fact.history",
    conversationTimeline: "conversation.timeline", usage: "ops.usage", remember: "memory.remember", searchMemories: "memory.search",
    updateMemory: "memory.update", forgetMemory: "memory.forget", memoryHistory: "memory.history",
    engineRemember: "memory.engine.remember", engineUpdateMemory: "memory.engine.update",
    engineForgetMemory: "memory.engine.forget", engineMemoryHistory: "memory.engine.history",
    loreTestActivation: "lore.test_activation", memoryIndexStatus: "memory.index_status", chatImport: "chat.import",
  };
  for (const [method, name] of Object.entries(methods)) {
    assert.deepEqual(await mnemo[method]({ tenant_id: "t1" }), { ok: OPERATIONS[name].subject }, method);
  }
  const requests = Object.keys(OPERATIONS).filter((name) => OPERATIONS[name].kind === "request");
  assert.deepEqual(new Set(Object.values(methods)), new Set(requests), "a method for every request operation");
});

test("an ErrorReply rejects with the exception of its code", async () => {
  const [mnemo] = client({
    "mnemo.rpc.lore.export.v1": { error: { code: "not_found", message: "no book 'x'" } },
    "mnemo.rpc.lore.import.v1": { error: { code: "bad_request", message: "not a book" } },
    "mnemo.rpc.memory.list.v1": { error: { code: "internal", message: "boom" } },
    "mnemo.rpc.context.assemble.v1": { error: { code: "rate_limited", message: "slow down" } },
  });
  const rejects = (promise, Kind, code, detail) =>
    assert.rejects(promise, (err) => err instanceof Kind && err.code === code && err.detail === detail && err.subject !== "");
  await rejects(mnemo.loreExport({ tenant_id: "t1", lorebook_id: "x" }), NotFound, "not_found", "no book 'x'");
  await rejects(mnemo.loreImport({ tenant_id: "t1" }), BadRequest, "bad_request", "not a book");
  await rejects(mnemo.memoriesList({ tenant_id: "t1", user_id: "u1" }), Internal, "internal", "boom");
  await assert.rejects(mnemo.context({ tenant_id: "t1" }), (err) => err.constructor === MnemoError && err.code === "rate_limited");
});

test("no responder or no reply in time rejects with Unavailable", async () => {
  const [mnemo] = client({
    "mnemo.rpc.lore.list.v1": new errors.RequestError("no responders", { cause: new errors.NoRespondersError("s") }),
    "mnemo.rpc.lore.export.v1": new errors.TimeoutError(),
    "mnemo.rpc.lore.attach.v1": new errors.ClosedConnectionError(),
  });
  await assert.rejects(mnemo.loreList({ tenant_id: "t1" }), (err) => err instanceof Unavailable && err.code === "unavailable");
  await assert.rejects(mnemo.loreExport({ tenant_id: "t1" }), (err) => err instanceof Unavailable && /no reply/.test(err.message));
  await assert.rejects(mnemo.loreAttach({ tenant_id: "t1" }), errors.ClosedConnectionError);
  await assert.rejects(mnemo.request("no.such.operation", {}), TypeError);
});

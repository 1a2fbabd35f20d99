// The JavaScript client against a running stack (tests/e2e/test_js_client.py starts one and runs this):
// chat events published and buffered, a typed context, lore import / list / attach / entries / export,
// memories listed, converted and deleted, knowledge promotion, error codes as exceptions, and the same
// client over the stack's NATS WebSocket listener. MNEMO_NATS_URL, MNEMO_NATS_WS_URL say where.
import assert from "node:assert/strict";
import { BadRequest, MnemoClient, NotFound } from "@mnemo/client";
import { browserBundle } from "./browser-bundle.mjs";

const TENANT = `t-js-${Date.now()}`; // a tenant of its own: the script may run again on the same stack
const USER = "u-1";
const CONV = "c-1";
const BOT = "maren";
const LINES = [
  "We reached the lighthouse at dusk and the keeper let us in.",
  "He showed us a chart of the northern reefs, drawn by his mother.",
  "The chart marks a wreck nobody has found in sixty years.",
  "I promised to bring the chart back after we copy it.",
  "The keeper asked us to keep the wreck a secret from the harbour master.",
  "We left before midnight with the copy rolled in oilcloth.",
];
const BOOK = { entries: { 0: { uid: 0, key: ["lighthouse"], content: "The lighthouse keeper is a retired smuggler.", order: 100, position: 0 } } };

const line = (i, conversation = CONV) => ({
  tenant_id: TENANT,
  user_id: USER,
  conversation_id: conversation,
  message_id: `m-${i}`,
  role: i % 2 === 0 ? "user" : "assistant",
  content: LINES[i % LINES.length],
  created_at: new Date(Date.UTC(2026, 9, 1, 20, i)),
  bot_ids: [BOT],
});

/** Polls `condition` twice a second until it returns a truthy value (the stack works asynchronously). */
async function waitFor(condition, what, timeoutMs = Number(process.env.MNEMO_WAIT_MS ?? 240_000)) {
  const deadline = Date.now() + timeoutMs;
  const last = {};
  for (;;) {
    const value = await condition(last);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last.reply)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function rejectsWith(promise, Kind, code) {
  await assert.rejects(promise, (err) => err instanceof Kind && err.code === code && typeof err.detail === "string");
}

// A `--secure` stack: the platform's user, its own inbox prefix (the only one it may subscribe to); the CA
// comes from NODE_EXTRA_CA_CERTS.
const user = process.env.MNEMO_NATS_USER;
const auth = user ? { user, pass: process.env.MNEMO_NATS_PASSWORD, inboxPrefix: `_INBOX.${user}` } : {};
const mnemo = await MnemoClient.connect(process.env.MNEMO_NATS_URL, auth);
try {
  await mnemo.publish("chat.bot.upserted", { tenant_id: TENANT, bot_id: BOT, name: "Maren", updated_at: new Date(Date.UTC(2026, 9, 1)) });
  for (let i = 0; i < 3; i++) {
    const ack = await mnemo.publish("chat.message.created", line(i));
    assert.equal(ack.stream, "MNEMO_CHAT");
  }
  const again = await mnemo.publish("chat.message.created", line(0)); // the same Nats-Msg-Id: JetStream drops it
  assert.equal(again.duplicate, true);
  for (let i = 3; i < 12; i++) mnemo.submit("chat.message.created", line(i)); // buffered, sent in order
  await mnemo.flush();
  assert.equal(mnemo.buffered, 0);

  const book = await mnemo.loreImport({ tenant_id: TENANT, owner_user_id: USER, name: "Coast", data: BOOK });
  assert.equal(book.entries, 1);
  const attached = await mnemo.loreAttach({ tenant_id: TENANT, lorebook_id: book.lorebook_id, bot_ids: [BOT] });
  assert.deepEqual(attached.bot_ids, [BOT]);
  const listed = await mnemo.loreList({ tenant_id: TENANT, bot_id: BOT });
  assert.deepEqual(listed.books.map((b) => b.lorebook_id), [book.lorebook_id]);

  const context = await waitFor(async (last) => {
    const reply = (last.reply = await mnemo.context({ tenant_id: TENANT, user_id: USER, conversation_id: CONV, bot_id: BOT, user_message: "Tell me about the lighthouse." }));
    return reply.context.includes(LINES[11 % LINES.length]) && reply.context.includes("retired smuggler") && reply;
  }, "the scene and the lore entry in the context");
  assert.ok(context.sections.some((s) => s.name === "history" && typeof s.tokens === "number"));
  assert.ok(context.sources.some((s) => s.kind === "lore" && s.detail?.includes("lighthouse")));
  assert.equal(context.messages[0].role, "system");
  assert.ok(Array.isArray(context.degraded));

  const created = await mnemo.loreEntryCreate({ tenant_id: TENANT, user_id: USER, lorebook_id: book.lorebook_id, entry: { key: ["wreck"], content: "The wreck is the Meridian." } });
  const updated = await mnemo.loreEntryUpdate({ tenant_id: TENANT, user_id: USER, lorebook_id: book.lorebook_id, uid: created.uid, changes: { content: "The wreck is the Aurora." } });
  assert.ok(updated.changed);
  const exported = await mnemo.loreExport({ tenant_id: TENANT, lorebook_id: book.lorebook_id });
  assert.deepEqual(new Set(Object.values(exported.data.entries).map((e) => e.content)), new Set([BOOK.entries[0].content, "The wreck is the Aurora."]));
  const deleted = await mnemo.loreEntryDelete({ tenant_id: TENANT, user_id: USER, lorebook_id: book.lorebook_id, uid: created.uid });
  assert.ok(deleted.deleted);

  await rejectsWith(mnemo.loreExport({ tenant_id: TENANT, lorebook_id: "no-such-book" }), NotFound, "not_found");
  await rejectsWith(mnemo.loreImport({ tenant_id: TENANT, owner_user_id: USER, name: "Junk", data_base64: "bm90IGEgYm9vaw==" }), BadRequest, "bad_request");
  await rejectsWith(mnemo.request("lore.attach", { tenant_id: TENANT }), BadRequest, "bad_request");
  await rejectsWith(mnemo.knowledgePromote({ tenant_id: TENANT, user_id: USER, fact_id: "no-such-fact", campaign_id: "kestrel" }), NotFound, "not_found");
  await rejectsWith(mnemo.knowledgeUnpromote({ tenant_id: TENANT, user_id: USER, fact_id: "no-such-fact" }), NotFound, "not_found");

  const listing = await waitFor(async (last) => {
    const reply = (last.reply = await mnemo.memoriesList({ tenant_id: TENANT, user_id: USER, source: "memory" }));
    return reply.items.some((item) => item.source === "memory") && reply;
  }, "a summary of the scene");
  const memory = listing.items.find((item) => item.source === "memory");
  // An extractive summary (no LLM here) names the scene's messages it quotes, a subset of those it covers.
  assert.ok(memory.message_ids.length > 0 && memory.message_ids.every((id) => /^m-\d+$/.test(id)));
  const converted = await mnemo.memoryConvertToLore({ tenant_id: TENANT, user_id: USER, memory_id: memory.id, applies_to_bots: [BOT] });
  assert.ok(converted.created);
  const gone = await mnemo.memoryDelete({ tenant_id: TENANT, user_id: USER, memory_id: memory.id });
  assert.ok(gone.deleted);
  assert.deepEqual(gone.legacy_ids, [converted.legacy_id]);
} finally {
  await mnemo.close();
}

// The same client over WebSocket, bundled as a browser or an edge runtime gets it (no Node transport inside).
const { outfile } = await browserBundle();
const browser = await import(outfile);
const ws = await browser.MnemoClient.connectWs(process.env.MNEMO_NATS_WS_URL, auth);
try {
  for (let i = 0; i < 4; i++) ws.submit("chat.message.created", line(i, "c-ws"));
  await ws.flush();
  const context = await waitFor(async (last) => {
    const reply = (last.reply = await ws.context({ tenant_id: TENANT, user_id: USER, conversation_id: "c-ws", bot_id: BOT }));
    return reply.context.includes(LINES[3]) && reply;
  }, "the WebSocket scene in the context");
  assert.ok(context.sections.some((s) => s.name === "history"));
  await rejectsWith(ws.memoryDelete({ tenant_id: TENANT, user_id: USER, memory_id: "no-such-memory" }), browser.NotFound, "not_found");
} finally {
  await ws.close();
}
console.log("js client e2e: ok");

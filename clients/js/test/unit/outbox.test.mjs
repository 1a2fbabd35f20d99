// The outbox and the client's event handling on an in-memory JetStream fake (no server): order, retries,
// the bounded buffer, refusals, and the Nats-Msg-Id each publish carries.
import assert from "node:assert/strict";
import { test } from "node:test";
import { errors } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import { BufferFull, MnemoClient, natsMsgId, Unavailable } from "@mnemo/client";
import { Outbox } from "../../src/outbox.js";

/** Fails the first `failures` publishes of each msg id with `error()`, then acknowledges. */
class FakeJetStream {
  constructor({ failures = 0, error = () => new errors.TimeoutError(), refuse = new Set() } = {}) {
    Object.assign(this, { failures, error, refuse, acked: [], attempts: new Map() });
  }
  async publish(subject, body, { headers }) {
    const id = headers.get("Nats-Msg-Id");
    const attempt = (this.attempts.get(id) ?? 0) + 1;
    this.attempts.set(id, attempt);
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (this.refuse.has(id)) throw new JetStreamApiError({ code: 400, err_code: 10054, description: "refused" });
    if (attempt <= this.failures) throw this.error();
    this.acked.push({ subject, id, body: JSON.parse(new TextDecoder().decode(body)) });
    return { stream: "MNEMO_CHAT", seq: this.acked.length, duplicate: false };
  }
}

const item = (i) => ({ subject: "mnemo.chat.message.created.v1", body: new TextEncoder().encode(`{"i":${i}}`), msgId: `m:${i}` });

test("submitted events are published in order, each retried until acknowledged", async () => {
  const js = new FakeJetStream({ failures: 2 });
  const outbox = new Outbox(js, { backoffMax: 5 });
  for (let i = 0; i < 5; i++) outbox.submit(item(i));
  assert.equal(outbox.buffered, 5);
  await outbox.flush();
  assert.equal(outbox.buffered, 0);
  assert.deepEqual(js.acked.map((a) => a.id), ["m:0", "m:1", "m:2", "m:3", "m:4"]);
  assert.ok([...js.attempts.values()].every((n) => n === 3));
});

test("the buffer is bounded: BufferFull carries the unavailable code", () => {
  const outbox = new Outbox(new FakeJetStream({ failures: 1e9 }), { bufferSize: 2 });
  outbox.submit(item(0));
  outbox.submit(item(1));
  assert.throws(() => outbox.submit(item(2)), (err) => err instanceof BufferFull && err.code === "unavailable");
  outbox.close();
});

test("publish gives up with Unavailable after giveUpAfter; a refusal is not retried", async () => {
  const outbox = new Outbox(new FakeJetStream({ failures: 1e9 }), { backoffMax: 5 });
  await assert.rejects(outbox.publish(item(0), { giveUpAfter: 50 }), (err) => err instanceof Unavailable);
  const js = new FakeJetStream({ refuse: new Set(["m:1"]) });
  const refusing = new Outbox(js);
  await assert.rejects(refusing.publish(item(1)), JetStreamApiError);
  assert.equal(js.attempts.get("m:1"), 1);
});

test("a refused submitted event is reported and dropped; the rest still go", async () => {
  const dropped = [];
  const js = new FakeJetStream({ refuse: new Set(["m:1"]) });
  const outbox = new Outbox(js, { onDropped: (event, err) => dropped.push([event.msgId, err.status]) });
  for (let i = 0; i < 3; i++) outbox.submit(item(i));
  await outbox.flush();
  assert.deepEqual(dropped, [["m:1", 400]]);
  assert.deepEqual(js.acked.map((a) => a.id), ["m:0", "m:2"]);
});

test("JetStream's 503 is retried", async () => {
  const unavailable = () => new JetStreamApiError({ code: 503, err_code: 10008, description: "jetstream unavailable" });
  const js = new FakeJetStream({ failures: 1, error: unavailable });
  const ack = await new Outbox(js, { backoffMax: 5 }).publish(item(0));
  assert.equal(ack.seq, 1);
  assert.equal(js.attempts.get("m:0"), 2);
});

test("the client sends the event's JSON with the contract's Nats-Msg-Id; Dates as pydantic writes them", async () => {
  const js = new FakeJetStream();
  const client = new MnemoClient({ isClosed: () => false }, { jetstream: js });
  const event = {
    tenant_id: "t1",
    user_id: "u1",
    conversation_id: "c1",
    message_id: "m1",
    content: "edited",
    edited_at: new Date(Date.UTC(2026, 10, 1, 18, 5, 0, 120)),
  };
  assert.equal(natsMsgId("chat.message.edited", event), "chat.message.edited:t1:c1:m1::2026-11-01T18:05:00.120000Z");
  const whole = { ...event, edit_id: "e1", edited_at: new Date(Date.UTC(2026, 10, 1, 18, 5)) };
  await client.publish("chat.message.edited", whole);
  client.submit("chat.message.edited", event);
  await client.flush();
  assert.deepEqual(
    js.acked.map((a) => [a.subject, a.id, a.body.edited_at]),
    [
      ["mnemo.chat.message.edited.v2.t1.c1", "chat.message.edited:t1:c1:m1:e1:2026-11-01T18:05:00Z", "2026-11-01T18:05:00Z"],
      ["mnemo.chat.message.edited.v2.t1.c1", "chat.message.edited:t1:c1:m1::2026-11-01T18:05:00.120000Z", "2026-11-01T18:05:00.120000Z"],
    ],
  );
  assert.throws(() => client.submit("lore.import", {}), TypeError);
  assert.throws(() => client.submit("chat.message.created", "not an object"), TypeError);
  await assert.rejects(client.request("chat.message.created", {}), TypeError);
});

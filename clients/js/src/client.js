// MnemoClient: mnemo's public contract over one NATS connection (the Python client's MnemoClient).
//
// Events (`publish`, `submit`) go to JetStream on their keyed subject (tenant and conversation, bot or persona as
// subject tokens: ingest partitions by them) with the contract's Nats-Msg-Id and are retried until
// acknowledged (outbox.js). Requests go out with NATS request-reply and their JSON replies come back typed
// (src/contract.d.ts); an ErrorReply rejects with the MnemoError of its code, no responder or no answer in time
// with `Unavailable`. The server validates every request (bad input is a `BadRequest` carrying what is wrong).
// The connection is any NatsConnection: `MnemoClient.connect` opens a TCP one (Node), `MnemoClient.connectWs`
// a WebSocket one (browsers, Deno, Bun, Workers-style runtimes; Node 22+ or a `wsFactory`), or pass your own.
import { wsconnect } from "@nats-io/nats-core";
import { errors } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { errorFor, Unavailable } from "./errors.js";
import { OPERATIONS } from "./operations.js";
import { Outbox } from "./outbox.js";

export const DEFAULT_URL = "nats://127.0.0.1:4222";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

// A Date as pydantic writes a UTC datetime ("2026-11-01T18:05:00Z", a fraction only when there is one, in
// microseconds), so an event built with Dates has the same body and Nats-Msg-Id from this client as from Python.
function isoLikePydantic(date) {
  const text = date.toISOString(); // always UTC, milliseconds
  const millis = text.slice(20, 23);
  return millis === "000" ? `${text.slice(0, 19)}Z` : `${text.slice(0, 19)}.${millis}000Z`;
}

function toJson(body) {
  return JSON.stringify(body, function replace(key, value) {
    const raw = this[key];
    return raw instanceof Date ? isoLikePydantic(raw) : value;
  });
}

/** The event's Nats-Msg-Id: its name and the JSON values of its msg_id fields (absent or null as empty), joined by `:`. */
export function natsMsgId(name, body) {
  const op = OPERATIONS[name];
  if (op?.kind !== "event") throw new TypeError(`not a chat event: ${name}`);
  const json = typeof body === "string" ? JSON.parse(body) : JSON.parse(toJson(body));
  return [name, ...op.msgId.map((field) => (json[field] == null ? "" : String(json[field])))].join(":");
}

const KEPT = /^[A-Za-z0-9_-]+$/;

/**
 * A value as one NATS subject token: its UTF-8 bytes, each ASCII letter, digit, `-` and `_` kept, every other byte
 * as `%` and two upper-case hex digits (`a.b` is `a%2Eb`); the same as the Python client's `subject_token`.
 */
export function subjectToken(value) {
  if (KEPT.test(value)) return value;
  let out = "";
  for (const byte of encoder.encode(value)) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && KEPT.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The subject of an event's keyed template (`mnemo.chat.message.created.v2.{tenant_id}.{conversation_id}`). */
export function keyedSubject(template, json) {
  return template.replace(/\{(\w+)\}/g, (_, field) => {
    const value = json[field];
    if (typeof value !== "string" || value === "") throw new TypeError(`the event has no ${field} to put in its subject`);
    return subjectToken(value);
  });
}

function pending(name, body) {
  const op = OPERATIONS[name];
  if (op?.kind !== "event") throw new TypeError(`not a chat event: ${name} (events: ${eventNames().join(", ")})`);
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new TypeError(`${name} takes an object`);
  const text = toJson(body);
  // The keyed subject (v2): NATS maps every event of one conversation to the same ingest partition.
  const subject = op.keyedSubject ? keyedSubject(op.keyedSubject, JSON.parse(text)) : op.subject;
  return { subject, body: encoder.encode(text), msgId: natsMsgId(name, text) };
}

const eventNames = () => Object.keys(OPERATIONS).filter((name) => OPERATIONS[name].kind === "event");

function isNoResponders(err) {
  return (
    err instanceof errors.NoRespondersError ||
    (err instanceof errors.RequestError && err.isNoResponders()) ||
    err?.cause instanceof errors.NoRespondersError
  );
}

export class MnemoClient {
  #nc;
  #timeout;
  #outbox;
  #owns;

  /**
   * `requestTimeout`: ms to wait for a reply; `ackTimeout`: for one JetStream acknowledgement; `bufferSize`:
   * events `submit` may hold before `BufferFull`; `ownsConnection`: `close()` drains the connection too;
   * `jetstream`: the JetStream context to publish with (default: `jetstream(nc)`, e.g. another domain's).
   */
  constructor(nc, options = {}) {
    const { requestTimeout = 30_000, ackTimeout = 5000, bufferSize = 10_000, ownsConnection = false, onDropped } = options;
    this.#nc = nc;
    this.#timeout = requestTimeout;
    const js = options.jetstream ?? jetstream(nc, { timeout: ackTimeout });
    this.#outbox = new Outbox(js, { ackTimeout, bufferSize, onDropped });
    this.#owns = ownsConnection;
  }

  /** Connect over TCP with `@nats-io/transport-node` (reconnecting forever unless `maxReconnectAttempts` says otherwise). */
  static async connect(servers = DEFAULT_URL, options = {}) {
    const { requestTimeout, ackTimeout, bufferSize, onDropped, ...natsOptions } = options;
    // Imported here, by a name bundlers do not follow, so browsers and edge runtimes (no `node:net`) can bundle
    // and use the rest of the package.
    const transport = "@nats-io/transport-node";
    const { connect } = await import(transport);
    const nc = await connect({ servers, maxReconnectAttempts: -1, ...natsOptions });
    return new MnemoClient(nc, { requestTimeout, ackTimeout, bufferSize, onDropped, ownsConnection: true });
  }

  /** Connect over WebSocket (`ws://host:port`): the stack's MNEMO_NATS__WEBSOCKET_PORT listener. */
  static async connectWs(servers, options = {}) {
    const { requestTimeout, ackTimeout, bufferSize, onDropped, ...natsOptions } = options;
    const nc = await wsconnect({ servers, maxReconnectAttempts: -1, ...natsOptions });
    return new MnemoClient(nc, { requestTimeout, ackTimeout, bufferSize, onDropped, ownsConnection: true });
  }

  /** The underlying NatsConnection. */
  get connection() {
    return this.#nc;
  }

  /** Wait up to `flushTimeout` ms for buffered events, then stop (and drain the connection if ours). */
  async close({ flushTimeout = 30_000 } = {}) {
    try {
      if (this.#outbox.buffered) {
        let timer;
        const timeout = new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Unavailable("unavailable", `${this.#outbox.buffered} events not acknowledged in ${flushTimeout}ms`)),
            flushTimeout,
          );
        });
        try {
          await Promise.race([this.#outbox.flush(), timeout]);
        } finally {
          clearTimeout(timer);
        }
      }
    } finally {
      this.#outbox.close();
      if (this.#owns && !this.#nc.isClosed()) await this.#nc.drain();
    }
  }

  async [Symbol.asyncDispose]() {
    await this.close();
  }

  // --- events ---------------------------------------------------------------------------------------------
  /** Publish a chat event and wait for JetStream's acknowledgement, retrying; `Unavailable` after `giveUpAfter` ms. */
  async publish(name, event, { giveUpAfter = 60_000 } = {}) {
    return this.#outbox.publish(pending(name, event), { giveUpAfter });
  }

  /** Buffer the event and return; it is published in order and retried until acknowledged. */
  submit(name, event) {
    this.#outbox.submit(pending(name, event));
  }

  /** Resolves when every submitted event is acknowledged (bound it with a timeout of your own). */
  flush() {
    return this.#outbox.flush();
  }

  /** Submitted events not yet acknowledged. */
  get buffered() {
    return this.#outbox.buffered;
  }

  // --- request-reply -------------------------------------------------------------------------------------
  /** Any request-reply operation by name (`lore.import`), e.g. one newer than this client's methods. */
  async request(name, request = {}) {
    const op = OPERATIONS[name];
    if (op === undefined) throw new TypeError(`no such operation: ${name}`);
    if (op.kind !== "request") throw new TypeError(`${name} is an event: use publish`);
    let msg;
    try {
      msg = await this.#nc.request(op.subject, encoder.encode(toJson(request)), { timeout: this.#timeout });
    } catch (err) {
      if (isNoResponders(err)) {
        throw new Unavailable("unavailable", "no service answers this subject", { subject: op.subject, cause: err });
      }
      if (err instanceof errors.TimeoutError || err?.cause instanceof errors.TimeoutError) {
        throw new Unavailable("unavailable", `no reply within ${this.#timeout}ms`, { subject: op.subject, cause: err });
      }
      throw err;
    }
    const body = JSON.parse(decoder.decode(msg.data));
    const error = body?.error;
    if (error !== null && typeof error === "object" && !Array.isArray(error)) {
      throw errorFor(String(error.code), String(error.message ?? ""), { subject: op.subject });
    }
    return body;
  }

  /** The prompt context for the bot's next reply: `context` (text), `sections`, `sources`, `messages`, `degraded`. */
  context(request) {
    return this.request("context.assemble", request);
  }

  loreImport(request) {
    return this.request("lore.import", request);
  }

  loreExport(request) {
    return this.request("lore.export", request);
  }

  loreList(request) {
    return this.request("lore.list", request);
  }

  loreAttach(request) {
    return this.request("lore.attach", request);
  }

  loreDetach(request) {
    return this.request("lore.detach", request);
  }

  loreBookCreate(request) {
    return this.request("lore.book.create", request);
  }

  /** Rename a book, as its owner (`lore.book.rename`). */
  loreBookRename(request) {
    return this.request("lore.book.rename", request);
  }

  loreBookDelete(request) {
    return this.request("lore.book.delete", request);
  }

  loreEntryCreate(request) {
    return this.request("lore.entry.create", request);
  }

  loreEntryUpdate(request) {
    return this.request("lore.entry.update", request);
  }

  loreEntryDelete(request) {
    return this.request("lore.entry.delete", request);
  }

  /** Which entries a chat text fires and why, as a dry run (`lore.test_activation`). */
  loreTestActivation(request) {
    return this.request("lore.test_activation", request);
  }

  memoriesList(request) {
    return this.request("memory.list", request);
  }

  /** Tokens and vector status of listed items (`memory.index_status`). */
  memoryIndexStatus(request) {
    return this.request("memory.index_status", request);
  }

  memoryConvertToLore(request) {
    return this.request("memory.convert_to_lore", request);
  }

  memoryDelete(request) {
    return this.request("memory.delete", request);
  }

  /** Edit a memory's (a summary's) text: a new version with a new id (`memory.edit`). */
  memoryEdit(request) {
    return this.request("memory.edit", request);
  }

  /** Share one of the user's own facts with a campaign (`memory.promote`). */
  knowledgePromote(request) {
    return this.request("memory.promote", request);
  }

  /** Bring a promoted fact back into the player's scope (`memory.unpromote`). */
  knowledgeUnpromote(request) {
    return this.request("memory.unpromote", request);
  }

  /** Import a document as lore; the import runs on after the reply (`lore.document.import`). */
  documentImport(request) {
    return this.request("lore.document.import", request);
  }

  /** A document's import state (`lore.document.get`). */
  documentGet(request) {
    return this.request("lore.document.get", request);
  }

  /** The tenant's documents (`lore.document.list`). */
  documentList(request) {
    return this.request("lore.document.list", request);
  }

  /** Delete a document, its chunks and stored bytes (`lore.document.delete`). */
  documentDelete(request) {
    return this.request("lore.document.delete", request);
  }

  /** Erase a user by crypto-shredding (`privacy.erase_user`). */
  eraseUser(request) {
    return this.request("privacy.erase_user", request);
  }

  /** Erase a whole tenant (`privacy.erase_tenant`, `confirm: "erase"`). */
  eraseTenant(request) {
    return this.request("privacy.erase_tenant", request);
  }

  /** Everything mnemo holds about a user (`privacy.export_user`). */
  exportUser(request) {
    return this.request("privacy.export_user", request);
  }

  /** The tenant's (or one user's) conversations, latest first (`conversation.list`). */
  conversationList(request) {
    return this.request("conversation.list", request);
  }

  /** A conversation's messages with presence, summaries, facts, swipes and forks (`conversation.timeline`). */
  conversationTimeline(request) {
    return this.request("conversation.timeline", request);
  }

  /** One exported chat file published as chat events, once (`chat.import`); the reply waits for every
   *  event's acknowledgement: give a large file a longer `requestTimeout`. */
  chatImport(request) {
    return this.request("chat.import", request);
  }

  /** Per-tenant usage, for operators (`ops.usage`: the `admin` NATS user on a secured deployment). */
  usage(request = {}) {
    return this.request("ops.usage", request);
  }

  /** What a character knows from this user's conversations (`knowledge.fact.list`). */
  knowledgeFactList(request) {
    return this.request("knowledge.fact.list", request);
  }

  /** Add a fact a character knows, by hand (`knowledge.fact.add`). */
  knowledgeFactAdd(request) {
    return this.request("knowledge.fact.add", request);
  }

  /** A new version of a current fact (`knowledge.fact.edit`). */
  knowledgeFactEdit(request) {
    return this.request("knowledge.fact.edit", request);
  }

  /** The character no longer knows this fact (`knowledge.fact.retract`). */
  knowledgeFactRetract(request) {
    return this.request("knowledge.fact.retract", request);
  }

  /** A fact's audit trail from the log (`knowledge.fact.history`). */
  knowledgeFactHistory(request) {
    return this.request("knowledge.fact.history", request);
  }

  // --- the memory API (docs/memory-api.md) --------------------------------------------------------------
  /** Write a memory in the caller's `player:<user_id>` namespace (`memory.remember`). */
  remember(request) {
    return this.request("memory.remember", request);
  }

  /** Ranked memories with their score's parts (`memory.search`). */
  searchMemories(request) {
    return this.request("memory.search", request);
  }

  /** A new version of a memory (`memory.update`). */
  updateMemory(request) {
    return this.request("memory.update", request);
  }

  /** Forget a memory: rows and vectors go (`memory.forget`). */
  forgetMemory(request) {
    return this.request("memory.forget", request);
  }

  /** Every version of a memory from the log (`memory.history`). */
  memoryHistory(request) {
    return this.request("memory.history", request);
  }

  /** `remember` with the engine's right: campaign and character namespaces too (`memory.engine.remember`). */
  engineRemember(request) {
    return this.request("memory.engine.remember", request);
  }

  /** `updateMemory` with the engine's right (`memory.engine.update`). */
  engineUpdateMemory(request) {
    return this.request("memory.engine.update", request);
  }

  /** `forgetMemory` with the engine's right (`memory.engine.forget`). */
  engineForgetMemory(request) {
    return this.request("memory.engine.forget", request);
  }

  /** `memoryHistory` with the engine's right (`memory.engine.history`). */
  engineMemoryHistory(request) {
    return this.request("memory.engine.history", request);
  }
}

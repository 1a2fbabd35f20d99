// Types of @mnemo/client; the contract's models and its operation table are generated into contract.d.ts.
import type { NatsConnection, ConnectionOptions } from "@nats-io/nats-core";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import type { ErrorCode, EventName, OperationName, Operations, RequestName } from "./contract.js";

export * from "./contract.js";

/** The payload model of an operation (`Payload<"chat.message.created">` is `MessageCreated`). */
export type Payload<N extends OperationName> = Operations[N]["payload"];
/** The reply model of a request-reply operation. */
export type Reply<N extends RequestName> = Operations[N]["reply"];
/** A chat event's JSON body: Dates are allowed where the contract has a date-time string. */
export type EventBody<N extends EventName> = { [K in keyof Payload<N>]: Payload<N>[K] | (string extends Payload<N>[K] ? Date : never) };

export declare const DEFAULT_URL: string;

export interface OperationInfo {
  subject: string;
  kind: "event" | "request";
  payload: string;
  reply: string | null;
  errors: readonly string[];
  msgId: readonly string[];
  /** Events: the keyed (v2) subject they are published on, `{field}` filled in with `subjectToken`. */
  keyedSubject: string | null;
}
export declare const OPERATIONS: Readonly<Record<OperationName, OperationInfo>>;
export declare const ERROR_CODES: Readonly<Record<ErrorCode, string>>;

/** The event's Nats-Msg-Id: its name and the JSON values of its msg_id fields (absent as empty), joined by `:`. */
export declare function natsMsgId<N extends EventName>(name: N, body: EventBody<N> | string): string;

/** A value as one NATS subject token: ASCII letters, digits, `-` and `_` kept, every other UTF-8 byte as `%XX`. */
export declare function subjectToken(value: string): string;

/** An event's subject from its keyed template (`OPERATIONS[name].keyedSubject`) and its JSON body. */
export declare function keyedSubject(template: string, json: Record<string, unknown>): string;

export interface ClientOptions {
  /** ms to wait for a reply (30000). */
  requestTimeout?: number;
  /** ms to wait for one JetStream acknowledgement before retrying (5000). */
  ackTimeout?: number;
  /** events `submit` may hold before `BufferFull` (10000). */
  bufferSize?: number;
  /** called when JetStream refuses a submitted event (not retryable); it is dropped from the buffer. */
  onDropped?: (event: { subject: string; msgId: string }, error: unknown) => void;
}

export declare class MnemoClient {
  constructor(nc: NatsConnection, options?: ClientOptions & { ownsConnection?: boolean; jetstream?: JetStreamClient });
  /** TCP (Node): `nats://host:4222`. Other keys are `@nats-io/transport-node` connection options. */
  static connect(servers?: string | string[], options?: ClientOptions & Partial<ConnectionOptions>): Promise<MnemoClient>;
  /** WebSocket: `ws://host:port`. Other keys are `wsconnect` options (`wsFactory` on runtimes without WebSocket). */
  static connectWs(servers: string | string[], options?: ClientOptions & Partial<ConnectionOptions>): Promise<MnemoClient>;
  readonly connection: NatsConnection;
  /** Submitted events not yet acknowledged. */
  readonly buffered: number;
  /** Wait up to `flushTimeout` ms for buffered events, then stop (and drain the connection if ours). */
  close(options?: { flushTimeout?: number }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;

  /** Publish and wait for JetStream's acknowledgement, retrying; `Unavailable` after `giveUpAfter` ms (null: never). */
  publish<N extends EventName>(name: N, event: EventBody<N>, options?: { giveUpAfter?: number | null }): Promise<PubAck>;
  /** Buffer the event and return; it is published in order and retried until acknowledged (`BufferFull` when full). */
  submit<N extends EventName>(name: N, event: EventBody<N>): void;
  /** Resolves when every submitted event is acknowledged. */
  flush(): Promise<void>;

  /** Any request-reply operation by name. */
  request<N extends RequestName>(name: N, request: Payload<N>): Promise<Reply<N>>;
  context(request: Payload<"context.assemble">): Promise<Reply<"context.assemble">>;
  loreImport(request: Payload<"lore.import">): Promise<Reply<"lore.import">>;
  loreExport(request: Payload<"lore.export">): Promise<Reply<"lore.export">>;
  loreList(request: Payload<"lore.list">): Promise<Reply<"lore.list">>;
  loreAttach(request: Payload<"lore.attach">): Promise<Reply<"lore.attach">>;
  loreDetach(request: Payload<"lore.detach">): Promise<Reply<"lore.detach">>;
  loreBookCreate(request: Payload<"lore.book.create">): Promise<Reply<"lore.book.create">>;
  loreBookDelete(request: Payload<"lore.book.delete">): Promise<Reply<"lore.book.delete">>;
  loreBookRename(request: Payload<"lore.book.rename">): Promise<Reply<"lore.book.rename">>;
  loreEntryCreate(request: Payload<"lore.entry.create">): Promise<Reply<"lore.entry.create">>;
  loreEntryUpdate(request: Payload<"lore.entry.update">): Promise<Reply<"lore.entry.update">>;
  loreEntryDelete(request: Payload<"lore.entry.delete">): Promise<Reply<"lore.entry.delete">>;
  /** Which entries a chat text fires and why, as a dry run (no timed state kept). */
  loreTestActivation(request: Payload<"lore.test_activation">): Promise<Reply<"lore.test_activation">>;
  memoriesList(request: Payload<"memory.list">): Promise<Reply<"memory.list">>;
  /** Tokens and vector status (indexed or missing, points) of listed items. */
  memoryIndexStatus(request: Payload<"memory.index_status">): Promise<Reply<"memory.index_status">>;
  memoryConvertToLore(request: Payload<"memory.convert_to_lore">): Promise<Reply<"memory.convert_to_lore">>;
  memoryDelete(request: Payload<"memory.delete">): Promise<Reply<"memory.delete">>;
  memoryEdit(request: Payload<"memory.edit">): Promise<Reply<"memory.edit">>;
  knowledgePromote(request: Payload<"memory.promote">): Promise<Reply<"memory.promote">>;
  knowledgeUnpromote(request: Payload<"memory.unpromote">): Promise<Reply<"memory.unpromote">>;
  documentImport(request: Payload<"lore.document.import">): Promise<Reply<"lore.document.import">>;
  documentGet(request: Payload<"lore.document.get">): Promise<Reply<"lore.document.get">>;
  documentList(request: Payload<"lore.document.list">): Promise<Reply<"lore.document.list">>;
  documentDelete(request: Payload<"lore.document.delete">): Promise<Reply<"lore.document.delete">>;
  eraseUser(request: Payload<"privacy.erase_user">): Promise<Reply<"privacy.erase_user">>;
  eraseTenant(request: Payload<"privacy.erase_tenant">): Promise<Reply<"privacy.erase_tenant">>;
  exportUser(request: Payload<"privacy.export_user">): Promise<Reply<"privacy.export_user">>;
  conversationList(request: Payload<"conversation.list">): Promise<Reply<"conversation.list">>;
  conversationTimeline(request: Payload<"conversation.timeline">): Promise<Reply<"conversation.timeline">>;
  /** One exported chat file published as chat events, once; the reply waits for every acknowledgement. */
  chatImport(request: Payload<"chat.import">): Promise<Reply<"chat.import">>;
  /** Per-tenant usage, for operators only (the `admin` NATS user on a secured deployment). */
  usage(request?: Payload<"ops.usage">): Promise<Reply<"ops.usage">>;
  knowledgeFactList(request: Payload<"knowledge.fact.list">): Promise<Reply<"knowledge.fact.list">>;
  knowledgeFactAdd(request: Payload<"knowledge.fact.add">): Promise<Reply<"knowledge.fact.add">>;
  knowledgeFactEdit(request: Payload<"knowledge.fact.edit">): Promise<Reply<"knowledge.fact.edit">>;
  knowledgeFactRetract(request: Payload<"knowledge.fact.retract">): Promise<Reply<"knowledge.fact.retract">>;
  knowledgeFactHistory(request: Payload<"knowledge.fact.history">): Promise<Reply<"knowledge.fact.history">>;
  remember(request: Payload<"memory.remember">): Promise<Reply<"memory.remember">>;
  searchMemories(request: Payload<"memory.search">): Promise<Reply<"memory.search">>;
  updateMemory(request: Payload<"memory.update">): Promise<Reply<"memory.update">>;
  forgetMemory(request: Payload<"memory.forget">): Promise<Reply<"memory.forget">>;
  memoryHistory(request: Payload<"memory.history">): Promise<Reply<"memory.history">>;
  engineRemember(request: Payload<"memory.engine.remember">): Promise<Reply<"memory.engine.remember">>;
  engineUpdateMemory(request: Payload<"memory.engine.update">): Promise<Reply<"memory.engine.update">>;
  engineForgetMemory(request: Payload<"memory.engine.forget">): Promise<Reply<"memory.engine.forget">>;
  engineMemoryHistory(request: Payload<"memory.engine.history">): Promise<Reply<"memory.engine.history">>;
}

/** mnemo answered with `ErrorReply`, or no service answered (`unavailable`). */
export declare class MnemoError extends Error {
  constructor(code: string, message: string, options?: { subject?: string; cause?: unknown });
  /** the contract's error code (`ErrorCode`; a newer server may send one this client does not know) */
  readonly code: ErrorCode | (string & {});
  /** the server's message */
  readonly detail: string;
  readonly subject: string;
}
export declare class BadRequest extends MnemoError {}
export declare class NotFound extends MnemoError {}
export declare class Forbidden extends MnemoError {}
export declare class Conflict extends MnemoError {}
export declare class Internal extends MnemoError {}
export declare class Unavailable extends MnemoError {}
export declare class BufferFull extends MnemoError {}
export declare function errorFor(code: string, message: string, options?: { subject?: string; cause?: unknown }): MnemoError;

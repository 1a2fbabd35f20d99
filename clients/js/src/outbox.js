// Chat events to JetStream, each retried until the stream acknowledges it (the Python client's outbox.py).
//
// `publish` awaits the acknowledgement, retrying with capped exponential backoff: a timeout, no stream yet,
// no responder, a reconnect in progress or JetStream answering 503 are all worth another try; the same
// Nats-Msg-Id makes a retry of an event that did land a duplicate JetStream drops. `submit` puts the event in
// a bounded local buffer and returns at once; one background loop sends the buffer in order, each event
// retried until acked, so a platform keeps serving its users through a NATS outage and loses nothing while
// the buffer has room (`BufferFull` when it has none). `flush` waits for the buffer to drain.
import { headers } from "@nats-io/nats-core";
import { errors } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import { BufferFull, Unavailable } from "./errors.js";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Retrying cannot help when JetStream refused the message itself (not 503) or the connection was closed by us.
function retryable(err) {
  if (err instanceof JetStreamApiError) return err.status === 503;
  return !(err instanceof errors.ClosedConnectionError || err instanceof errors.InvalidArgumentError);
}

export class Outbox {
  #js;
  #ackTimeout;
  #backoffMax;
  #bufferSize;
  #queue = [];
  #unacked = 0;
  #sending = false;
  #closed = false;
  #drained = [];
  onDropped;

  constructor(js, { ackTimeout = 5000, backoffMax = 5000, bufferSize = 10_000, onDropped } = {}) {
    this.#js = js;
    this.#ackTimeout = ackTimeout;
    this.#backoffMax = backoffMax;
    this.#bufferSize = bufferSize;
    this.onDropped = onDropped ?? ((item, err) => console.error(`mnemo: event ${item.msgId} refused by JetStream; dropped`, err));
  }

  /** Events submitted and not yet acknowledged (the one being sent included). */
  get buffered() {
    return this.#unacked;
  }

  /** Publish until acknowledged; `Unavailable` after `giveUpAfter` ms (null: never give up). */
  async publish(item, { giveUpAfter = 60_000 } = {}) {
    const deadline = giveUpAfter == null ? null : Date.now() + giveUpAfter;
    let delay = 50;
    for (;;) {
      if (this.#closed) throw new Unavailable("unavailable", "the client is closed", { subject: item.subject });
      const h = headers();
      h.set("Nats-Msg-Id", item.msgId);
      try {
        return await this.#js.publish(item.subject, item.body, { headers: h, timeout: this.#ackTimeout });
      } catch (err) {
        if (!retryable(err)) throw err;
        if (deadline !== null && Date.now() + delay > deadline) {
          throw new Unavailable("unavailable", `not acknowledged: ${err?.message ?? err}`, {
            subject: item.subject,
            cause: err,
          });
        }
      }
      await sleep(delay);
      delay = Math.min(delay * 2, this.#backoffMax);
    }
  }

  /** Buffer `item`; the background loop publishes it. `BufferFull` when the buffer is full. */
  submit(item) {
    if (this.#closed) throw new Unavailable("unavailable", "the client is closed", { subject: item.subject });
    if (this.#queue.length >= this.#bufferSize) {
      throw new BufferFull("unavailable", `${this.#bufferSize} events await acknowledgement`, { subject: item.subject });
    }
    this.#queue.push(item);
    this.#unacked += 1;
    if (!this.#sending) void this.#sendAll();
  }

  async #sendAll() {
    this.#sending = true;
    try {
      while (this.#queue.length && !this.#closed) {
        const item = this.#queue[0];
        try {
          await this.publish(item, { giveUpAfter: null });
        } catch (err) {
          if (this.#closed) break;
          this.onDropped(item, err); // refused by JetStream (not retryable): report, keep sending the rest
        }
        this.#queue.shift();
        this.#unacked -= 1;
      }
    } finally {
      this.#sending = false;
      if (!this.#queue.length) for (const resolve of this.#drained.splice(0)) resolve();
    }
  }

  /** Resolves when every submitted event is acknowledged. */
  flush() {
    if (!this.#unacked) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  close() {
    this.#closed = true;
  }
}

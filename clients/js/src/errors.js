// Errors as exceptions carrying the contract's error code (`bad_request`, `not_found`, `forbidden`, `internal`,
// `unavailable`, ...): `err instanceof NotFound`, or `err instanceof MnemoError && err.code`.

/** mnemo answered a request with `ErrorReply`, or no service answered (`unavailable`). */
export class MnemoError extends Error {
  constructor(code, message, { subject = "", cause } = {}) {
    super(`${code}: ${message}${subject ? ` (${subject})` : ""}`, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
    this.detail = message;
    this.subject = subject;
  }
}

/** The request is invalid; the message says what is wrong. */
export class BadRequest extends MnemoError {}
/** No such object for that tenant (and user). */
export class NotFound extends MnemoError {}
/** The call may not act on that namespace (another player's, or one that takes the engine's right). */
export class Forbidden extends MnemoError {}
/** The object changed since the version the request names (`expected_version`): read it again. */
export class Conflict extends MnemoError {}
/** The service failed; details are in its log. */
export class Internal extends MnemoError {}
/** No service answered in time, or JetStream did not acknowledge a publish in time. */
export class Unavailable extends MnemoError {}
/** The local buffer of events awaiting acknowledgement is full (`bufferSize`). */
export class BufferFull extends MnemoError {}

const BY_CODE = {
  bad_request: BadRequest,
  not_found: NotFound,
  forbidden: Forbidden,
  conflict: Conflict,
  internal: Internal,
  unavailable: Unavailable,
};

/** The exception for an error code; an unknown code (from a newer server) is a plain `MnemoError`. */
export function errorFor(code, message, options = {}) {
  const Kind = BY_CODE[code] ?? MnemoError;
  return new Kind(code, message, options);
}

// @mnemo/client: a typed client for mnemo's public NATS contract (types in contract.d.ts, generated from it).
export { DEFAULT_URL, MnemoClient, keyedSubject, natsMsgId, subjectToken } from "./client.js";
export { BadRequest, BufferFull, Conflict, Forbidden, Internal, MnemoError, NotFound, Unavailable, errorFor } from "./errors.js";
export { ERROR_CODES, OPERATIONS } from "./operations.js";

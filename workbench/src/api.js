// The workbench's only way to mnemo: the gateway's public HTTP API, with the API key the person gave.
// Every body names the key's tenant (the gateway refuses any other), so the app sees what the key allows.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code);
    this.status = status;
    this.code = code;
  }
}

async function send(url, key, init) {
  const res = await fetch(url, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...(init.headers || {}) },
  });
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const error = body && body.error ? body.error : { code: `http_${res.status}`, message: text.slice(0, 300) };
    throw new ApiError(res.status, error.code, error.message);
  }
  return body;
}

/** The tenant a key acts for (401: an unknown key). */
export function whoami(key) {
  return send("/v1/whoami", key, { method: "GET" });
}

/** `call("memory/list", {...})` posts to /v1/memory/list with the tenant filled in. */
export function client(key, tenant) {
  return (path, body = {}) =>
    send(`/v1/${path}`, key, { method: "POST", body: JSON.stringify({ tenant_id: tenant, ...body }) });
}

/** A file's bytes as base64 (what lore.import and lore.document.import take as `data_base64`). */
export async function fileBase64(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}

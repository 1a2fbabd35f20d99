// Tokens and vector status of listed items (memory.index_status, answered beside the vector index): one call
// per page, shown beside each item. What fails to load leaves the listing as it is, with the error under it.
import { useEffect, useState } from "preact/hooks";
import { Badge, ErrorNote, useLoad } from "../ui.jsx";
import { useSession } from "../session.js";

const PAGE = 200; // the call's limit per request
const RETRIES = 5; // asks again for items not yet indexed, RETRY_MS apart
const RETRY_MS = 2000;

/** `queries`: [{source, id, text}]; returns {statuses: Map("<source>:<id>" -> status), error}. */
export function useIndexStatus(queries) {
  const { call, user } = useSession();
  const key = queries.map((q) => `${q.source}:${q.id}:${q.text.length}`).join("|");
  const loaded = useLoad(async () => {
    if (!user || !queries.length) return [];
    const pages = [];
    for (let i = 0; i < queries.length; i += PAGE) pages.push(queries.slice(i, i + PAGE));
    const replies = await Promise.all(pages.map((items) => call("memory/index_status", { user_id: user, items })));
    // Each item keeps its reply's embedding backlog: whether "not indexed" can be told from "not yet".
    return replies.flatMap((r) => r.items.map((s) => ({ ...s, backlog: r.embedding_backlog })));
  }, [user, key]);
  // A new or edited item is indexed within seconds of its write: one seen missing is asked again a few times,
  // so the badge follows the index instead of keeping the answer of the moment the listing was drawn.
  const [retries, setRetries] = useState(0);
  useEffect(() => setRetries(0), [user, key]);
  const missing = (loaded.data || []).some((s) => s.status !== "indexed");
  useEffect(() => {
    if (!missing || loaded.loading || retries >= RETRIES) return undefined;
    const timer = setTimeout(() => {
      setRetries((n) => n + 1);
      loaded.reload();
    }, RETRY_MS);
    return () => clearTimeout(timer);
  }, [missing, loaded.loading, retries]);
  const statuses = new Map((loaded.data || []).map((s) => [`${s.source}:${s.id}`, s]));
  return { statuses, error: loaded.error };
}

/** "42 tokens" and "indexed (2 vectors)", "pending" (the embedding service still has events to embed) or
 * "not indexed" (missing with nothing left to embed), for one item. */
export function IndexBadges({ status }) {
  if (!status) return null;
  return (
    <div class="meta index-status">
      {status.tokens != null ? `${status.tokens} tokens · ` : ""}
      <VectorBadge status={status} />
    </div>
  );
}

function VectorBadge({ status }) {
  if (status.status === "indexed")
    return (
      <Badge tone="good" title="its points in the vector index">
        indexed ({status.vectors} {status.vectors === 1 ? "vector" : "vectors"})
      </Badge>
    );
  if (status.pending)
    return (
      <Badge tone="info" title="no vector yet: the embedding service still has events to embed, this one likely among them">
        pending
      </Badge>
    );
  const why =
    status.backlog == null
      ? "no vector yet: new items are indexed within seconds; one that stays missing was not embedded (see the dead letters)"
      : "no vector, and the embedding service has nothing left to embed: it was not embedded (see the dead letters)";
  return (
    <Badge tone="warn" title={why}>
      not indexed
    </Badge>
  );
}

export function IndexError({ error }) {
  return error ? <ErrorNote error={error} /> : null;
}

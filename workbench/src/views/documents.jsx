// Documents as lore: upload a file (lore.document.import) and follow its import (lore.document.get) page by page
// until it is completed or failed with its reason; the tenant's documents with their state.
import { useEffect, useState } from "preact/hooks";
import { fileBase64 } from "../api.js";
import { useSession } from "../session.js";
import { ActionForm, DataTable, TextInput } from "../forms.jsx";
import { Badge, ErrorNote, Field, Loading, useAction, useLoad, when } from "../ui.jsx";

// Through the HTTP API a file travels inline as base64 (about 1 MB of it); larger files go through the uploads
// bucket with a client library (docs/documents.md).
const MAX_BYTES = 740_000;
const TONES = { completed: "good", processing: "info", failed: "bad", deleted: "plain" };

function Progress({ state }) {
  const { pages, chunks, progress } = state;
  const done = state.status !== "processing";
  return (
    <div>
      <Badge tone={TONES[state.status] || "plain"}>{state.status}</Badge>
      {done ? null : (
        <progress max={pages || 1} value={pages ? progress.pages_read : undefined} aria-label={`Import of ${state.name}`} />
      )}
      <span class="meta">
        {" "}
        {done ? `${pages} pages, ${chunks} chunks, ${state.tokens} tokens` : `${progress.pages_read} of ${pages || "?"} pages read, ${progress.chunks_recorded} chunks recorded`}
      </span>
      {state.reason ? <div class="note error">{state.reason}</div> : null}
    </div>
  );
}

/** Polls the document's state every second while it is being imported. */
function useFollow(documentId, onDone) {
  const { call } = useSession();
  const [state, setState] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!documentId) return undefined;
    let live = true;
    let timer = null;
    const poll = async () => {
      try {
        const now = await call("lore/document/get", { document_id: documentId });
        if (!live) return;
        setState(now);
        if (now.status === "processing") timer = setTimeout(poll, 1000);
        else onDone();
      } catch (err) {
        if (live) setError(err);
      }
    };
    poll();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [documentId]);
  return { state, error };
}

export function Documents({ owner, bots, onChanged }) {
  const { call } = useSession();
  const [file, setFile] = useState(null);
  const [bot, setBot] = useState("");
  const [following, setFollowing] = useState(null);
  const documents = useLoad(() => call("lore/document/list", {}), []);
  const followed = useFollow(following, () => (documents.reload(), onChanged()));
  const [upload, state] = useAction(async () => {
    if (file.size > MAX_BYTES) throw new Error(`${file.name} is over ${MAX_BYTES} bytes: upload it with a client library`);
    const reply = await call("lore/document/import", {
      owner_user_id: owner,
      name: file.name,
      data_base64: await fileBase64(file),
      attach_to_bots: bot.trim() ? [bot.trim()] : [],
    });
    setFollowing(reply.document_id);
    return reply;
  });
  return (
    <section class="panel" aria-labelledby="documents">
      <h2 id="documents">Documents</h2>
      <ActionForm class="form-grid" label="Upload a document" onSubmit={upload} state={state} submit="Upload" busy="Uploading…" disabled={!file}>
        <Field label="Document" hint=".txt, .md, .html, .pdf, .docx; its chunks become lore the bot can be reminded of">
          <input type="file" required onChange={(e) => setFile(e.currentTarget.files[0] || null)} />
        </Field>
        <Field label="Attach to bot" hint={bots.length ? `e.g. ${bots.slice(0, 3).join(", ")}` : "a bot id (optional)"}>
          <TextInput value={bot} onChange={setBot} />
        </Field>
      </ActionForm>
      {following ? (
        <div class="panel" role="status" aria-label="Import progress">
          {followed.state ? <Progress state={followed.state} /> : <Loading what="Starting the import" />}
          <ErrorNote error={followed.error} />
        </div>
      ) : null}
      <ErrorNote error={documents.error} />
      {documents.data && documents.data.documents.length ? (
        <DataTable caption="The tenant's documents" columns={["Document", "State"]}>
          {documents.data.documents.map((d) => (
            <tr>
              <td>
                <strong>{d.name}</strong>
                <div class="meta">
                  owner {d.owner_user_id} · version {d.active_version ?? d.version} · {when(d.updated_at)}
                </div>
              </td>
              <td>
                <Progress state={d} />
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}

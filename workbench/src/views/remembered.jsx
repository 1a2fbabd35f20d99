// Remembered memories: those a platform, game engine or game master wrote through the memory API, in the chosen
// user's own namespace (player:<user>). Remember one, edit it (memory.update: a new version, the old kept in the
// log, sent against the version read so two editors cannot overwrite each other), forget it (memory.forget,
// with a reason) and read its versions (memory.history). Listed with memory.search: an empty query lists the newest
// first; a typed one ranks them as a search does, each with its score and its parts (dense, lexical, recency).
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { ActionForm, DataTable, ItemButton, TextArea, TextInput, tagList } from "../forms.jsx";
import { Badge, Dialog, ErrorNote, Field, Loading, Select, useAction, useLoad, when } from "../ui.jsx";
import { IndexBadges, IndexError, useIndexStatus } from "./indexing.jsx";

const TYPES = ["episodic", "semantic", "declarative", "procedural"];
const LIMIT = 100; // memory.search's largest page

function Remember({ onSaved }) {
  const { call, user } = useSession();
  const [content, setContent] = useState("");
  const [type, setType] = useState("episodic");
  const [tags, setTags] = useState("");
  const [remember, state] = useAction(async () => {
    const reply = await call("memory/remember", {
      user_id: user,
      owner_namespace: `player:${user}`,
      type,
      content: content.trim(),
      tags: tagList(tags),
    });
    setContent("");
    setTags("");
    onSaved();
    return reply;
  });
  return (
    <ActionForm
      class="panel form-grid"
      label="Remember a memory"
      onSubmit={remember}
      state={state}
      submit="Remember"
      busy="Remembering…"
      done="Remembered."
      disabled={!content.trim()}
    >
      <Field label="New memory" hint={`kept in player:${user}, found by this user's memory searches`}>
        <TextArea required maxLength="20000" value={content} onChange={setContent} />
      </Field>
      <TypeAndTags type={type} setType={setType} tags={tags} setTags={setTags} hint="comma-separated, e.g. npc:choir_envoy" />
    </ActionForm>
  );
}

function TypeAndTags({ type, setType, tags, setTags, hint = "comma-separated" }) {
  return (
    <>
      <Field label="Memory type">
        <Select value={type} onChange={setType} options={TYPES} />
      </Field>
      <Field label="Memory tags" hint={hint}>
        <TextInput value={tags} onChange={setTags} />
      </Field>
    </>
  );
}

function Versions({ versions }) {
  return (
    <ol class="audit" aria-label="Versions">
      {versions.map((v) => (
        <li>
          <strong>
            v{v.version} {v.change}
          </strong>{" "}
          <span class="meta">
            by {v.by_user_id}, {when(v.at)}
            {v.reason ? ` · ${v.reason}` : ""}
          </span>
          {v.content ? <div>{v.content}</div> : null}
        </li>
      ))}
    </ol>
  );
}

/** The edit dialog's body: the memory's history read first, so the update names the version it was made against. */
function Edit({ memory, onDone }) {
  const { call, user } = useSession();
  const history = useLoad(() => call("memory/history", { user_id: user, memory_id: memory.id }), [memory.id]);
  if (history.loading) return <Loading what="Reading its versions" />;
  if (history.error) return <ErrorNote error={history.error} />;
  const latest = history.data.versions[history.data.versions.length - 1];
  return <EditForm memory={memory} latest={latest} versions={history.data.versions} onDone={onDone} />;
}

function EditForm({ memory, latest, versions, onDone }) {
  const { call, user } = useSession();
  const [content, setContent] = useState(latest.content ?? memory.content);
  const [title, setTitle] = useState(latest.title ?? memory.title);
  const [type, setType] = useState(latest.type ?? memory.type);
  const [tags, setTags] = useState((latest.tags ?? memory.tags).join(", "));
  const [save, state] = useAction(async () => {
    await call("memory/update", {
      user_id: user,
      memory_id: memory.id,
      content: content.trim(),
      // An untouched title is left out, so a derived one follows the new content.
      title: title.trim() && title.trim() !== (latest.title ?? memory.title) ? title.trim() : null,
      type,
      tags: tagList(tags),
      expected_version: latest.version,
    });
    onDone(true);
  });
  return (
    <>
      <ActionForm
        onSubmit={save}
        state={state}
        submit="Save new version"
        disabled={!content.trim()}
        onCancel={() => onDone(false)}
      >
        <p class="note">
          Saving makes version {latest.version + 1}; version {latest.version} stays in the log. If someone changed it
          meanwhile, saving is refused (conflict) instead of overwriting their change.
        </p>
        <Field label="Memory text">
          <TextArea rows="4" required maxLength="20000" value={content} onChange={setContent} />
        </Field>
        <Field label="Title" hint="left as it is, a derived title follows the new text">
          <TextInput maxLength="200" value={title} onChange={setTitle} />
        </Field>
        <TypeAndTags type={type} setType={setType} tags={tags} setTags={setTags} />
      </ActionForm>
      <h3>Versions</h3>
      <Versions versions={versions} />
    </>
  );
}

function Forget({ memory, onDone }) {
  const { call, user } = useSession();
  const [reason, setReason] = useState("");
  const [forget, state] = useAction(async () => {
    await call("memory/forget", { user_id: user, memory_id: memory.id, reason: reason.trim() || null });
    onDone(true);
  });
  return (
    <ActionForm onSubmit={forget} state={state} submit="Forget it" tone="danger" onCancel={() => onDone(false)}>
      <p class="note">
        The memory and its vectors go at once: no context or search shows it again. The log keeps that it was
        forgotten (who, when, why).
      </p>
      <blockquote>{memory.content}</blockquote>
      <Field label="Reason" hint="optional, kept with the record">
        <TextInput maxLength="500" value={reason} onChange={setReason} />
      </Field>
    </ActionForm>
  );
}

export function Remembered({ bot }) {
  const { call, user } = useSession();
  const [editing, setEditing] = useState(null);
  const [forgetting, setForgetting] = useState(null);
  const [typed, setTyped] = useState("");
  const [query, setQuery] = useState("");
  const found = useLoad(
    () =>
      user
        ? call("memory/search", {
            user_id: user,
            query,
            sources: ["memory"],
            namespaces: [`player:${user}`],
            bot_id: bot || null,
            limit: LIMIT,
          })
        : null,
    [user, bot, query],
  );
  const results = found.data ? found.data.results : [];
  const index = useIndexStatus(results.map((m) => ({ source: "remembered", id: m.id, text: m.content })));
  if (!user) return null;
  const done = (close) => (changed) => {
    close(null);
    if (changed) found.reload();
  };
  return (
    <section aria-labelledby="remembered-heading">
      <h2 id="remembered-heading">Remembered through the memory API</h2>
      <Remember onSaved={found.reload} />
      <form
        class="actions panel"
        role="search" aria-label="Memory search"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim() === query) found.reload();
          else setQuery(typed.trim());
        }}
      >
        <Field label="Search remembered memories" hint="empty: the newest first; else ranked as the memory API's search ranks">
          <TextInput type="search" maxLength="2000" value={typed} onChange={setTyped} />
        </Field>
        <button type="submit">Search</button>
      </form>
      {found.loading ? <Loading what="Loading remembered memories" /> : null}
      <ErrorNote error={found.error} />
      {found.data ? (
        <DataTable
          caption={
            <>
              Remembered memories of user {user}: {found.data.results.length}
              {query ? ` matching “${query}”` : found.data.results.length === LIMIT ? " (the newest)" : ""}
            </>
          }
          columns={["Memory", "Kind", "Actions"]}
        >
          {found.data.results.map((m) => (
              <tr>
                <td>
                  <strong>{m.title}: </strong>
                  {m.content}
                  <div class="meta">
                    {m.origin}
                    {m.occurred_at ? ` · ${when(m.occurred_at)}` : ""}
                    {m.bot_id ? ` · known by ${m.bot_id}` : ""}
                  </div>
                </td>
                <td>
                  <Badge tone="info">remembered</Badge>
                  <Badge>{m.type}</Badge>
                  {m.tags.map((t) => (
                    <Badge>{t}</Badge>
                  ))}
                  <div class="meta">{m.namespace}</div>
                  <IndexBadges status={index.statuses.get(`remembered:${m.id}`)} />
                  {query ? (
                    <div class="meta">
                      score {m.score.toFixed(2)} (dense {m.score_parts.dense.toFixed(2)}, lexical{" "}
                      {m.score_parts.lexical.toFixed(2)}, recency {m.score_parts.recency.toFixed(2)})
                    </div>
                  ) : null}
                </td>
                <td>
                  <div class="actions">
                    <ItemButton action="Edit" item={m.title} onClick={() => setEditing(m)} />
                    <ItemButton action="Forget" item={m.title} tone="danger" onClick={() => setForgetting(m)} />
                  </div>
                </td>
              </tr>
            ))}
        </DataTable>
      ) : null}
      <IndexError error={index.error} />
      <Dialog open={!!editing} title="Edit memory" onClose={() => setEditing(null)}>
        {editing ? <Edit memory={editing} onDone={done(setEditing)} /> : null}
      </Dialog>
      <Dialog open={!!forgetting} title="Forget memory" onClose={() => setForgetting(null)}>
        {forgetting ? <Forget memory={forgetting} onDone={done(setForgetting)} /> : null}
      </Dialog>
    </section>
  );
}

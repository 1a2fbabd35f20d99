// A book's entries, and the entry editor: create, edit and delete entries with SillyTavern's World Info fields
// (lore.entry.{create,update,delete}, acting as the book's owner). The entries are read from lore.export, the
// book as a World Info file; a change bumps the book's version, which reloads them.
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { DataTable, ItemButton } from "../forms.jsx";
import { Badge, Dialog, ErrorNote, Field, Loading, Select, short, useAction, useLoad } from "../ui.jsx";

export const POSITIONS = ["before character", "after character", "author's note top", "author's note bottom", "at depth",
  "examples top", "examples bottom", "outlet"]; // prettier-ignore
const LOGIC = ["AND ANY", "NOT ALL", "NOT ANY", "AND ALL"]; // SillyTavern's selectiveLogic, by value
const MODES = [
  { value: "keyword", label: "keywords" },
  { value: "vector", label: "similarity (vector)" },
  { value: "hybrid", label: "keywords or similarity" },
];
const keyList = (text) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
const BLANK = { comment: "", content: "", key: [], keysecondary: [], selectiveLogic: 0, constant: false, disable: false,
  activationMode: "keyword", position: 0, depth: 4, order: 100, probability: 100, sticky: 0, cooldown: 0, delay: 0 }; // prettier-ignore

/** The form's values from an entry (or a blank one), as strings for the inputs. */
function formOf(entry) {
  const e = { ...BLANK, ...entry };
  return { ...e, key: e.key.join(", "), keysecondary: e.keysecondary.join(", "), activationMode: e.activationMode || "keyword" };
}

/** The fields to send: every field the form holds, typed as World Info writes them. */
function entryOf(form) {
  const whole = (v) => Math.max(0, Math.trunc(Number(v) || 0));
  return {
    comment: form.comment.trim(),
    content: form.content,
    key: keyList(form.key),
    keysecondary: keyList(form.keysecondary),
    selective: keyList(form.keysecondary).length > 0,
    selectiveLogic: Number(form.selectiveLogic),
    constant: !!form.constant,
    disable: !!form.disable,
    activationMode: form.activationMode,
    position: Number(form.position),
    depth: whole(form.depth),
    order: Number(form.order) || 0,
    probability: Math.min(100, whole(form.probability)),
    sticky: whole(form.sticky),
    cooldown: whole(form.cooldown),
    delay: whole(form.delay),
  };
}

function EntryForm({ book, entry, onDone }) {
  const { call } = useSession();
  const [form, setForm] = useState(() => formOf(entry));
  const set = (name) => (e) => {
    const input = e.currentTarget;
    setForm((f) => ({ ...f, [name]: input.type === "checkbox" ? input.checked : input.value }));
  };
  const [save, state] = useAction(async () => {
    const body = { user_id: book.owner_user_id, lorebook_id: book.lorebook_id };
    const after = entryOf(form);
    if (!entry) {
      const reply = await call("lore/entry/create", { ...body, entry: after });
      onDone(reply);
      return reply;
    }
    // Only what was changed in the form: a field it shows but nobody touched keeps its stored value exactly.
    const before = entryOf(formOf(entry));
    const changes = Object.fromEntries(
      Object.entries(after).filter(([name, value]) => JSON.stringify(value) !== JSON.stringify(before[name])),
    );
    if (!Object.keys(changes).length) {
      onDone(null);
      return null;
    }
    const reply = await call("lore/entry/update", { ...body, uid: entry.uid, changes });
    onDone(reply);
    return reply;
  });
  const number = (name, label, hint, min = 0) => (
    <Field label={label} hint={hint}>
      <input type="number" min={min} step="1" value={form[name]} onInput={set(name)} />
    </Field>
  );
  return (
    <form
      class="form-grid"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <Field label="Entry title" hint="SillyTavern's comment (memo)">
        <input maxLength="2000" value={form.comment} onInput={set("comment")} />
      </Field>
      <Field label="Keys" hint="comma-separated; /regex/ works">
        <input value={form.key} onInput={set("key")} />
      </Field>
      <div class="wide">
        <Field label="Content" hint="what the context gets when the entry fires">
          <textarea rows="4" required value={form.content} onInput={set("content")} />
        </Field>
      </div>
      <Field label="Secondary keys" hint="comma-separated, optional">
        <input value={form.keysecondary} onInput={set("keysecondary")} />
      </Field>
      <Field label="Secondary logic">
        <Select value={String(form.selectiveLogic)} onChange={(v) => setForm((f) => ({ ...f, selectiveLogic: v }))}
          options={LOGIC.map((l, i) => ({ value: String(i), label: l }))} />
      </Field>
      <Field label="Activation">
        <Select value={form.activationMode} onChange={(v) => setForm((f) => ({ ...f, activationMode: v }))} options={MODES} />
      </Field>
      <Field label="Position">
        <Select value={String(form.position)} onChange={(v) => setForm((f) => ({ ...f, position: v }))}
          options={POSITIONS.map((p, i) => ({ value: String(i), label: p }))} />
      </Field>
      {number("depth", "Depth", "for 'at depth'")}
      {number("order", "Order", "higher is placed later", -1e9)}
      {number("probability", "Probability", "percent")}
      {number("sticky", "Sticky", "messages it stays active")}
      {number("cooldown", "Cooldown", "messages before it can fire again")}
      {number("delay", "Delay", "messages before it can fire at all")}
      <div class="field checkbox">
        <label>
          <input type="checkbox" checked={form.constant} onChange={set("constant")} /> Constant (always fires)
        </label>
        <label>
          <input type="checkbox" checked={form.disable} onChange={set("disable")} /> Disabled
        </label>
      </div>
      <div class="actions">
        <button type="submit" disabled={state.busy || !form.content.trim()}>
          {entry ? "Save entry" : "Create entry"}
        </button>
        <button type="button" class="secondary" onClick={() => onDone(null)}>
          Cancel
        </button>
        <ErrorNote error={state.error} />
      </div>
    </form>
  );
}

export function Entries({ book, onChanged }) {
  const { call } = useSession();
  const [editing, setEditing] = useState(null); // {entry} for an edit, {} for a new one
  const [saved, setSaved] = useState(null);
  const file = useLoad(() => call("lore/export", { lorebook_id: book.lorebook_id }), [book.lorebook_id, book.version]);
  const [remove, removing] = useAction(async (entry) => {
    await call("lore/entry/delete", { user_id: book.owner_user_id, lorebook_id: book.lorebook_id, uid: entry.uid });
    setSaved(`Entry ${entry.comment || entry.uid} deleted.`);
    onChanged();
  });
  if (file.loading && !file.data) return <Loading what="Loading entries" />;
  if (file.error) return <ErrorNote error={file.error} />;
  const entries = Object.values(file.data.data.entries || {});
  return (
    <section aria-label={`Entries of ${book.name}`}>
      <div class="actions">
        <ItemButton action="New entry" item={`in ${book.name}`} tone="" onClick={() => (setSaved(null), setEditing({}))} />
        {saved ? (
          <span class="note ok" role="status">
            {saved}
          </span>
        ) : null}
        <ErrorNote error={removing.error} />
      </div>
      <DataTable caption={<>Entries of {book.name}</>} columns={["Entry", "Keys", "How it fires", "Actions"]}>
        {entries.map((e) => (
          <tr>
            <td>
              <strong>{e.comment || `entry ${e.uid}`}</strong>
              <div>{short(e.content, 240)}</div>
            </td>
            <td>
              <span>{(e.key || []).join(", ")}</span>
              {e.keysecondary && e.keysecondary.length ? (
                <div class="meta">
                  secondary: {e.keysecondary.join(", ")} ({LOGIC[e.selectiveLogic] || "AND ANY"})
                </div>
              ) : null}
            </td>
            <td class="meta">
              {e.disable ? <Badge tone="bad">disabled</Badge> : null}
              {e.constant ? <Badge tone="info">constant</Badge> : null}
              {e.activationMode && e.activationMode !== "keyword" ? <Badge tone="info">{e.activationMode}</Badge> : null}
              {e.vectorized && !e.activationMode ? <Badge tone="info">vector</Badge> : null}
              {POSITIONS[e.position] || `position ${e.position}`} · order {e.order}
              {e.sticky ? ` · sticky ${e.sticky}` : ""}
              {e.cooldown ? ` · cooldown ${e.cooldown}` : ""}
              {e.probability !== undefined && e.probability < 100 ? ` · ${e.probability}%` : ""}
            </td>
            <td>
              <div class="actions">
                <ItemButton action="Edit" item={e.comment || `entry ${e.uid}`} onClick={() => (setSaved(null), setEditing({ entry: e }))} />
                <ItemButton action="Delete" item={e.comment || `entry ${e.uid}`} tone="danger" disabled={removing.busy} onClick={() => remove(e)} />
              </div>
            </td>
          </tr>
        ))}
      </DataTable>
      <Dialog open={!!editing} title={editing && editing.entry ? "Edit entry" : "New entry"} onClose={() => setEditing(null)}>
        {editing ? (
          <EntryForm
            book={book}
            entry={editing.entry || null}
            onDone={(reply) => {
              setEditing(null);
              if (!reply) return;
              setSaved(`Entry ${reply.entry.comment || reply.uid} ${editing.entry ? "saved" : "created"} (uid ${reply.uid}).`);
              onChanged();
            }}
          />
        ) : null}
      </Dialog>
    </section>
  );
}

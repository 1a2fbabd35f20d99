// Memories: the unified listing of a user's summaries, the legacy lore made from them and the characters' facts
// (memory.list) with its filters; edit a summary's text in place (memory.edit: a new version, the old one kept in
// the log), delete it (memory.delete) or keep it as legacy lore through a review dialog (memory.convert_to_lore);
// below it, the memories remembered through the memory API (remembered.jsx).
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { ActionForm, DataTable, ItemButton, TextArea, TextInput } from "../forms.jsx";
import { Badge, Dialog, ErrorNote, Field, Loading, Select, useAction, useLoad, when } from "../ui.jsx";
import { Remembered } from "./remembered.jsx";
import { IndexBadges, IndexError, useIndexStatus } from "./indexing.jsx";
import { ConversationPicker, nameOf, useConversations } from "./shared.jsx";

const TYPES = ["short_term", "long_term", "consolidated", "legacy_memory", "episodic", "semantic", "declarative", "procedural"];
const SOURCES = { memory: "summaries", legacy_lore: "legacy lore", knowledge: "knowledge" };
const idList = (text) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

function Convert({ item, conversation, onDone }) {
  const { call, user } = useSession();
  const bots = conversation ? conversation.bots.map((b) => b.id) : [];
  const personas = conversation ? conversation.personas.map((p) => p.id) : [];
  const [title, setTitle] = useState(item.title || "");
  const [text, setText] = useState(item.text);
  const [present, setPresent] = useState(item.participants.join(", "));
  const [botIds, setBotIds] = useState((item.participants.filter((p) => bots.includes(p)).length ? item.participants.filter((p) => bots.includes(p)) : bots).join(", "));
  const [personaIds, setPersonaIds] = useState(personas.join(", "));
  const [tags, setTags] = useState("");
  const [importance, setImportance] = useState(item.importance ? String(item.importance) : "");
  const [save, state] = useAction(async () => {
    const reply = await call("memory/convert_to_lore", {
      user_id: user,
      memory_id: item.id,
      title: title.trim() || null,
      // Unchanged text and participants are left to the summary's (the request's defaults).
      text: text.trim() && text !== item.text ? text.trim() : null,
      participants: present === item.participants.join(", ") ? null : idList(present),
      applies_to_bots: idList(botIds),
      applies_to_personas: idList(personaIds),
      // No tags typed: the entry's tags are split from the summary's mood, as without the dialog.
      tags: idList(tags).length ? idList(tags) : null,
      importance: importance === "" ? null : Number(importance),
    });
    onDone(true);
    return reply;
  });
  return (
    <ActionForm
      onSubmit={save}
      state={state}
      submit="Convert to legacy lore"
      disabled={!text.trim() || (!idList(botIds).length && !idList(personaIds).length)}
      onCancel={() => onDone(false)}
    >
      <p class="note">The summary becomes a legacy lore entry the chosen characters are reminded of; the summary stays.</p>
      <Field label="Text" hint="what the characters will be reminded of">
        <TextArea required rows={4} maxLength="20000" value={text} onChange={setText} />
      </Field>
      <Field label="Participants" hint="bot and persona ids present, comma-separated">
        <TextInput value={present} onChange={setPresent} />
      </Field>
      <Field label="Title" hint="optional">
        <TextInput value={title} maxLength="512" onChange={setTitle} />
      </Field>
      <Field label="Applies to bots" hint="bot ids, comma-separated">
        <TextInput value={botIds} onChange={setBotIds} />
      </Field>
      <Field label="Applies to personas" hint="persona ids, comma-separated">
        <TextInput value={personaIds} onChange={setPersonaIds} />
      </Field>
      <Field label="Tags" hint="comma-separated; empty: from the summary's mood">
        <TextInput value={tags} onChange={setTags} />
      </Field>
      <Field label="Importance" hint="1 to 10">
        <TextInput type="number" min="1" max="10" step="1" value={importance} onChange={setImportance} />
      </Field>
    </ActionForm>
  );
}

// The summary's text edited where it is listed: saving sends the new text against this version (memory.edit); an
// edit made meanwhile elsewhere is refused (the version is no longer current) and said so, nothing is overwritten.
function EditText({ item, onDone }) {
  const { call, user } = useSession();
  const [text, setText] = useState(item.text);
  const [save, state] = useAction(async () => {
    const reply = await call("memory/edit", { user_id: user, memory_id: item.id, text: text.trim() });
    onDone(true);
    return reply;
  });
  return (
    <ActionForm
      label={`Edit the text of summary ${item.id}`}
      onSubmit={save}
      state={state}
      submit="Save text"
      disabled={!text.trim() || text.trim() === item.text}
      onCancel={() => onDone(false)}
      after={<p class="note">Saved as a new version: the old text stays in the log, shown with “Show earlier versions”.</p>}
    >
      <Field label="Summary text">
        <TextArea required rows={4} maxLength="20000" value={text} onChange={setText} />
      </Field>
    </ActionForm>
  );
}

function Row({ item, indexed, conversation, onConvert, onChanged }) {
  const { call, user } = useSession();
  const [editing, setEditing] = useState(false);
  const [remove, state] = useAction(async () => {
    await call("memory/delete", { user_id: user, memory_id: item.id });
    onChanged();
  });
  const who = (ids) => ids.map((id) => nameOf(conversation, id)).join(", ");
  const editable = item.source === "memory" && item.status === "active";
  return (
    <tr>
      <td>
        {item.title ? <strong>{item.title}: </strong> : null}
        {editing ? (
          <EditText
            item={item}
            onDone={(saved) => {
              setEditing(false);
              if (saved) onChanged();
            }}
          />
        ) : (
          item.text
        )}
        <div class="meta">
          {item.message_ids.length ? `from ${item.message_ids.join(", ")}` : ""}
          {item.conversation_id ? ` · in ${item.conversation_id}` : ""}
          {item.end_at ? ` · ${when(item.start_at)} to ${when(item.end_at)}` : ""}
        </div>
      </td>
      <td>
        <Badge tone="info">{SOURCES[item.source]}</Badge>
        <Badge>{item.type}</Badge>
        {item.status !== "active" ? <Badge tone="warn">{item.status}</Badge> : null}
        {item.converted_to_lore ? <Badge tone="good">converted</Badge> : null}
        <div class="meta">{item.method || ""}</div>
        <IndexBadges status={indexed} />
      </td>
      <td class="meta">
        {item.character_id ? `known by ${nameOf(conversation, item.character_id)}` : ""}
        {item.participants.length ? `present: ${who(item.participants)}` : ""}
        {item.applies_to.length ? ` · applies to ${who(item.applies_to)}` : ""}
        {item.scope ? ` · ${item.scope}` : ""}
        {item.importance ? ` · importance ${item.importance}` : ""}
        {item.emotional_tags.length || item.tags.length ? ` · tags: ${[...item.emotional_tags, ...item.tags].join(", ")}` : ""}
      </td>
      <td>
        {item.source === "memory" ? (
          <div class="actions">
            {editable && !editing ? <ItemButton action="Edit text" item={`of summary ${item.id}`} onClick={() => setEditing(true)} /> : null}
            {!item.converted_to_lore ? (
              <button type="button" class="secondary" onClick={() => onConvert(item)}>
                Convert to lore
              </button>
            ) : null}
            <button type="button" class="danger" disabled={state.busy} onClick={remove}>
              Delete
            </button>
          </div>
        ) : null}
        <ErrorNote error={state.error} />
      </td>
    </tr>
  );
}

export function Memories() {
  const { call, user, conversation, setConversation } = useSession();
  const conversations = useConversations();
  const [source, setSource] = useState("all");
  const [type, setType] = useState("");
  const [bot, setBot] = useState("");
  const [converted, setConverted] = useState("");
  const [retired, setRetired] = useState(false);
  const [onlyHere, setOnlyHere] = useState(false);
  const [converting, setConverting] = useState(null);
  const here = onlyHere && conversation ? conversation.conversation_id : null;
  const filters = [user, source, type, bot, converted, retired, here];
  const items = useLoad(
    () =>
      user
        ? call("memory/list", {
            user_id: user,
            source,
            type: type || null,
            bot_id: bot || null,
            conversation_id: here,
            converted_to_lore: converted === "" ? null : converted === "yes",
            include_retired: retired,
            limit: 200,
          })
        : null,
    filters,
  );
  const listed = items.data ? items.data.items : [];
  const index = useIndexStatus(listed.map((m) => ({ source: m.source, id: m.id, text: m.text })));
  const bots = conversation ? conversation.bots : [];
  return (
    <>
      <div class="panel form-grid">
        <ConversationPicker conversations={conversations} value={conversation} onPick={setConversation} label="User (by conversation)" />
        <Field label="Source">
          <Select value={source} onChange={setSource} options={[{ value: "all", label: "everything" }, { value: "memory", label: "summaries and legacy lore" }, { value: "knowledge", label: "knowledge (facts)" }]} />
        </Field>
        <Field label="Type">
          <Select value={type} onChange={setType} placeholder="any type" options={TYPES} />
        </Field>
        <Field label="About bot">
          <Select value={bot} onChange={setBot} placeholder="any bot" options={bots.map((b) => ({ value: b.id, label: b.name || b.id }))} />
        </Field>
        <Field label="Converted to lore">
          <Select value={converted} onChange={setConverted} placeholder="either" options={[{ value: "yes", label: "converted" }, { value: "no", label: "not converted" }]} />
        </Field>
        <div class="field checkbox">
          <label>
            <input type="checkbox" checked={onlyHere} onChange={(e) => setOnlyHere(e.currentTarget.checked)} /> Only this conversation
            (its summaries, the lore made from them, the facts learned in it)
          </label>
        </div>
        <div class="field checkbox">
          <label>
            <input type="checkbox" checked={retired} onChange={(e) => setRetired(e.currentTarget.checked)} /> Show earlier versions
            (consolidated, stale and edited summaries)
          </label>
        </div>
      </div>
      {!user ? <p class="note">Choose a conversation: its user's memories are listed.</p> : null}
      {items.loading && user ? <Loading what="Loading memories" /> : null}
      <ErrorNote error={items.error} />
      {items.data ? (
        <DataTable caption={`Memories of user ${user}: ${items.data.total}`} columns={["Memory", "Kind", "Who", "Actions"]}>
          {/* Keyed by the memory: a row's state (an open editor) stays with its memory when a reload (a new
              filter, another row deleted) changes the list; by position it moved to whichever row came there. */}
          {items.data.items.map((m) => (
            <Row key={`${m.source}:${m.id}`} item={m} indexed={index.statuses.get(`${m.source}:${m.id}`)} conversation={conversation} onConvert={setConverting} onChanged={items.reload} />
          ))}
        </DataTable>
      ) : null}
      <IndexError error={index.error} />
      {source !== "knowledge" ? <Remembered bot={bot} /> : null}
      <Dialog open={!!converting} title="Convert to legacy lore" onClose={() => setConverting(null)}>
        {converting ? (
          <Convert
            item={converting}
            conversation={conversation}
            onDone={(saved) => {
              setConverting(null);
              if (saved) items.reload();
            }}
          />
        ) : null}
      </Dialog>
    </>
  );
}

// Lore: the tenant's books (import a lorebook or card file, export, attach to a bot), a book's entries with the
// entry editor (lore_entries.jsx), and a "test activation" box that shows which entries a chat text fires and
// why (lore.test_activation, a dry run); create, rename, attach to a conversation and delete books.
import { useState } from "preact/hooks";
import { fileBase64 } from "../api.js";
import { useSession } from "../session.js";
import { ActionForm, DataTable, ItemButton, TextArea, TextInput } from "../forms.jsx";
import { Badge, Dialog, ErrorNote, Field, Loading, Select, short, useAction, useLoad } from "../ui.jsx";
import { Documents } from "./documents.jsx";
import { Entries, POSITIONS } from "./lore_entries.jsx";

const idList = (text) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

function download(name, data) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
  const link = Object.assign(document.createElement("a"), { href: url, download: `${name}.json` });
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function ImportBook({ owner, onImported }) {
  const { call } = useSession();
  const [file, setFile] = useState(null);
  const [name, setName] = useState("");
  const [bots, setBots] = useState("");
  const [run, state] = useAction(async () => {
    const text = file.name.toLowerCase().endsWith(".json") ? await file.text() : null;
    let data = null;
    try {
      data = text === null ? null : JSON.parse(text);
    } catch {
      data = null; // not JSON after all: mnemo reads the bytes and says what is wrong with them
    }
    const body = { owner_user_id: owner, name: name.trim() || file.name.replace(/\.[^.]+$/, ""), attach_to_bots: idList(bots) };
    const reply = await call("lore/import", data && typeof data === "object" ? { ...body, data } : { ...body, data_base64: await fileBase64(file) });
    onImported(reply.lorebook_id);
    return reply;
  });
  return (
    <ActionForm
      class="panel form-grid"
      label="Import a lorebook"
      onSubmit={run}
      state={state}
      submit="Import"
      busy="Importing…"
      done={(r) => `Imported ${r.entries} entries (${r.format}).`}
      disabled={!file}
      after={state.result && state.result.warnings.length ? <Warnings warnings={state.result.warnings} /> : null}
    >
      <Field label="Lorebook file" hint="SillyTavern World Info, a character card (JSON or PNG), NovelAI, Agnai, Risu">
        <input type="file" accept=".json,.png,.lorebook,application/json,image/png" required onChange={(e) => setFile(e.currentTarget.files[0] || null)} />
      </Field>
      <Field label="Book name" hint="the file's name when empty">
        <TextInput value={name} onChange={setName} />
      </Field>
      <BotsField label="Attach to bots" value={bots} onChange={setBots} />
    </ActionForm>
  );
}

function Warnings({ warnings }) {
  return (
    <ul class="meta" aria-label="Import warnings">
      {warnings.map((w) => (
        <li>
          {w.uid === null ? "book" : `entry ${w.uid}`}: {w.message}
        </li>
      ))}
    </ul>
  );
}

function BotsField({ label, value, onChange }) {
  return (
    <Field label={label} hint="bot ids, comma-separated (optional)">
      <TextInput value={value} onChange={onChange} />
    </Field>
  );
}

function CreateBook({ owner, onCreated }) {
  const { call } = useSession();
  const [name, setName] = useState("");
  const [bots, setBots] = useState("");
  const [create, state] = useAction(async () => {
    const reply = await call("lore/book/create", { owner_user_id: owner, name: name.trim(), attach_to_bots: idList(bots) });
    setName("");
    onCreated(reply.lorebook_id);
    return reply;
  });
  return (
    <ActionForm
      class="panel form-grid"
      label="Create a book"
      onSubmit={create}
      state={state}
      submit="Create book"
      done={(r) => (r.created ? "Created." : "That book already exists.")}
      disabled={!name.trim()}
    >
      <Field label="New book" hint="an empty book: add its entries with the entry editor">
        <TextInput maxLength="512" value={name} onChange={setName} />
      </Field>
      <BotsField label="Bots to attach it to" value={bots} onChange={setBots} />
    </ActionForm>
  );
}

function TestActivation({ books, bots }) {
  const { call } = useSession();
  const [text, setText] = useState("");
  const [source, setSource] = useState("all");
  const [run, state] = useAction(async () => {
    const body = { text, max_tokens: 8000 };
    const ids = source === "all" ? books.map((b) => b.lorebook_id) : [source];
    const reply = source.startsWith("bot:")
      ? await call("lore/test_activation", { ...body, bot_id: source.slice(4) })
      : await call("lore/test_activation", { ...body, lorebook_ids: ids.slice(0, 50) });
    return { ...reply, text }; // the answer names the text it is for
  });
  const names = Object.fromEntries(books.map((b) => [b.lorebook_id, b.name]));
  const reply = state.result;
  return (
    <section class="panel" aria-labelledby="test-activation">
      <h2 id="test-activation">Test activation</h2>
      <form class="form-grid" onSubmit={(e) => (e.preventDefault(), run())}>
        <Field label="Chat text" hint="a message as a user would write it; nothing is kept">
          <TextArea rows="3" required value={text} onChange={setText} />
        </Field>
        <Field label="Books to try">
          <Select
            value={source}
            onChange={setSource}
            options={[
              { value: "all", label: "every book listed" },
              ...books.map((b) => ({ value: b.lorebook_id, label: b.name })),
              ...bots.map((b) => ({ value: `bot:${b}`, label: `the books attached to bot ${b}` })),
            ]}
          />
        </Field>
        <div class="actions">
          <button type="submit" disabled={state.busy || !text.trim() || (!books.length && !source.startsWith("bot:"))}>
            {state.busy ? "Testing…" : "Test activation"}
          </button>
          <ErrorNote error={state.error} />
        </div>
      </form>
      {reply ? (
        <>
          <p class="note" role="status">
            {reply.entries.length} of {reply.scanned_entries} entries fired by “{short(reply.text, 80)}” ·{" "}
            {reply.tokens_used} / {reply.budget} lore
            tokens{reply.overflowed ? " · the budget cut some matches" : ""}
            {reply.degraded.length ? ` · degraded: ${reply.degraded.join(", ")}` : ""}
          </p>
          <ol class="lore-fired" aria-label="Entries the text fired">
            {reply.entries.map((e) => (
              <li>
                <Badge tone="info">{e.why}</Badge> <strong>{e.comment || `entry ${e.uid}`}</strong>{" "}
                <span class="meta">
                  in {names[e.lorebook_id] || e.lorebook_id} · {e.tokens} tokens ·{" "}
                  {e.placed ? POSITIONS[e.position] : "placed nowhere (its position)"}
                </span>
                <div>{short(e.content, 300)}</div>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </section>
  );
}

// Renaming acts as the book's owner (lore.book.rename), as its other changes do.
function RenameBook({ book, onDone }) {
  const { call } = useSession();
  const [name, setName] = useState(book.name);
  const [save, state] = useAction(async () => {
    await call("lore/book/rename", { user_id: book.owner_user_id, lorebook_id: book.lorebook_id, name: name.trim() });
    onDone(true);
  });
  return (
    <ActionForm onSubmit={save} state={state} submit="Rename" disabled={!name.trim()} onCancel={() => onDone(false)}>
      <Field label="New name">
        <TextInput required maxLength="512" value={name} onChange={setName} />
      </Field>
    </ActionForm>
  );
}

export function Lore() {
  const { call, user, conversation } = useSession();
  const [owner, setOwner] = useState(user || "workbench");
  const [open, setOpen] = useState(null);
  const [renaming, setRenaming] = useState(null);
  const books = useLoad(() => call("lore/list", { limit: 1000 }), []);
  const list = books.data ? books.data.books : [];
  const bots = [...new Set([...(conversation ? conversation.bots.map((b) => b.id) : []), ...list.flatMap((b) => b.bot_ids)])];
  const [attach, attaching] = useAction(async (book, bot) => {
    await call("lore/attach", { lorebook_id: book.lorebook_id, bot_ids: [bot] });
    books.reload();
  });
  // A book applies to one conversation when its owner owns the conversation (a user's own book).
  const here = conversation ? { user_id: conversation.user_id, conversation_id: conversation.conversation_id } : null;
  const attachedHere = (b) => here && b.conversations.some((c) => c.user_id === here.user_id && c.conversation_id === here.conversation_id);
  const [toConversation, placing] = useAction(async (book, detach) => {
    const body = { user_id: book.owner_user_id, lorebook_id: book.lorebook_id, conversation: here };
    await call(detach ? "lore/detach" : "lore/attach", body);
    books.reload();
  });
  const [removeBook, removing] = useAction(async (book) => {
    await call("lore/book/delete", { user_id: book.owner_user_id, lorebook_id: book.lorebook_id });
    if (open === book.lorebook_id) setOpen(null);
    books.reload();
  });
  return (
    <>
      <div class="panel form-grid">
        <Field label="Acting user" hint="the owner of what you import or upload (a book's changes are its owner's)">
          <TextInput required value={owner} onChange={setOwner} />
        </Field>
      </div>
      <ImportBook owner={owner} onImported={(id) => (setOpen(id), books.reload())} />
      <CreateBook owner={owner} onCreated={(id) => (setOpen(id), books.reload())} />
      {books.loading ? <Loading what="Loading books" /> : null}
      <ErrorNote error={books.error || attaching.error || placing.error || removing.error} />
      <DataTable caption={<>The tenant's books: {books.data ? books.data.total : "…"}</>} columns={["Book", "Attached to", "Actions"]}>
        {list.map((b) => (
          <tr>
            <td>
              <strong>{b.name}</strong>
              <div class="meta">
                {b.entries} entries · {b.format} · owner {b.owner_user_id} · version {b.version}
              </div>
            </td>
            <td class="meta">
              {b.bot_ids.length ? `bots: ${b.bot_ids.join(", ")}` : "no bot"}
              {b.conversations.length ? ` · conversations: ${b.conversations.map((c) => c.conversation_id).join(", ")}` : ""}
            </td>
            <td>
              <div class="actions">
                <ItemButton action="Entries" item={`of ${b.name}`} aria-expanded={open === b.lorebook_id} onClick={() => setOpen(open === b.lorebook_id ? null : b.lorebook_id)} />
                <ItemButton action="Export" item={b.name} onClick={() => call("lore/export", { lorebook_id: b.lorebook_id }).then((r) => download(b.name, r.data))} />
                {bots.filter((bot) => !b.bot_ids.includes(bot)).slice(0, 3).map((bot) => (
                  <button type="button" class="secondary" onClick={() => attach(b, bot)}>
                    Attach to {bot}
                  </button>
                ))}
                {here && here.user_id === b.owner_user_id ? (
                  <button type="button" class="secondary" disabled={placing.busy} onClick={() => toConversation(b, attachedHere(b))}>
                    {attachedHere(b) ? "Detach from" : "Attach to"} {here.conversation_id}
                    <span class="sr-only"> ({b.name})</span>
                  </button>
                ) : null}
                <ItemButton action="Rename" item={`book ${b.name}`} onClick={() => setRenaming(b)} />
                <ItemButton action="Delete" item={`book ${b.name}`} tone="danger" disabled={removing.busy} onClick={() => removeBook(b)} />
              </div>
            </td>
          </tr>
        ))}
      </DataTable>
      <Dialog open={!!renaming} title={renaming ? `Rename ${renaming.name}` : "Rename"} onClose={() => setRenaming(null)}>
        {renaming ? (
          <RenameBook
            book={renaming}
            onDone={(renamed) => {
              setRenaming(null);
              if (renamed) books.reload();
            }}
          />
        ) : null}
      </Dialog>
      {list.filter((b) => b.lorebook_id === open).map((b) => (
        <Entries book={b} onChanged={books.reload} />
      ))}
      <TestActivation books={list} bots={bots} />
      <Documents owner={owner} bots={bots} onChanged={books.reload} />
    </>
  );
}

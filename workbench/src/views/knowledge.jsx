// Knowledge: per character, what it knows from this user's conversations, with scope and provenance; add a fact
// by hand, edit (a new version), retract, promote to a campaign and back, and each fact's audit trail.
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { ActionForm, DataTable, TextArea, TextInput, tagList } from "../forms.jsx";
import { Badge, Dialog, ErrorNote, Field, Loading, Select, useAction, useLoad, when } from "../ui.jsx";
import { ConversationPicker, nameOf, useConversations } from "./shared.jsx";

const TYPES = ["semantic", "episodic", "declarative", "procedural"];

function AddFact({ character, onAdded }) {
  const { call, user } = useSession();
  const [text, setText] = useState("");
  const [type, setType] = useState("semantic");
  const [tags, setTags] = useState("");
  const [scope, setScope] = useState("player");
  const [campaign, setCampaign] = useState("");
  const [add, state] = useAction(async () => {
    const scopes = { player: `player:${user}`, campaign: `campaign:${campaign}`, character: `character:${character}` };
    const reply = await call("knowledge/fact/add", {
      user_id: user,
      character_id: character,
      text,
      fact_type: type,
      tags: tagList(tags),
      scope: scopes[scope],
    });
    setText("");
    onAdded();
    return reply;
  });
  return (
    <ActionForm
      class="panel form-grid"
      label="Add a fact by hand"
      onSubmit={add}
      state={state}
      submit="Add fact"
      busy="Adding…"
      done="Added."
      disabled={!text.trim()}
    >
      <Field label="New fact" hint="a standalone statement the character knows from now on">
        <TextArea required maxLength="2000" value={text} onChange={setText} />
      </Field>
      <TypeAndTags type={type} setType={setType} tags={tags} setTags={setTags} />
      <Field label="Known in" hint="this user's conversations, a campaign, or whoever the character talks to">
        <Select
          value={scope}
          onChange={setScope}
          options={[
            { value: "player", label: "this user's conversations" },
            { value: "campaign", label: "a campaign" },
            { value: "character", label: "every conversation of the character" },
          ]}
        />
      </Field>
      {scope === "campaign" ? (
        <Field label="Campaign id">
          <TextInput required value={campaign} onChange={setCampaign} />
        </Field>
      ) : null}
    </ActionForm>
  );
}

function TypeAndTags({ type, setType, tags, setTags }) {
  return (
    <>
      <Field label="Type">
        <Select value={type} onChange={setType} options={TYPES} />
      </Field>
      <Field label="Tags" hint="comma-separated">
        <TextInput value={tags} onChange={setTags} />
      </Field>
    </>
  );
}

function EditFact({ fact, onDone }) {
  const { call, user } = useSession();
  const [text, setText] = useState(fact.text);
  const [type, setType] = useState(fact.fact_type);
  const [tags, setTags] = useState(fact.tags.join(", "));
  const [confidence, setConfidence] = useState(fact.confidence);
  const [save, state] = useAction(async () => {
    await call("knowledge/fact/edit", {
      user_id: user,
      fact_id: fact.fact_id,
      text,
      fact_type: type,
      tags: tagList(tags),
      confidence: Number(confidence),
    });
    onDone(true);
  });
  return (
    <ActionForm onSubmit={save} state={state} submit="Save new version" onCancel={() => onDone(false)}>
      <p class="note">Saving makes a new version; the old one stays in the log and in the audit trail.</p>
      <Field label="Fact text">
        <TextArea rows="3" required value={text} onChange={setText} />
      </Field>
      <TypeAndTags type={type} setType={setType} tags={tags} setTags={setTags} />
      <Field label="Confidence" hint="0 to 1">
        <TextInput type="number" min="0" max="1" step="0.05" value={confidence} onChange={setConfidence} />
      </Field>
    </ActionForm>
  );
}

function History({ fact }) {
  const { call, user } = useSession();
  const trail = useLoad(() => call("knowledge/fact/history", { user_id: user, fact_id: fact.fact_id }), [fact.fact_id]);
  if (trail.loading) return <Loading what="Reading the log" />;
  if (trail.error) return <ErrorNote error={trail.error} />;
  return (
    <ol class="audit" aria-label="Audit trail">
      {trail.data.entries.map((e) => (
        <li>
          <span class="meta">{when(e.at)}</span> <strong>{e.summary}</strong>
          {e.by ? <span class="meta"> by {e.by}</span> : null}
          {e.text ? <div>“{e.text}”</div> : null}
          <div class="meta">
            {e.event} · <code>{e.fact_id}</code>
            {e.scope ? ` · ${e.scope}` : ""}
          </div>
        </li>
      ))}
    </ol>
  );
}

function FactRow({ fact, conversation, onChanged, onEdit, onHistory }) {
  const { call, user } = useSession();
  const [campaign, setCampaign] = useState("");
  const [act, state] = useAction(async (path, body) => {
    await call(path, { user_id: user, fact_id: fact.fact_id, ...body });
    onChanged();
  });
  const active = fact.status === "active";
  return (
    <tr>
      <td>
        {fact.text}
        <div class="meta">
          {fact.fact_type}
          {fact.tags.length ? ` · ${fact.tags.join(", ")}` : ""} · confidence {fact.confidence}
        </div>
      </td>
      <td>
        <Badge tone={active ? "good" : "plain"}>{fact.status}</Badge>
        <div class="meta">{fact.scope}</div>
      </td>
      <td class="meta">
        {fact.method.startsWith("manual:") ? `added by hand by ${fact.method.slice(7)}` : `learned (${fact.method})`}
        {fact.conversation_id ? ` in ${fact.conversation_id}` : ""}
        {fact.message_ids.length ? ` from ${fact.message_ids.join(", ")}` : ""} · {when(fact.learned_at)}
        {fact.revises ? ` · edits ${fact.revises.slice(0, 8)}` : ""}
      </td>
      <td>
        <div class="actions">
          <button type="button" class="secondary" onClick={() => onHistory(fact)}>
            History
          </button>
          {active ? (
            <>
              <button type="button" class="secondary" onClick={() => onEdit(fact)}>
                Edit
              </button>
              <button type="button" class="danger" onClick={() => act("knowledge/fact/retract", {})}>
                Retract
              </button>
              {fact.scope.startsWith("campaign:") ? (
                <button type="button" class="secondary" onClick={() => act("memory/unpromote", {})}>
                  Unpromote
                </button>
              ) : fact.scope === `player:${user}` ? (
                <form
                  class="inline"
                  onSubmit={(e) => {
                    e.preventDefault();
                    act("memory/promote", { campaign_id: campaign });
                  }}
                >
                  <label>
                    <span class="sr-only">Campaign to promote to</span>
                    <TextInput placeholder="campaign" required value={campaign} onChange={setCampaign} />
                  </label>
                  <button type="submit" class="secondary">
                    Promote
                  </button>
                </form>
              ) : null}
            </>
          ) : null}
        </div>
        <ErrorNote error={state.error} />
      </td>
    </tr>
  );
}

export function Knowledge() {
  const { call, user, conversation, setConversation } = useSession();
  const conversations = useConversations();
  const characters = conversation ? [...conversation.bots, ...conversation.personas] : [];
  const [picked, setPicked] = useState("");
  const [inactive, setInactive] = useState(false);
  const [editing, setEditing] = useState(null);
  const [history, setHistory] = useState(null);
  const character = picked || (characters[0] && characters[0].id) || "";
  const facts = useLoad(
    () =>
      user && character
        ? call("knowledge/fact/list", { user_id: user, character_id: character, include_inactive: inactive, limit: 200 })
        : null,
    [user, character, inactive],
  );
  return (
    <>
      <div class="panel form-grid">
        <ConversationPicker conversations={conversations} value={conversation} onPick={setConversation} label="User (by conversation)" />
        <Field label="Character">
          <Select value={character} onChange={setPicked} options={characters.map((c) => ({ value: c.id, label: c.name || c.id }))} />
        </Field>
        <div class="field checkbox">
          <label>
            <input type="checkbox" checked={inactive} onChange={(e) => setInactive(e.currentTarget.checked)} /> Show
            superseded, consolidated and retired facts
          </label>
        </div>
      </div>
      {character ? <AddFact character={character} onAdded={facts.reload} /> : null}
      {facts.loading ? <Loading what="Loading facts" /> : null}
      <ErrorNote error={facts.error} />
      {facts.data ? (
        <DataTable
          caption={`What ${nameOf(conversation, character)} knows from user ${user}: ${facts.data.total} facts`}
          columns={["Fact", "Status and scope", "Provenance", "Actions"]}
        >
          {facts.data.facts.map((f) => (
            <FactRow key={f.fact_id} fact={f} conversation={conversation} onChanged={facts.reload} onEdit={setEditing} onHistory={setHistory} />
          ))}
        </DataTable>
      ) : null}
      <Dialog open={!!editing} title="Edit fact" onClose={() => setEditing(null)}>
        {editing ? (
          <EditFact
            fact={editing}
            onDone={(saved) => {
              setEditing(null);
              if (saved) facts.reload();
            }}
          />
        ) : null}
      </Dialog>
      <Dialog open={!!history} title="Audit trail" onClose={() => setHistory(null)}>
        {history ? <History fact={history} /> : null}
        <div class="actions">
          <button type="button" class="secondary" onClick={() => setHistory(null)}>
            Close
          </button>
        </div>
      </Dialog>
    </>
  );
}

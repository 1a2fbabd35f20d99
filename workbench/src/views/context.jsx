// Context: the debug panel. For a bot, persona and message, the context as the model would see it, section by
// section with tokens against the budget, every item with its score and origin, each lore entry with why it fired,
// what the budget cut and what was degraded. With a second bot, "what does this character know?" side by side.
// "As of message": the context as it would have been at an earlier message (`as_of_message_id`): the history ends
// with it, and the summaries, facts and memories made after it are left out (docs/workbench.md).
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { DataTable, TextArea, TextInput } from "../forms.jsx";
import { Badge, ErrorNote, Field, Select, TokenBar, short, useAction, useLoad, when } from "../ui.jsx";
import { ConversationPicker, nameOf, useConversations } from "./shared.jsx";

const ORIGIN = {
  message: "a message of the conversation",
  summary: "a summary",
  fact: "a fact",
  knowledge: "the character's knowledge",
  lore: "a lorebook entry",
  document: "a document",
  legacy_memory: "a memory kept as lore",
  persona: "the persona",
  system: "the character",
  memory: "a memory written through the memory API",
};

function Sections({ reply, budget }) {
  return (
    <DataTable caption={<>Sections, in injection order ({reply.token_count} of {budget} tokens)</>} columns={["Section", "Tokens", "Text"]}>
      {reply.sections.map((s) => (
        <tr>
          <th scope="row">{s.name}</th>
          <td>
            <TokenBar used={s.tokens} budget={budget} label={s.name} />
          </td>
          <td>
            <details>
              <summary>{s.text.slice(0, 80) || "(empty)"}</summary>
              <pre>{s.text}</pre>
            </details>
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** Why a lore entry fired, in words, from the source's `detail` (`key: compass`, `vector: 0.71`, `constant`...). */
export function loreReason(detail) {
  if (!detail) return "activated";
  return detail;
}

function Knows({ reply }) {
  const knowledge = reply.sections.find((s) => s.name === "knowledge");
  return (
    <>
      <h3>What this character knows</h3>
      {knowledge ? <pre class="knows">{knowledge.text}</pre> : <p class="note">No fact in this context.</p>}
    </>
  );
}

function Sources({ reply }) {
  // A remembered memory among the lore is reported as kind "lore" (v1's kinds are frozen), exact_kind "memory".
  const lore = reply.sources.filter(
    (s) => !s.exact_kind && (s.kind === "lore" || s.kind === "legacy_memory" || s.kind === "document"),
  );
  return (
    <>
      <h3>Lore that fired</h3>
      {lore.length ? (
        <ul class="lore-fired" aria-label="Lore entries that fired">
          {lore.map((s) => (
            <li>
              <Badge tone="info">{s.kind}</Badge> <code>{s.id}</code>: <strong>{loreReason(s.detail)}</strong>
              {s.score !== null && s.score !== undefined ? ` (similarity ${s.score.toFixed(3)})` : ""}
            </li>
          ))}
        </ul>
      ) : (
        <p class="note">No lore entry fired.</p>
      )}
      <DataTable caption="Every item and where it came from" columns={["Kind", "Id", "Score", "Why / origin"]}>
        {reply.sources.map((s) => (
          <tr>
            <td>{s.exact_kind || s.kind}</td>
            <td>
              <code>{s.id}</code>
            </td>
            <td>{s.score === null || s.score === undefined ? "—" : s.score.toFixed(3)}</td>
            <td>
              {s.detail || ORIGIN[s.exact_kind || s.kind] || ""}
              {s.message_ids.length ? <span class="meta"> · from {s.message_ids.join(", ")}</span> : null}
            </td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}

function Degraded({ reply }) {
  const cut = reply.degraded.filter((d) => d.startsWith("lore:") || d.startsWith("knowledge:"));
  const down = reply.degraded.filter((d) => !cut.includes(d));
  return (
    <>
      <h3>Cut by the budget</h3>
      {cut.length ? (
        <ul>
          {cut.map((d) => (
            <li>
              <code>{d}</code> did not fit in the budget
            </li>
          ))}
        </ul>
      ) : (
        <p class="note">Nothing the budget had to cut.</p>
      )}
      <h3>Degraded</h3>
      {down.length ? (
        <ul>
          {down.map((d) => (
            <li>
              <Badge tone="bad">{d}</Badge> could not be served
            </li>
          ))}
        </ul>
      ) : (
        <p class="note">Every part was served.</p>
      )}
    </>
  );
}

function ContextColumn({ title, result, budget, asOf }) {
  if (result.error) return <ErrorNote error={result.error} />;
  if (!result.result) return null;
  const reply = result.result;
  return (
    <section class="ctx" aria-label={title}>
      <h2>{title}</h2>
      <p class="meta">
        {asOf ? `As of message #${asOf.index} (${when(asOf.created_at)}): nothing after it` : "As the conversation stands now"}
      </p>
      <TokenBar used={reply.token_count} budget={budget} label="whole context" />
      <Knows reply={reply} />
      <Sources reply={reply} />
      <Sections reply={reply} budget={budget} />
      <Degraded reply={reply} />
    </section>
  );
}

/** The conversation's messages (its first 500), for the "As of message" picker. */
function useMessages(conversation) {
  const { call } = useSession();
  return useLoad(
    () =>
      conversation
        ? call("conversation/timeline", {
            user_id: conversation.user_id,
            conversation_id: conversation.conversation_id,
            limit: 500,
          })
        : Promise.resolve(null),
    [conversation && conversation.user_id, conversation && conversation.conversation_id],
  );
}

function AsOfPicker({ messages, value, onChange }) {
  if (messages.error) return <ErrorNote error={messages.error} />;
  const list = messages.data ? messages.data.messages.filter((m) => !m.deleted) : [];
  return (
    <Field label="As of message" hint="the context as it was at that message: what came after it is left out">
      <Select
        value={value}
        onChange={onChange}
        placeholder="Now: the whole conversation"
        options={list.map((m) => ({
          value: m.message_id,
          label: `#${m.index} ${when(m.created_at)} ${m.author_name}: ${short(m.content, 60)}`,
        }))}
      />
    </Field>
  );
}

export function ContextDebug() {
  const { call, conversation, setConversation } = useSession();
  const conversations = useConversations();
  const bots = conversation ? conversation.bots : [];
  const personas = conversation ? conversation.personas : [];
  const [bot, setBot] = useState("");
  const [other, setOther] = useState("");
  const [persona, setPersona] = useState("");
  const [text, setText] = useState("");
  const [budget, setBudget] = useState(2000);
  const [campaign, setCampaign] = useState("");
  const messages = useMessages(conversation);
  const [picked, setPicked] = useState("");
  // A message of another conversation is never sent: the picker's value counts only while it is listed.
  const listed = messages.data ? messages.data.messages : [];
  const asOf = listed.some((m) => m.message_id === picked) ? picked : "";
  const assemble = (botId) =>
    call("context/assemble", {
      user_id: conversation.user_id,
      conversation_id: conversation.conversation_id,
      bot_id: botId,
      persona_id: persona || (personas[0] && personas[0].id) || null,
      campaign_id: campaign || null,
      user_message: text,
      max_tokens: Number(budget),
      ...(asOf ? { as_of_message_id: asOf } : {}),
    });
  const [runFirst, first] = useAction(assemble);
  const [runSecond, second] = useAction(assemble);
  const chosen = bot || (bots[0] && bots[0].id) || "";
  const [shownAsOf, setShownAsOf] = useState(null); // what the shown replies were asked as of
  const submit = (e) => {
    e.preventDefault();
    setShownAsOf(listed.find((m) => m.message_id === asOf) || null);
    runFirst(chosen);
    if (other) runSecond(other);
  };
  const botOptions = bots.map((b) => ({ value: b.id, label: b.name || b.id }));
  return (
    <>
      <form class="panel form-grid" onSubmit={submit} aria-label="Context request">
        <ConversationPicker conversations={conversations} value={conversation} onPick={setConversation} />
        <Field label="Bot about to speak">
          <Select value={chosen} onChange={setBot} options={botOptions} />
        </Field>
        <Field label="Compare with bot" hint="a second bot, side by side">
          <Select value={other} onChange={setOther} options={botOptions} placeholder="No comparison" />
        </Field>
        <Field label="Persona">
          <Select
            value={persona}
            onChange={setPersona}
            options={personas.map((p) => ({ value: p.id, label: p.name || p.id }))}
            placeholder="The conversation's first"
          />
        </Field>
        <Field label="Campaign" hint="optional">
          <TextInput value={campaign} onChange={setCampaign} />
        </Field>
        <Field label="Token budget">
          <TextInput type="number" min="64" max="1000000" value={budget} onChange={setBudget} />
        </Field>
        <div class="wide">
          <AsOfPicker messages={messages} value={asOf} onChange={setPicked} />
        </div>
        <div class="wide">
          <Field label="Message being answered" hint="or empty: the conversation as it stands">
            <TextArea value={text} onChange={setText} />
          </Field>
        </div>
        <div class="actions">
          <button type="submit" disabled={!conversation || !chosen || first.busy}>
            {first.busy ? "Assembling…" : "Assemble context"}
          </button>
        </div>
      </form>
      <div class={other ? "columns two" : "columns"}>
        <ContextColumn title={`Context for ${nameOf(conversation, chosen)}`} result={first} budget={Number(budget)} asOf={shownAsOf} />
        {other ? (
          <ContextColumn title={`Context for ${nameOf(conversation, other)}`} result={second} budget={Number(budget)} asOf={shownAsOf} />
        ) : null}
      </div>
    </>
  );
}

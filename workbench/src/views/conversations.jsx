// Conversations: the tenant's conversations, and one's timeline with who was present at each message, persona
// switches, summaries as spans with their audience, facts learned at the message they came from, swipes, forks.
import { useSession } from "../session.js";
import { Badge, ErrorNote, Loading, useLoad, when } from "../ui.jsx";
import { conversationKey, nameOf, useConversations } from "./shared.jsx";

function ConversationList({ conversations, picked, onPick }) {
  if (conversations.loading) return <Loading what="Loading conversations" />;
  if (conversations.error) return <ErrorNote error={conversations.error} />;
  const list = conversations.data.conversations;
  if (!list.length) return <p class="note">No conversations for this tenant yet.</p>;
  return (
    <ul class="picklist" aria-label="Conversations">
      {list.map((c) => {
        const current = picked && conversationKey(picked) === conversationKey(c);
        return (
          <li>
            <button type="button" aria-pressed={current ? "true" : "false"} onClick={() => onPick(c)}>
              <strong>{c.conversation_id}</strong>
              <span class="meta">
                user {c.user_id} · {c.messages} messages · {when(c.last_message_at)}
              </span>
              <span class="meta">{c.bots.map((b) => b.name || b.id).join(", ")}</span>
            </button>
          </li>
        );
      })}
    </ul>
  );
}

function Span({ summary, conversation }) {
  const audience = summary.audience.includes("*")
    ? "everyone"
    : summary.audience.map((a) => nameOf(conversation, a)).join(", ");
  return (
    <aside class="span" aria-label={`Summary of messages ${summary.first_index} to ${summary.last_index}`}>
      <p class="meta">
        <Badge tone="info">summary</Badge> {summary.summary_type} · messages {summary.first_index}–{summary.last_index} ·
        visible to {audience}
      </p>
      <p>{summary.text}</p>
    </aside>
  );
}

function Message({ m, conversation, spans }) {
  const who = m.role === "user" ? nameOf(conversation, m.persona_id || m.author_id) : m.author_name || m.author_id;
  return (
    <li class={`msg ${m.role}${m.deleted ? " deleted" : ""}`} data-index={m.index}>
      <div class="msg-head">
        <span class="index" aria-label={`message ${m.index}`}>
          #{m.index}
        </span>
        <strong>{who}</strong>
        <span class="meta">
          {m.role} · {when(m.created_at)} · {m.tokens} tokens
        </span>
        {m.persona_switch ? <Badge tone="warn">persona: {nameOf(conversation, m.persona_id) || "none"}</Badge> : null}
        {m.edited_at ? <Badge>edited</Badge> : null}
        {m.deleted ? <Badge tone="bad">deleted</Badge> : null}
        {spans.length ? <Badge tone="info">in {spans.length} summary{spans.length > 1 ? "ies" : ""}</Badge> : null}
      </div>
      <p class="meta">present: {m.present.map((b) => nameOf(conversation, b)).join(", ") || "no bot"}</p>
      <p class="content">{m.content}</p>
      {m.alternatives.length ? (
        <details>
          <summary>{m.alternatives.length} alternatives (swipes)</summary>
          <ol>
            {m.alternatives.map((a) => (
              <li>
                {a.current ? <Badge tone="good">current</Badge> : null}
                {a.deleted ? <Badge tone="bad">deleted</Badge> : null} <code>{a.message_id}</code>: {a.content}
              </li>
            ))}
          </ol>
        </details>
      ) : null}
      {m.facts.length ? (
        <ul class="facts" aria-label={`Facts learned from message ${m.index}`}>
          {m.facts.map((f) => (
            <li>
              <Badge tone={f.status === "active" ? "good" : "plain"}>{f.status}</Badge>{" "}
              <strong>{nameOf(conversation, f.character_id)}</strong> learned: {f.text}{" "}
              <span class="meta">
                ({f.fact_type}, {f.scope}, {f.method})
              </span>
            </li>
          ))}
        </ul>
      ) : null}
    </li>
  );
}

function Timeline({ picked }) {
  const { call, setConversation } = useSession();
  const timeline = useLoad(
    () => call("conversation/timeline", { user_id: picked.user_id, conversation_id: picked.conversation_id, limit: 500 }),
    [picked.user_id, picked.conversation_id],
  );
  if (timeline.loading) return <Loading what="Loading the timeline" />;
  if (timeline.error) return <ErrorNote error={timeline.error} />;
  const { conversation, messages, summaries, forks, next_index } = timeline.data;
  const startsAt = new Map();
  for (const s of summaries) startsAt.set(s.first_index, [...(startsAt.get(s.first_index) || []), s]);
  const open = (id) => setConversation({ ...conversation, conversation_id: id });
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">
        {conversation.conversation_id} <span class="meta">user {conversation.user_id}</span>
      </h2>
      <p class="meta">
        bots: {conversation.bots.map((b) => b.name || b.id).join(", ") || "none"} · personas:{" "}
        {conversation.personas.map((p) => p.name || p.id).join(", ") || "none"}
        {conversation.forked_from ? ` · forked from ${conversation.forked_from}` : ""}
      </p>
      {forks.length ? (
        <ul class="forks" aria-label="Fork family">
          {forks.map((f) => (
            <li>
              <button type="button" class="link" onClick={() => open(f.conversation_id)}>
                {f.conversation_id}
              </button>{" "}
              forks {f.parent_conversation_id} after message {f.fork_index}
            </li>
          ))}
        </ul>
      ) : null}
      <ol class="timeline" aria-label="Messages">
        {messages.map((m) => (
          <>
            {(startsAt.get(m.index) || []).map((s) => (
              <li class="span-row">
                <Span summary={s} conversation={conversation} />
              </li>
            ))}
            <Message
              m={m}
              conversation={conversation}
              spans={summaries.filter((s) => s.first_index <= m.index && m.index <= s.last_index)}
            />
          </>
        ))}
      </ol>
      {next_index !== null ? <p class="note">Showing the first {messages.length} messages.</p> : null}
    </section>
  );
}

export function Conversations() {
  const { conversation, setConversation } = useSession();
  const conversations = useConversations();
  return (
    <div class="split">
      <section aria-label="Conversation list" class="side">
        <ConversationList conversations={conversations} picked={conversation} onPick={setConversation} />
      </section>
      <div class="main-col">
        {conversation ? <Timeline picked={conversation} /> : <p class="note">Choose a conversation.</p>}
      </div>
    </div>
  );
}

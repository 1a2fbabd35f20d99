// Pieces several views use: the conversation picker and the names of a conversation's characters.
import { useLoad, Select, Field, ErrorNote } from "../ui.jsx";
import { useSession } from "../session.js";

/** The tenant's conversations (newest first), loaded once per view. */
export function useConversations() {
  const { call } = useSession();
  return useLoad(() => call("conversation/list", { limit: 200 }), []);
}

export function conversationKey(c) {
  return `${c.user_id}\u001f${c.conversation_id}`;
}

/** A select of the tenant's conversations; `onPick(conversation)`. */
export function ConversationPicker({ conversations, value, onPick, label = "Conversation" }) {
  if (conversations.error) return <ErrorNote error={conversations.error} />;
  const list = conversations.data ? conversations.data.conversations : [];
  return (
    <Field label={label}>
      <Select
        value={value ? conversationKey(value) : ""}
        onChange={(k) => onPick(list.find((c) => conversationKey(c) === k) || null)}
        placeholder="Choose a conversation"
        options={list.map((c) => ({
          value: conversationKey(c),
          label: `${c.conversation_id} (user ${c.user_id}, ${c.messages} messages)`,
        }))}
      />
    </Field>
  );
}

export function nameOf(conversation, id) {
  if (!conversation) return id;
  const found = [...conversation.bots, ...conversation.personas].find((n) => n.id === id);
  return found && found.name ? found.name : id;
}

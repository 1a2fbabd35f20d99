// The views, in navigation order; `id` is the URL hash (#/conversations).
import { Conversations } from "./conversations.jsx";
import { ContextDebug } from "./context.jsx";
import { Knowledge } from "./knowledge.jsx";
import { Lore } from "./lore.jsx";
import { Memories } from "./memories.jsx";
import { Operations } from "./operations.jsx";

export const VIEWS = [
  { id: "conversations", title: "Conversations", component: Conversations },
  { id: "context", title: "Context", component: ContextDebug },
  { id: "knowledge", title: "Knowledge", component: Knowledge },
  { id: "memories", title: "Memories", component: Memories },
  { id: "lore", title: "Lore", component: Lore },
  { id: "operations", title: "Operations", component: Operations },
];

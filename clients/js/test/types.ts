// Type-checked by `npm run build` (tsc): the declarations compile and describe the contract's shapes.
import { MnemoClient, MnemoError, natsMsgId, OPERATIONS } from "@mnemo/client";
import type { ContextAssembleReply, MessageCreated, Payload } from "@mnemo/client";

export async function usage(client: MnemoClient): Promise<string> {
  const event: MessageCreated = {
    tenant_id: "t1",
    user_id: "u1",
    conversation_id: "c1",
    message_id: "m1",
    role: "user",
    author_id: "u1",
    content: "hello",
    created_at: "2026-11-01T18:00:00Z",
    bot_ids: ["maren"],
  };
  await client.publish("chat.message.created", { ...event, created_at: new Date() });
  client.submit("chat.message.deleted", { tenant_id: "t1", user_id: "u1", conversation_id: "c1", message_id: "m1", deleted_at: new Date() });
  const request: Payload<"context.assemble"> = { tenant_id: "t1", user_id: "u1", conversation_id: "c1", bot_id: "maren" };
  const reply: ContextAssembleReply = await client.context(request);
  const books = await client.loreList({ tenant_id: "t1", bot_id: "maren" });
  // @ts-expect-error: a request is not an event
  await client.publish("lore.import", {});
  try {
    await client.knowledgePromote({ tenant_id: "t1", user_id: "u1", fact_id: "f1", campaign_id: "camp" });
  } catch (err) {
    if (err instanceof MnemoError && err.code === "not_found") return "gone";
  }
  // Every source names the messages it was derived from (a summary: those it quotes).
  const cited: string[] = reply.sources.flatMap((s) => s.message_ids ?? []);
  return cited.join(",") + reply.sections.map((s) => s.name).join(",") + natsMsgId("chat.message.created", event) + OPERATIONS["lore.list"].subject + books.books.length;
}

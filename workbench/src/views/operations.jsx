// The operator views (a key with the operator right): the tenant's dead letters with their reasons and redrive,
// every durable consumer's lag (as `mnemo status` reads it) and the tenant's usage (`mnemo status --usage`) with
// its memory growth per type over the last GROWTH_DAYS days.
// A key without the right is answered 403 by the gateway: the view says so instead of showing anything.
import { useState } from "preact/hooks";
import { useSession } from "../session.js";
import { DataTable, FigureRows } from "../forms.jsx";
import { Badge, ErrorNote, Loading, short, useAction, useLoad, when } from "../ui.jsx";
import { Growth } from "./growth.jsx";

const GROWTH_DAYS = 30;

function NoRight({ error }) {
  if (error && error.status === 403)
    return <p class="note">This API key has no operator right (a key file line `&lt;tenant&gt; operator`).</p>;
  return <ErrorNote error={error} />;
}

function DeadLetters() {
  const { call } = useSession();
  const letters = useLoad(() => call("operator/dead_letters/list", {}), []);
  const [picked, setPicked] = useState(new Set());
  const [redrive, state] = useAction(async (seqs) => {
    const reply = await call("operator/dead_letters/redrive", { seqs });
    setPicked(new Set());
    letters.reload();
    return reply;
  });
  const toggle = (seq) => {
    const next = new Set(picked);
    if (next.has(seq)) next.delete(seq);
    else next.add(seq);
    setPicked(next);
  };
  const rows = letters.data ? letters.data.dead_letters : [];
  return (
    <section class="panel" aria-labelledby="dead-letters">
      <h2 id="dead-letters">Dead letters</h2>
      {letters.loading && !letters.data ? <Loading what="Reading the dead letters" /> : null}
      <NoRight error={letters.error} />
      {letters.data && !rows.length ? <p class="note">No dead letters for this tenant.</p> : null}
      {rows.length ? (
        <DataTable caption="The tenant's dead letters, oldest first" columns={["Pick", "Dead letter", "Reason"]}>
          {rows.map((d) => (
            <tr>
              <td>
                <input
                  type="checkbox"
                  aria-label={`Redrive dead letter #${d.seq}`}
                  checked={picked.has(d.seq)}
                  onChange={() => toggle(d.seq)}
                />
              </td>
              <td>
                <strong>#{d.seq}</strong> <Badge tone="info">{d.service}</Badge>
                <div class="meta">
                  {d.original_subject} · {d.attempts} attempts · {when(d.time)}
                </div>
                <div class="meta">{short(d.body, 200)}</div>
              </td>
              <td>{d.reason}</td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      {rows.length ? (
        <div class="actions">
          <button type="button" disabled={state.busy || !picked.size} onClick={() => redrive([...picked])}>
            {state.busy ? "Redriving…" : `Redrive ${picked.size || ""} picked`}
          </button>
          <button type="button" disabled={state.busy} onClick={() => redrive(rows.map((d) => d.seq))}>
            Redrive all
          </button>
        </div>
      ) : null}
      <ErrorNote error={state.error} />
      {state.result ? (
        <div role="status">
          <ul aria-label="Redrive outcomes">
            {state.result.outcomes.map((o) => (
              <li>
                #{o.seq}: {o.outcome}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </section>
  );
}

function Lag() {
  const { call } = useSession();
  const lag = useLoad(() => call("operator/lag", {}), []);
  return (
    <section class="panel" aria-labelledby="lag">
      <h2 id="lag">Consumer lag</h2>
      <p class="meta">
        Each durable's lag is its pending plus unacknowledged messages (what KEDA's scaler reads, as{" "}
        <code>mnemo status</code> shows it).{" "}
        <button type="button" class="link" onClick={lag.reload}>
          Read again
        </button>
      </p>
      {lag.loading && !lag.data ? <Loading what="Reading JetStream" /> : null}
      <NoRight error={lag.error} />
      {lag.data ? (
        <DataTable caption="Durable consumers" columns={["Durable", "Lag", "Pending / unacked / redelivered"]}>
          {lag.data.durables.map((d) => (
            <tr>
              <td>
                <strong>{d.durable}</strong>
                <div class="meta">
                  {d.stream}
                  {d.partition ? ` · partition ${d.partition}` : ""} · {d.filter}
                </div>
              </td>
              <td>
                <Badge tone={d.lag ? "warn" : "good"}>{d.lag}</Badge>
              </td>
              <td>
                {d.pending} / {d.ack_pending} / {d.redelivered}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      {lag.data && lag.data.problems.length ? <p class="note error">{lag.data.problems.join("; ")}</p> : null}
    </section>
  );
}

function Usage() {
  const { call } = useSession();
  const usage = useLoad(() => call("operator/usage", { growth_days: GROWTH_DAYS }), []);
  const row = usage.data && usage.data.tenants[0];
  const figures = row
    ? [
        ["Messages held", row.messages],
        ["Vectors held", row.vectors],
        ["Context requests", row.context_requests],
        ["Context tokens", row.context_tokens],
        ["LLM prompt tokens", row.llm_prompt_tokens],
        ["LLM completion tokens", row.llm_completion_tokens],
      ]
    : [];
  return (
    <section class="panel" aria-labelledby="usage">
      <h2 id="usage">Usage</h2>
      {usage.loading && !usage.data ? <Loading what="Asking for the usage report" /> : null}
      <NoRight error={usage.error} />
      {usage.data && !row ? <p class="note">No metered usage for this tenant yet.</p> : null}
      {row ? (
        <DataTable
          caption={`Tenant ${row.tenant_id}: held now, and metered ${usage.data.since || "from the start"} to ${usage.data.until || "today"}`}
        >
          <FigureRows figures={figures} />
        </DataTable>
      ) : null}
      {row ? <Growth row={row} since={usage.data.growth_since} count={GROWTH_DAYS} /> : null}
    </section>
  );
}

export function Operations() {
  return (
    <div>
      <DeadLetters />
      <Lag />
      <Usage />
    </div>
  );
}

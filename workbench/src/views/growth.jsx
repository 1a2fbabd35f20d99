// Memory growth per type (the usage report with `growth_days`): each memory type the tenant holds, what of it
// was made on each day of the window, drawn as a small curve of what was held at the end of each day, and the
// vector points per kind. Plain SVG, no chart library: one polyline per row, with its figures in the table
// (and in the curve's label) so nothing is only visual.
import { DataTable, FigureRows } from "../forms.jsx";

const SOURCES = {
  message: "Messages",
  memory: "Summaries",
  legacy_lore: "Legacy lore",
  knowledge: "Facts",
  remembered: "Remembered",
  document_chunk: "Document chunks",
};

export function typeLabel(g) {
  const source = SOURCES[g.source] || g.source;
  return g.type === g.source || g.source === "legacy_lore" ? source : `${source}: ${g.type}`;
}

/** The `count` UTC days from `first` (an ISO date), as ISO dates. */
function days(first, count) {
  const d = new Date(`${first}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) => {
    const day = new Date(d);
    day.setUTCDate(d.getUTCDate() + i);
    return day.toISOString().slice(0, 10);
  });
}

/** What was held at the end of each day of the window: today's count less what was added after that day. */
export function heldPerDay(g, window) {
  const added = Object.fromEntries(g.added.map((d) => [d.day, d.added]));
  let held = g.held;
  const out = [];
  for (const day of [...window].reverse()) {
    out.unshift(held);
    held -= added[day] || 0;
  }
  return out;
}

function Curve({ values, label }) {
  const w = 120;
  const h = 28;
  const top = Math.max(...values, 1);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / top) * (h - 4)).toFixed(1)}`);
  return (
    <svg class="curve" viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={label}>
      <polyline points={points.join(" ")} fill="none" stroke="currentColor" stroke-width="2" />
    </svg>
  );
}

export function Growth({ row, since, count }) {
  const types = row.memory_types || [];
  if (!since) return null;
  const window = days(since, count);
  const kinds = Object.entries(row.vectors_by_kind || {}).filter(([, n]) => n);
  const caption = `What the tenant holds now per memory type, and what of it was made each day from ${since} to ${window[window.length - 1]}`;
  return (
    <div>
      <h3>Memory growth per type</h3>
      {!types.length ? <p class="note">This tenant holds no memories yet.</p> : null}
      {types.length ? (
        <DataTable caption={caption} columns={["Memory type", "Held now", `Added in ${window.length} days`, "Held each day"]}>
          {types.map((g) => (
            <GrowthRow g={g} window={window} />
          ))}
        </DataTable>
      ) : null}
      {kinds.length ? (
        <DataTable caption="Vector points per kind">
          <FigureRows figures={kinds} />
        </DataTable>
      ) : null}
    </div>
  );
}

function GrowthRow({ g, window }) {
  const held = heldPerDay(g, window);
  const added = g.added.reduce((n, d) => n + d.added, 0);
  const last = g.added[g.added.length - 1];
  const label = typeLabel(g);
  return (
    <tr>
      <th scope="row">{label}</th>
      <td>{g.held}</td>
      <td>
        {added}
        {last ? (
          <div class="meta">
            last on {last.day} (+{last.added})
          </div>
        ) : null}
      </td>
      <td>
        <Curve values={held} label={`${label}: ${held[0]} held on ${window[0]}, ${g.held} now`} />
      </td>
    </tr>
  );
}

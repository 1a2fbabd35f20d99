// The shapes every view repeats, written once: a form that runs one action (its submit button busy while it
// runs, what it did and what failed announced beside it), text inputs bound to state, a data table with its
// caption and column headers, and a row's button that names the item it acts on for screen readers.
import { ErrorNote } from "./ui.jsx";

/** A form whose submit runs `onSubmit` (an action of `useAction`, whose `state` it shows); `onCancel` adds a
 * Cancel button, `tone` styles the submit button (`danger`), `after` is shown below the buttons. */
export function ActionForm(props) {
  const { label, onSubmit, state, submit, busy, done, disabled, tone, onCancel, after, children, class: cls } = props;
  return (
    <form
      class={cls}
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
      }}
    >
      {children}
      <div class="actions">
        <button type="submit" class={tone} disabled={state.busy || disabled}>
          {state.busy && busy ? busy : submit}
        </button>
        {onCancel ? (
          <button type="button" class="secondary" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
        {done && state.result ? (
          <span class="note ok" role="status">
            {typeof done === "function" ? done(state.result) : done}
          </span>
        ) : null}
        <ErrorNote error={state.error} />
      </div>
      {after}
    </form>
  );
}

/** "a, b, , c" -> ["a", "b", "c"]: a comma-separated tags field's tags. */
export const tagList = (text) =>
  text
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);

/** An `<input>` whose every keystroke goes to `onChange(value)`. */
export function TextInput({ value, onChange, ...rest }) {
  return <input value={value} onInput={(e) => onChange(e.currentTarget.value)} {...rest} />;
}

/** A `<textarea>` whose every keystroke goes to `onChange(value)`. */
export function TextArea({ value, onChange, rows = 2, ...rest }) {
  return <textarea rows={rows} value={value} onInput={(e) => onChange(e.currentTarget.value)} {...rest} />;
}

/** A `.grid` table: its caption, one header a column, the rows as children. */
export function DataTable({ caption, columns, children }) {
  return (
    <table class="grid">
      <caption>{caption}</caption>
      {columns ? (
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col">{c}</th>
            ))}
          </tr>
        </thead>
      ) : null}
      <tbody>{children}</tbody>
    </table>
  );
}

/** Label/value rows of a `DataTable` without columns: `[[label, value], ...]`. */
export function FigureRows({ figures }) {
  return figures.map(([label, value]) => (
    <tr>
      <th scope="row">{label}</th>
      <td>{value}</td>
    </tr>
  ));
}

/** A row's button, "Delete" on screen and "Delete <item>" to a screen reader. */
export function ItemButton({ action, item, tone = "secondary", ...rest }) {
  return (
    <button type="button" class={tone} {...rest}>
      {action}
      <span class="sr-only"> {item}</span>
    </button>
  );
}

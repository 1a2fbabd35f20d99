// Small shared pieces: data loading, form fields with labels, tables, notes, a modal dialog, token bars.
import { cloneElement } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";

/** Runs `load` when `deps` change; `{data, error, loading, reload}`. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const run = useCallback(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    Promise.resolve()
      .then(load)
      .then(
        (data) => live && setState({ data, error: null, loading: false }),
        (error) => live && setState({ data: null, error, loading: false }),
      );
    return () => {
      live = false;
    };
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** An async action with its own busy flag, error and last result. */
export function useAction(act) {
  const [state, setState] = useState({ busy: false, error: null, result: null });
  const run = async (...args) => {
    setState({ busy: true, error: null, result: null });
    try {
      const result = await act(...args);
      setState({ busy: false, error: null, result });
      return result;
    } catch (error) {
      setState({ busy: false, error, result: null });
      return undefined;
    }
  };
  return [run, state];
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {error.code ? <strong>{error.code}: </strong> : null}
      {error.message || String(error)}
    </p>
  );
}

export function Loading({ what = "Loading" }) {
  return (
    <p class="note" role="status">
      {what}…
    </p>
  );
}

export function Field({ label, hint, children }) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const control = Array.isArray(children) ? children[0] : children;
  const rest = Array.isArray(children) ? children.slice(1) : null;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {control && cloneElement(control, { id, "aria-describedby": hintId })}
      {rest}
      {hint ? (
        <small id={hintId} class="hint">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

export function Select({ value, onChange, options, placeholder, ...rest }) {
  return (
    <select value={value ?? ""} onChange={(e) => onChange(e.currentTarget.value)} {...rest}>
      {placeholder !== undefined ? <option value="">{placeholder}</option> : null}
      {options.map((o) =>
        typeof o === "string" ? (
          <option value={o}>{o}</option>
        ) : (
          <option value={o.value}>{o.label}</option>
        ),
      )}
    </select>
  );
}

export function Badge({ children, tone = "plain", title }) {
  return (
    <span class={`badge ${tone}`} title={title}>
      {children}
    </span>
  );
}

/** `used` tokens of `budget`, as a labelled meter. */
export function TokenBar({ used, budget, label }) {
  const share = budget > 0 ? Math.min(1, used / budget) : 0;
  return (
    <div class="tokenbar">
      <meter min="0" max={budget || 1} value={used} aria-label={`${label}: ${used} of ${budget} tokens`} />
      <span class="tokens">
        {used} / {budget} tokens ({Math.round(share * 100)}%)
      </span>
    </div>
  );
}

/** A modal `<dialog>`: focus is kept inside it and Escape closes it (the browser does both). */
export function Dialog({ open, title, onClose, children }) {
  const ref = useRef(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
      <h2 id={titleId}>{title}</h2>
      {open ? children : null}
    </dialog>
  );
}

export function when(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toISOString().replace("T", " ").slice(0, 16);
}

export function short(text, n = 160) {
  if (!text) return "";
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// The workbench shell: the API key form, the tenant and user being looked at, navigation between the views.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, client, whoami } from "./api.js";
import { ErrorNote, Field } from "./ui.jsx";
import { Session } from "./session.js";
import { VIEWS } from "./views/index.js";
import "./style.css";

const KEY = "mnemo.workbench.key";
const PICKED = "mnemo.workbench.conversation";

function route() {
  const name = location.hash.replace(/^#\/?/, "").split("?")[0];
  return VIEWS.find((v) => v.id === name) || VIEWS[0];
}

function KeyForm({ onKey, error }) {
  const [value, setValue] = useState("");
  return (
    <main id="main" class="login">
      <h1>mnemo workbench</h1>
      <p>See and shape what each character remembers and why. Give an API key: the workbench sees exactly what it allows.</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onKey(value.trim());
        }}
      >
        <Field label="API key" hint="`make run` prints a local key for the demo tenant. It stays in this tab only.">
          <input type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} required />
        </Field>
        <button type="submit">Open</button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

function App() {
  const [key, setKey] = useState(() => sessionStorage.getItem(KEY) || "");
  const [tenant, setTenant] = useState(null);
  const [error, setError] = useState(null);
  const [conversation, setConversationState] = useState(() => JSON.parse(sessionStorage.getItem(PICKED) || "null"));
  const [view, setView] = useState(route);

  useEffect(() => {
    const onHash = () => setView(route());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => {
    if (!key) return;
    whoami(key).then(
      (me) => {
        setTenant(me.tenant_id);
        sessionStorage.setItem(KEY, key);
        setError(null);
      },
      (err) => {
        setTenant(null);
        setKey("");
        sessionStorage.removeItem(KEY);
        setError(err instanceof ApiError ? err : new ApiError(0, "unreachable", String(err)));
      },
    );
  }, [key]);
  useEffect(() => {
    document.title = `${view.title} · mnemo workbench`;
  }, [view]);

  if (!key || !tenant) return <KeyForm onKey={setKey} error={error} />;
  // The conversation being looked at (from conversation/list), shared by every view; its user is the one whose
  // memories, knowledge and lore the views read.
  const setConversation = (c) => {
    setConversationState(c);
    sessionStorage.setItem(PICKED, JSON.stringify(c));
  };
  const signOut = () => {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(PICKED);
    setConversationState(null);
    setKey("");
    setTenant(null);
  };
  const user = conversation ? conversation.user_id : null;
  const session = { call: client(key, tenant), tenant, user, conversation, setConversation };
  const View = view.component;
  return (
    <Session.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">mnemo workbench</span>
        <nav aria-label="Views">
          <ul>
            {VIEWS.map((v) => (
              <li>
                <a href={`#/${v.id}`} aria-current={v.id === view.id ? "page" : undefined}>
                  {v.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span>
            tenant <strong data-testid="tenant">{tenant}</strong>
          </span>
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabindex="-1">
        <h1>{view.title}</h1>
        <View />
      </main>
    </Session.Provider>
  );
}

render(<App />, document.getElementById("app"));

/**
 * The iop console: a login with the admin key, then one view per section (hash routes, so the
 * edge serves one page): agents, pool, requests in flight, keys, usage.
 */
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { logIn, logOut, resumeSession, whenSignedOut } from './api.js';
import { AgentsView } from './views/agents.js';
import { KeysView } from './views/keys.js';
import { PoolView } from './views/pool.js';
import { RequestsView } from './views/requests.js';
import { UsageView } from './views/usage.js';
import './styles.css';

const SECTIONS = [
  ['agents', 'Agents'],
  ['pool', 'Pool'],
  ['requests', 'Requests'],
  ['keys', 'Keys'],
  ['usage', 'Usage'],
] as const;
type Section = (typeof SECTIONS)[number][0];

function sectionOfHash(): Section {
  const name = location.hash.replace(/^#\/?/, '');
  return SECTIONS.find(([id]) => id === name)?.[0] ?? 'agents';
}

function Login({ onIn, notice }: { onIn: () => void; notice: string | undefined }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await logIn(key);
      setKey('');
      onIn();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="login">
      <h1>iop console</h1>
      <form class="card" onSubmit={(event) => void submit(event)} aria-labelledby="login-title">
        <h2 id="login-title">Log in</h2>
        {notice === undefined ? null : <p role="status">{notice}</p>}
        <p>
          <label for="admin-key">Admin key</label>
          <input
            id="admin-key"
            name="admin-key"
            type="password"
            autocomplete="off"
            required
            value={key}
            onInput={(event) => setKey(event.currentTarget.value)}
            aria-describedby="admin-key-help"
            aria-invalid={error === undefined ? undefined : 'true'}
          />
        </p>
        <p id="admin-key-help" class="muted small">
          One of the edge's <code>adminKeys</code>. It is sent once; the browser keeps only a session cookie it cannot
          read.
        </p>
        {error === undefined ? null : (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <p>
          <button type="submit" class="primary" disabled={busy}>
            Log in
          </button>
        </p>
      </form>
    </main>
  );
}

function Shell({ onOut }: { onOut: () => void }) {
  const [section, setSection] = useState<Section>(sectionOfHash());
  const [announcement, setAnnouncement] = useState('');
  const main = useRef<HTMLElement>(null);
  useEffect(() => {
    const onHash = () => {
      setSection(sectionOfHash());
      setAnnouncement(''); // a message belongs to the page it was said on
      main.current?.focus();
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const announce = useCallback((message: string) => setAnnouncement(message), []);
  const out = async () => {
    try {
      await logOut();
    } finally {
      onOut();
    }
  };
  return (
    <>
      <a class="skip" href="#main" onClick={(event) => (event.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <h1>iop console</h1>
        <nav aria-label="Sections">
          <ul>
            {SECTIONS.map(([id, label]) => (
              <li key={id}>
                <a href={`#/${id}`} aria-current={section === id ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" onClick={() => void out()}>
          Log out
        </button>
      </header>
      <p class="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>
      <main id="main" ref={main} tabIndex={-1}>
        {announcement === '' ? null : (
          <p class="notice">
            {announcement}{' '}
            <button type="button" class="link" onClick={() => setAnnouncement('')} aria-label="Dismiss message">
              ×
            </button>
          </p>
        )}
        {section === 'agents' ? <AgentsView announce={announce} /> : null}
        {section === 'pool' ? <PoolView /> : null}
        {section === 'requests' ? <RequestsView /> : null}
        {section === 'keys' ? <KeysView announce={announce} /> : null}
        {section === 'usage' ? <UsageView /> : null}
      </main>
    </>
  );
}

function App() {
  const [state, setState] = useState<'checking' | 'in' | 'out'>('checking');
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => {
    whenSignedOut(() => {
      setNotice('Your session ended: log in again.');
      setState('out');
    });
    void resumeSession().then((resumed) => setState(resumed ? 'in' : 'out'));
  }, []);
  if (state === 'checking') return <p class="muted">Loading…</p>;
  if (state === 'out') return <Login notice={notice} onIn={() => (setNotice(undefined), setState('in'))} />;
  return (
    <Shell
      onOut={() => {
        setNotice('Logged out.');
        setState('out');
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);

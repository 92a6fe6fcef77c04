/**
 * Client API keys: create (the secret is shown once, here, and kept nowhere), list, revoke and
 * rotate. Keys from the config file are listed but changed only there.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, post } from '../api.js';
import { formatTime } from '../format.js';
import { usePoll } from '../poll.js';
import type { ApiKey, ApiKeyWithSecret, List } from '../types.js';
import { ErrorNote } from '../ui.js';

/** The secret of a key just created or rotated, until the operator dismisses it. */
function SecretOnce({ shown, onDismiss }: { shown: ApiKeyWithSecret; onDismiss: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const [copied, setCopied] = useState(false);
  useEffect(() => heading.current?.focus(), [shown.key]);
  const copy = async () => {
    await navigator.clipboard.writeText(shown.key);
    setCopied(true);
  };
  return (
    <div class="secret" role="region" aria-labelledby="secret-title">
      <h3 id="secret-title" tabIndex={-1} ref={heading}>
        Secret of key {shown.name} ({shown.id})
      </h3>
      <p>Copy it now: it is shown this once. The edge keeps only its SHA-256.</p>
      <p>
        <label for="secret-value">Secret</label>
        <input
          id="secret-value"
          class="mono"
          type="text"
          readOnly
          value={shown.key}
          size={60}
          data-testid="key-secret"
        />
      </p>
      <p class="actions">
        <button type="button" onClick={() => void copy()}>
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onDismiss}>
          I have stored it
        </button>
      </p>
    </div>
  );
}

function CreateKey({ onCreated }: { onCreated: (created: ApiKeyWithSecret) => void }) {
  const [name, setName] = useState('');
  const [owner, setOwner] = useState('');
  const [models, setModels] = useState('');
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const list = models
        .split(',')
        .map((model) => model.trim())
        .filter((model) => model !== '');
      const created = await post<ApiKeyWithSecret>('/admin/keys', {
        name: name.trim(),
        ...(owner.trim() === '' ? {} : { owner: owner.trim() }),
        ...(list.length === 0 ? {} : { models: list }),
        ...(expires === '' ? {} : { expiresAt: new Date(expires).toISOString() }),
      });
      setName('');
      setOwner('');
      setModels('');
      setExpires('');
      onCreated(created);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card form" onSubmit={(event) => void submit(event)} aria-labelledby="create-title">
      <h3 id="create-title">Create a key</h3>
      <div class="fields">
        <p>
          <label for="key-name">Name</label>
          <input
            id="key-name"
            name="name"
            required
            maxLength={200}
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </p>
        <p>
          <label for="key-owner">Owner (optional)</label>
          <input
            id="key-owner"
            name="owner"
            maxLength={200}
            value={owner}
            onInput={(event) => setOwner(event.currentTarget.value)}
          />
        </p>
        <p>
          <label for="key-models">Models (comma-separated; empty: all)</label>
          <input
            id="key-models"
            name="models"
            value={models}
            onInput={(event) => setModels(event.currentTarget.value)}
          />
        </p>
        <p>
          <label for="key-expires">Expires (optional)</label>
          <input
            id="key-expires"
            name="expires"
            type="datetime-local"
            value={expires}
            onInput={(event) => setExpires(event.currentTarget.value)}
          />
        </p>
      </div>
      <ErrorNote error={error} />
      <p>
        <button type="submit" class="primary" disabled={busy}>
          Create key
        </button>
      </p>
    </form>
  );
}

function keyState(key: ApiKey): string {
  if (key.revoked_at !== null) return 'revoked';
  if (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now()) return 'expired';
  return 'active';
}

export function KeysView({ announce }: { announce: (message: string) => void }) {
  const { data, error, reload } = usePoll(() => get<List<ApiKey>>('/admin/keys'), 10_000);
  const [shown, setShown] = useState<ApiKeyWithSecret | undefined>(undefined);
  const act = async (key: ApiKey, action: 'revoke' | 'rotate') => {
    const question =
      action === 'revoke'
        ? `Revoke key ${key.name} (${key.id})? Clients using it are refused from now on.`
        : `Rotate key ${key.name} (${key.id})? Its current secret stops working.`;
    if (!window.confirm(question)) return;
    try {
      const result = await post<ApiKey | ApiKeyWithSecret>(`/admin/keys/${encodeURIComponent(key.id)}/${action}`);
      if (action === 'rotate') setShown(result as ApiKeyWithSecret);
      announce(action === 'revoke' ? `Key ${key.name} revoked.` : `Key ${key.name} rotated: copy its new secret.`);
    } catch (failure) {
      announce(`Could not ${action} ${key.name}: ${failure instanceof Error ? failure.message : String(failure)}`);
    }
    reload();
  };
  const keys = data?.data ?? [];
  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">Keys {data === undefined ? '' : `(${keys.length})`}</h2>
      {shown === undefined ? null : <SecretOnce shown={shown} onDismiss={() => setShown(undefined)} />}
      <CreateKey
        onCreated={(created) => {
          setShown(created);
          announce(`Key ${created.name} created: copy its secret now.`);
          reload();
        }}
      />
      <ErrorNote error={error} />
      {keys.length > 0 ? (
        <div class="scroll" tabIndex={0} role="region" aria-label="Keys table">
          <table>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Name</th>
                <th scope="col">Owner</th>
                <th scope="col">Source</th>
                <th scope="col">Models</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => {
                const state = keyState(key);
                return (
                  <tr key={key.id} data-key-id={key.id}>
                    <th scope="row">
                      <code>{key.id}</code>
                    </th>
                    <td>{key.name}</td>
                    <td>{key.owner || '—'}</td>
                    <td>{key.source}</td>
                    <td>{key.models === null ? 'all' : key.models.join(', ')}</td>
                    <td>{formatTime(key.created_at)}</td>
                    <td>{formatTime(key.expires_at)}</td>
                    <td>
                      <span class={`badge ${state}`}>{state}</span>
                      {key.revoked_at === null ? null : <div class="small muted">{formatTime(key.revoked_at)}</div>}
                    </td>
                    <td class="actions">
                      {key.source === 'config' ? (
                        <span class="muted small">in the config file</span>
                      ) : state === 'revoked' ? null : (
                        <>
                          <button
                            type="button"
                            onClick={() => void act(key, 'rotate')}
                            aria-label={`Rotate key ${key.name}`}
                          >
                            Rotate
                          </button>
                          <button
                            type="button"
                            class="danger"
                            onClick={() => void act(key, 'revoke')}
                            aria-label={`Revoke key ${key.name}`}
                          >
                            Revoke
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

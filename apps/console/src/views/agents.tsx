/** Connected agents: health, version, models, load and KV-cache use, with drain and undrain. */
import { useState } from 'preact/hooks';
import { post, get } from '../api.js';
import { formatCount, formatDuration, formatTime } from '../format.js';
import { usePoll } from '../poll.js';
import type { Agent, List } from '../types.js';
import { ErrorNote, Labels, Share } from '../ui.js';

function DrainButton({
  agent,
  onDone,
  announce,
}: {
  agent: Agent;
  onDone: () => void;
  announce: (message: string) => void;
}) {
  const [busy, setBusy] = useState(false);
  const draining = agent.drain.draining;
  const act = async () => {
    setBusy(true);
    try {
      await post(`/admin/agents/${encodeURIComponent(agent.id)}/${draining ? 'undrain' : 'drain'}`);
      announce(
        draining
          ? `Agent ${agent.id} takes runs again.`
          : `Agent ${agent.id} is draining: it finishes its runs and takes no new ones.`,
      );
    } catch (error) {
      announce(
        `Could not ${draining ? 'undrain' : 'drain'} ${agent.id}: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      setBusy(false);
      onDone();
    }
  };
  return (
    <button
      type="button"
      class={draining ? '' : 'warn'}
      disabled={busy}
      onClick={() => void act()}
      aria-label={`${draining ? 'Undrain' : 'Drain'} agent ${agent.id}`}
    >
      {draining ? 'Undrain' : 'Drain'}
    </button>
  );
}

function status(agent: Agent): string {
  if (agent.drain.deregistering) return 'leaving';
  if (agent.drain.draining) return 'draining';
  return agent.health.status === 'ok' ? 'ok' : 'heartbeat late';
}

export function AgentsView({ announce }: { announce: (message: string) => void }) {
  const { data, error, reload } = usePoll(() => get<List<Agent>>('/admin/agents'), 3000);
  const agents = data?.data ?? [];
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents {data === undefined ? '' : `(${agents.length})`}</h2>
      <ErrorNote error={error} />
      {data !== undefined && agents.length === 0 ? (
        <p>No agent is connected. Start one with `iop-agent --edge …`.</p>
      ) : null}
      {agents.length > 0 ? (
        <div class="scroll" tabIndex={0} role="region" aria-label="Agents table">
          <table>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Status</th>
                <th scope="col">Version</th>
                <th scope="col">Backend</th>
                <th scope="col">Models</th>
                <th scope="col">In flight</th>
                <th scope="col">Queued</th>
                <th scope="col">KV cache</th>
                <th scope="col">Heartbeat</th>
                <th scope="col">Runs served</th>
                <th scope="col">Labels</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {agents.map((agent) => (
                <tr key={agent.session}>
                  <th scope="row">
                    {agent.id}
                    <div class="muted small">session {agent.session}</div>
                  </th>
                  <td>
                    <span class={`badge ${status(agent).replace(' ', '-')}`}>{status(agent)}</span>
                  </td>
                  <td>{agent.version}</td>
                  <td>{agent.backend}</td>
                  <td>
                    <ul class="plain">
                      {agent.models.map((model) => (
                        <li key={model.id}>
                          {model.id}
                          {model.contextLength === null ? (
                            ''
                          ) : (
                            <span class="muted small"> · {formatCount(model.contextLength)} ctx</span>
                          )}
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td>
                    <Share
                      value={agent.maxConcurrency > 0 ? agent.load.inFlight / agent.maxConcurrency : null}
                      label={`${agent.id} load`}
                    />
                    <div class="small">
                      {agent.load.inFlight} / {agent.maxConcurrency}
                    </div>
                  </td>
                  <td>{agent.load.queued}</td>
                  <td>
                    <Share value={agent.load.kvCacheUsage} label={`${agent.id} KV-cache use`} />
                  </td>
                  <td title={formatTime(agent.health.lastHeartbeatAt)}>
                    {formatDuration(agent.health.heartbeatAgeMs)} ago
                  </td>
                  <td>{formatCount(agent.runsServed)}</td>
                  <td>
                    <Labels labels={agent.labels} />
                  </td>
                  <td>
                    <DrainButton agent={agent} onDone={reload} announce={announce} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

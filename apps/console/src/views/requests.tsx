/** The inference requests this edge serves now. */
import { get } from '../api.js';
import { formatDuration } from '../format.js';
import { usePoll } from '../poll.js';
import type { InFlightRequest, List } from '../types.js';
import { ErrorNote } from '../ui.js';

export function RequestsView() {
  const { data, error } = usePoll(() => get<List<InFlightRequest>>('/admin/requests'), 1000);
  const requests = data?.data ?? [];
  return (
    <section aria-labelledby="requests-title">
      <h2 id="requests-title">Requests in flight {data === undefined ? '' : `(${requests.length})`}</h2>
      <p class="muted small">On this edge, refreshed every second.</p>
      <ErrorNote error={error} />
      {data !== undefined && requests.length === 0 ? <p>No request in flight.</p> : null}
      {requests.length > 0 ? (
        <div class="scroll" tabIndex={0} role="region" aria-label="Requests in flight table">
          <table>
            <thead>
              <tr>
                <th scope="col">Request</th>
                <th scope="col">Dialect</th>
                <th scope="col">Model</th>
                <th scope="col">Served model</th>
                <th scope="col">Agent</th>
                <th scope="col">Key</th>
                <th scope="col">Phase</th>
                <th scope="col">Attempts</th>
                <th scope="col">Age</th>
              </tr>
            </thead>
            <tbody>
              {requests.map((request) => (
                <tr key={`${request.id}-${request.startedAt}`}>
                  <th scope="row">
                    <code>{request.id}</code>
                  </th>
                  <td>{request.dialect}</td>
                  <td>{request.model ?? '—'}</td>
                  <td>{request.servedModel ?? '—'}</td>
                  <td>{request.agent ?? '—'}</td>
                  <td>{request.keyId ?? '—'}</td>
                  <td>
                    <span class={`badge ${request.phase}`}>{request.phase}</span>
                  </td>
                  <td>{request.attempts}</td>
                  <td>{formatDuration(request.ageMs)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

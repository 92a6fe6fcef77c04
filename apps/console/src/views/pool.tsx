/**
 * The provider pool: model groups, their targets and routing, providers with load and outlier state, queues, retry
 * budget.
 */
import { get } from '../api.js';
import { formatCount, formatDuration, formatPercent } from '../format.js';
import { usePoll } from '../poll.js';
import type { Pool, PoolGroup } from '../types.js';
import { ErrorNote, Facts, Labels, Share } from '../ui.js';

function Group({ group }: { group: PoolGroup }) {
  const id = `group-${group.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return (
    <article class="card" aria-labelledby={id}>
      <h3 id={id}>
        {group.name} {group.implicit ? <span class="muted small">(served model, no configured group)</span> : null}
      </h3>
      <Facts
        items={[
          ['Aliases', group.aliases.length > 0 ? group.aliases.join(', ') : '—'],
          [
            'Targets',
            group.targets
              .map(
                (target) =>
                  `${target.model} ×${target.weight}${
                    target.labels
                      ? ` [${Object.entries(target.labels)
                          .map(([k, v]) => `${k}=${v}`)
                          .join(', ')}]`
                      : ''
                  }`,
              )
              .join('; ') || '—',
          ],
          ['Fallbacks', group.fallbacks.length > 0 ? group.fallbacks.join(' → ') : '—'],
          ['Context fallback', group.contextFallback ?? '—'],
          [
            'Queue',
            `${group.queue.waiting} waiting (at most ${group.queue.maxQueued}, ${formatDuration(group.queue.maxWaitMs)})`,
          ],
          [
            'Prefix affinity',
            `${formatCount(group.affinity.warm)} warm / ${formatCount(group.affinity.cold)} cold (${formatPercent(group.affinity.warmShare)})`,
          ],
        ]}
      />
      {group.providers.length === 0 ? (
        <p class="muted">No provider serves this group now.</p>
      ) : (
        <div class="scroll" tabIndex={0} role="region" aria-label={`Providers of ${group.name}`}>
          <table>
            <thead>
              <tr>
                <th scope="col">Provider</th>
                <th scope="col">Kind</th>
                <th scope="col">Models</th>
                <th scope="col">In flight</th>
                <th scope="col">Queued</th>
                <th scope="col">KV cache</th>
                <th scope="col">Weight</th>
                <th scope="col">Available</th>
                <th scope="col">Outlier state</th>
                <th scope="col">Labels</th>
              </tr>
            </thead>
            <tbody>
              {group.providers.map((provider) => (
                <tr key={provider.id}>
                  <th scope="row">{provider.id}</th>
                  <td>{provider.kind}</td>
                  <td>{provider.models.join(', ')}</td>
                  <td>
                    {provider.inFlight} / {provider.maxConcurrency}
                  </td>
                  <td>{provider.queued}</td>
                  <td>
                    <Share value={provider.kvCacheUsage} label={`${provider.id} KV-cache use`} />
                  </td>
                  <td>{provider.weight}</td>
                  <td>{provider.available ? 'yes' : 'no'}</td>
                  <td>
                    <span class={`badge ${provider.outlier.state}`}>{provider.outlier.state}</span>
                    <div class="small muted">
                      {provider.outlier.consecutiveFailures} failures in a row, {provider.outlier.ejections} ejections
                      {provider.outlier.reason ? ` · ${provider.outlier.reason}` : ''}
                    </div>
                  </td>
                  <td>
                    <Labels labels={provider.labels} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}

export function PoolView() {
  const { data, error } = usePoll(() => get<Pool>('/admin/pool'), 3000);
  return (
    <section aria-labelledby="pool-title">
      <h2 id="pool-title">Pool and routing</h2>
      <ErrorNote error={error} />
      {data === undefined ? null : (
        <>
          <Facts
            items={[
              [
                'Retry budget',
                `${formatCount(data.retryBudget.retries)} retries of ${formatCount(data.retryBudget.requests)} requests; ${formatCount(data.retryBudget.available)} more allowed now`,
              ],
              [
                'Queue refusals',
                `${formatCount(data.queue.rejectedFull)} full, ${formatCount(data.queue.rejectedTimeout)} timed out`,
              ],
            ]}
          />
          {data.groups.length === 0 ? (
            <p>No model group and no served model yet.</p>
          ) : (
            data.groups.map((group) => <Group key={group.name} group={group} />)
          )}
        </>
      )}
    </section>
  );
}

/** Small shared pieces: a status line for a view's load errors, a meter with its text, key–value lists. */
import type { ComponentChildren } from 'preact';

export function ErrorNote({ error }: { error: string | undefined }) {
  if (error === undefined) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

/** A `<meter>` (0–1) with its value as text beside it; `—` when unknown. */
export function Share({ value, label }: { value: number | null | undefined; label: string }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  const percent = Math.round(value * 100);
  return (
    <span class="share">
      <meter min={0} max={1} low={0.7} high={0.9} optimum={0} value={value} aria-label={label}>
        {percent} %
      </meter>
      <span>{percent} %</span>
    </span>
  );
}

export function Facts({ items }: { items: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="facts">
      {items.map(([term, detail]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{detail}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Labels({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="tags">
      {entries.map(([name, value]) => (
        <li key={name}>
          {name}={value}
        </li>
      ))}
    </ul>
  );
}

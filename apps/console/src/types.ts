/** The admin API's response shapes the console reads (apps/edge/src/admin/*). */

export interface List<T> {
  object: 'list';
  data: T[];
}

export interface Agent {
  id: string;
  session: string;
  models: Array<{ id: string; contextLength: number | null }>;
  load: {
    inFlight: number;
    reportedInFlight: number;
    agentInFlight: number | null;
    backendInFlight: number | null;
    queued: number;
    kvCacheUsage: number | null;
    backendWaiting: number | null;
  };
  maxConcurrency: number;
  labels: Record<string, string>;
  health: { status: 'ok' | 'late'; lastHeartbeatAt: number; heartbeatAgeMs: number };
  version: string;
  backend: string;
  drain: { draining: boolean; deregistering: boolean };
  connectedSince: number;
  runsServed: number;
}

export interface PoolProvider {
  id: string;
  kind: 'agent' | 'direct';
  models: string[];
  inFlight: number;
  maxConcurrency: number;
  weight: number;
  labels: Record<string, string>;
  available: boolean;
  queued: number;
  kvCacheUsage?: number;
  outlier: { state: string; consecutiveFailures: number; ejections: number; ejectedUntil?: number; reason?: string };
}

export interface PoolGroup {
  name: string;
  aliases: string[];
  implicit: boolean;
  targets: Array<{ model: string; labels?: Record<string, string>; weight: number }>;
  fallbacks: string[];
  contextFallback?: string;
  queue: { waiting: number; maxQueued: number; maxWaitMs: number };
  providers: PoolProvider[];
  affinity: { warm: number; cold: number; warmShare: number };
}

export interface Pool {
  groups: PoolGroup[];
  retryBudget: { requests: number; retries: number; available: number };
  queue: { rejectedFull: number; rejectedTimeout: number };
}

export interface InFlightRequest {
  id: string;
  dialect: string;
  model: string | null;
  servedModel: string | null;
  agent: string | null;
  keyId: string | null;
  attempts: number;
  startedAt: number;
  ageMs: number;
  phase: 'queued' | 'running';
}

export interface ApiKey {
  object: 'api_key';
  id: string;
  name: string;
  owner: string;
  source: string;
  models: string[] | null;
  created_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

/** A key as created or rotated: `key` is its secret, shown this once. */
export type ApiKeyWithSecret = ApiKey & { key: string };

/** One row of `GET /admin/usage`; `cost_usd` (US dollars) where the edge prices usage. */
export interface UsageRow {
  key?: string | null;
  model?: string | null;
  agent?: string | null;
  day?: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  errors: number;
  estimated_requests: number;
  cost_usd?: number;
}

export { adminAuth } from './admin-auth.js';
export { agentView, type AgentView } from './agent-view.js';
export { mountAdmin } from './admin-routes.js';
export { applyConfigReload, RELOADABLE_KEYS, type ReloadResult } from './config-reload.js';

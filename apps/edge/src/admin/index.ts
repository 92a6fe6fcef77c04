export { mountAdmin } from './admin-routes.js';
export { applyConfigReload, type ReloadResult } from './config-reload.js';

/** The agent for programmatic use (README "Programmatic use"): start one, with options or a ready backend. */
export { type AgentHandle, startAgent } from './start-agent.js';
export type { AgentOptionsInput } from './options.js';
export type { Backend } from './backends/backend.js';

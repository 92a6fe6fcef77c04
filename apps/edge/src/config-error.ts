/**
 * An invalid edge configuration: the message names every problem (path and limit). One class with the agent's:
 * @iop/core.
 */
export { ConfigError } from '@iop/core';

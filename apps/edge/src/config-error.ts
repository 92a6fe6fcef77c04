/** An invalid edge configuration: the message names every problem (field and limit). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

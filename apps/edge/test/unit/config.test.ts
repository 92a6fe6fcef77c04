import { ConfigError, configFromEnv, resolveConfig } from '../../src/config';

describe('edge config', () => {
  it('layers defaults < file < env < flags', () => {
    const config = resolveConfig(
      { port: 9000, apiKeys: ['sk-file-key-0001'] },
      configFromEnv({ IOP_PORT: '9100', IOP_API_KEYS: 'sk-env-key-0001,sk-env-key-0002' }),
      { port: 9200 },
    );
    expect(config.port).toBe(9200);
    expect(config.apiKeys).toEqual(['sk-env-key-0001', 'sk-env-key-0002']);
    expect(config.tunnel.port).toBe(8081);
    expect(config.maxBodyBytes).toBe(32 * 1024 * 1024);
  });

  it('refuses an invalid config naming every bad field', () => {
    expect(() => resolveConfig({ port: 70000, apiKeys: ['short'], bogus: true })).toThrow(ConfigError);
    const message = (() => {
      try {
        resolveConfig({ port: 70000, apiKeys: ['short'], pool: { modelGroups: [{ name: 'g' }] } });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    })();
    expect(message).toMatch(/(^|; |: )port must be <= 65535/);
    expect(message).toMatch(/apiKeys\[0\] must NOT have fewer than 8 characters/);
    // The pool section's own problems come in the same message.
    expect(message).toMatch(/pool\.modelGroups\[0\] must have required property 'targets'/);
  });
});

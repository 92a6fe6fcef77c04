import { ConfigError, DEFAULT_CONFIG, configFromEnv, resolveConfig } from '../../src/config';

describe('edge config: tunnel and Responses store limits', () => {
  it('has documented defaults', () => {
    expect(DEFAULT_CONFIG.tunnel.unauthenticated).toEqual({
      registerTimeoutMs: 10_000,
      maxUnauthenticatedConnections: 64,
      maxUnauthenticatedStreams: 4,
    });
    expect(DEFAULT_CONFIG.responsesStore.maxResponseBytes).toBe(16 * 1024 * 1024);
    expect(DEFAULT_CONFIG.responsesStore.maxTotalBytes).toBe(2 * 1024 * 1024 * 1024);
  });

  it('layers file < env < flags field by field', () => {
    const config = resolveConfig(
      {
        tunnel: { port: 9001, unauthenticated: { maxUnauthenticatedStreams: 2 } },
        responsesStore: { maxTotalBytes: 10_000_000 },
      },
      configFromEnv({
        IOP_TUNNEL_REGISTER_TIMEOUT_MS: '3000',
        IOP_RESPONSES_MAX_RESPONSE_BYTES: '2000000',
        IOP_DATA_DIR: '/tmp/iop',
      }),
      { tunnel: { unauthenticated: { maxUnauthenticatedConnections: 9 } } },
    );
    expect(config.tunnel.port).toBe(9001);
    expect(config.tunnel.unauthenticated).toEqual({
      registerTimeoutMs: 3000,
      maxUnauthenticatedConnections: 9,
      maxUnauthenticatedStreams: 2,
    });
    expect(config.responsesStore).toMatchObject({
      dataDir: '/tmp/iop',
      maxResponseBytes: 2_000_000,
      maxTotalBytes: 10_000_000,
    });
  });

  it('refuses out-of-range limits, naming the field', () => {
    expect(() => resolveConfig({ tunnel: { unauthenticated: { maxUnauthenticatedStreams: 0 } } })).toThrow(
      'tunnel.unauthenticated.maxUnauthenticatedStreams must be >= 1',
    );
    expect(() => resolveConfig({ responsesStore: { maxResponseBytes: 4096, maxTotalBytes: 2048 } })).toThrow(
      ConfigError,
    );
    expect(() => resolveConfig({ responsesStore: { maxResponseBytes: 4096, maxTotalBytes: 2048 } })).toThrow(
      'responsesStore.maxResponseBytes (4096) must not exceed responsesStore.maxTotalBytes (2048)',
    );
  });
});

/** The edge's version, reported to agents and in logs. */
export const EDGE_VERSION = '0.1.0';

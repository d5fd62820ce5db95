import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { observePool } from '../../src/metrics/metrics-route.ts';

describe('default process metrics', () => {
  it('are named switchboard_process_* and switchboard_nodejs_*, the prefix not doubled', async () => {
    const text = await createMetrics().registry.metrics();
    expect(text).toMatch(/^switchboard_process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^switchboard_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^switchboard_nodejs_eventloop_lag_seconds \d/m);
    expect(text).not.toContain('switchboard_process_process_');
    expect(text).not.toContain('switchboard_process_nodejs_');
  });
});

describe('observePool', () => {
  const poolState = { acquiredConnections: 0, idleConnections: 0, waitingClients: 0 };
  const pool = { state: () => ({ ...poolState }) } as unknown as Parameters<typeof observePool>[1];

  it('reads the pool and the session count at scrape time: each scrape is current, with no timer in between', async () => {
    const metrics = createMetrics({ collectDefaults: false });
    let sessions = 0;
    const stop = observePool(metrics, pool, () => sessions);

    Object.assign(poolState, { acquiredConnections: 3, idleConnections: 7, waitingClients: 0 });
    sessions = 2;
    let text = await metrics.registry.metrics();
    expect(text).toMatch(/^switchboard_db_pool_connections\{state="active"\} 3$/m);
    expect(text).toMatch(/^switchboard_db_pool_connections\{state="idle"\} 7$/m);
    expect(text).toMatch(/^switchboard_db_pool_connections\{state="waiting"\} 0$/m);
    expect(text).toMatch(/^switchboard_mcp_sessions 2$/m);

    Object.assign(poolState, { acquiredConnections: 10, idleConnections: 0, waitingClients: 4 });
    sessions = 5;
    text = await metrics.registry.metrics();
    expect(text).toMatch(/^switchboard_db_pool_connections\{state="active"\} 10$/m);
    expect(text).toMatch(/^switchboard_db_pool_connections\{state="waiting"\} 4$/m);
    expect(text).toMatch(/^switchboard_mcp_sessions 5$/m);

    stop();
    text = await metrics.registry.metrics();
    expect(text).not.toContain('switchboard_db_pool_connections');
    expect(text).not.toContain('switchboard_mcp_sessions');
  });

  it('on a shared registry the newest observer reports, and stopping an older one leaves it in place', async () => {
    const metrics = createMetrics({ collectDefaults: false });
    const stopFirst = observePool(metrics, pool, () => 1);
    const stopSecond = observePool(metrics, pool, () => 2);
    expect(await metrics.registry.metrics()).toMatch(/^switchboard_mcp_sessions 2$/m);
    stopFirst();
    expect(await metrics.registry.metrics()).toMatch(/^switchboard_mcp_sessions 2$/m);
    stopSecond();
    expect(await metrics.registry.metrics()).not.toContain('switchboard_mcp_sessions');
  });
});

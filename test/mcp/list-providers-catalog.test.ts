/**
 * list_providers over the official MCP SDK client, on a server configured with every preset of
 * the catalog (PRESET_NAMES, so a preset added later is covered the day it is added): each one is
 * listed under its name, with its preset and the trust mode it resolves to.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRESET_NAMES } from '../../generated/constants.ts';
import type { ListProvidersOutput } from '../../generated/types.ts';
import { validateListProvidersOutput } from '../../generated/validators.js';
import { everyCatalogProvider, resolvedTrustMode } from '../trigger/catalog-configs.ts';
import { startMcpHarness, type Harness } from './support/switchboard-harness.ts';

let h: Harness;
let client: Client;

beforeAll(async () => {
  h = await startMcpHarness({ config: { providers: everyCatalogProvider() } });
  client = await h.connect();
});

afterAll(async () => {
  await client?.close();
  await h?.close();
});

describe('list_providers with the whole catalog configured', () => {
  it('lists every catalog preset with its trust mode', async () => {
    const result = await client.callTool({ name: 'list_providers', arguments: {} });
    const output = result.structuredContent as ListProvidersOutput;
    expect(validateListProvidersOutput(output)).toBe(true);
    const listed = Object.fromEntries(output.providers.map((p) => [p.name, [p.preset, p.trust_mode]]));
    const expected = Object.fromEntries(PRESET_NAMES.map((name) => [name, [name, resolvedTrustMode(name)]]));
    expect(listed).toEqual(expected);
    // All three webhook trust modes are in the catalog, so a mode shown wrongly cannot hide.
    expect(new Set(Object.values(expected).map(([, mode]) => mode))).toEqual(new Set(['signed', 'token', 'open']));
  });
});

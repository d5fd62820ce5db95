/**
 * Codegen reads the catalog one folder per provider (catalog/<name>/): its provider.json, the
 * samples the entry names, its <name>.case.ts, and nothing else. Each mistake is refused with the
 * file that has it, so a new provider's author knows where to look.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../codegen/bundle-schema.ts';
import { loadCatalog } from '../../codegen/catalog.ts';

const root = join(import.meta.dirname, '../..');
const schema = async (file: string): Promise<JsonObject> =>
  JSON.parse(await readFile(join(root, 'schemas', file), 'utf8')) as JsonObject;

describe('catalog folders', () => {
  let scratch: string;
  const load = async () =>
    loadCatalog(scratch, await schema('provider-catalog-entry.schema.json'), [
      await schema('reply-fallback.schema.json'),
    ]);
  const entryOf = async (name: string): Promise<Record<string, unknown>> =>
    JSON.parse(await readFile(join(scratch, 'catalog', name, 'provider.json'), 'utf8')) as Record<string, unknown>;
  const writeEntry = (name: string, entry: unknown) =>
    writeFile(join(scratch, 'catalog', name, 'provider.json'), JSON.stringify(entry));

  beforeEach(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'switchboard-catalog-'));
    // Two folders: stripe has two samples, sendgrid none.
    for (const name of ['stripe', 'sendgrid']) {
      await cp(join(root, 'catalog', name), join(scratch, 'catalog', name), { recursive: true });
    }
  });

  afterEach(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('loads each folder with the text of every sample it names, and none for a provider without', async () => {
    const providers = await load();
    expect(providers.map((p) => p.entry.name)).toEqual(['sendgrid', 'stripe']);
    expect([...(providers[1]?.samples.keys() ?? [])]).toEqual(['payment-intent-succeeded.json', 'invoice-paid.json']);
    expect(providers[1]?.samples.get('invoice-paid.json')).toBe(
      await readFile(join(root, 'catalog/stripe/invoice-paid.json'), 'utf8'),
    );
    expect(providers[0]?.samples.size).toBe(0);
  });

  it('refuses a file the entry does not name, naming it', async () => {
    await writeFile(join(scratch, 'catalog/stripe/notes.md'), 'a stray file');
    await expect(load()).rejects.toThrow(/catalog\/stripe\/: notes\.md is neither a sample/);
  });

  it('refuses a sample the folder does not hold, naming the entry and the file', async () => {
    await rm(join(scratch, 'catalog/stripe/invoice-paid.json'));
    await expect(load()).rejects.toThrow(
      'catalog/stripe/provider.json: sample invoice-paid.json is not in catalog/stripe/',
    );
  });

  it('refuses an entry named other than its folder', async () => {
    await writeEntry('stripe', { ...(await entryOf('stripe')), name: 'stripe-two' });
    await expect(load()).rejects.toThrow('catalog/stripe/provider.json: its name is stripe-two, its folder stripe');
  });

  it('refuses an entry the catalog schema does not pass, naming the file and the field', async () => {
    await writeEntry('stripe', { ...(await entryOf('stripe')), scheme: { kind: 'hmac', algorithm: 'md5' } });
    await expect(load()).rejects.toThrow(/^catalog\/stripe\/provider\.json: \/scheme/);
  });

  it('refuses a folder without its entry', async () => {
    await rm(join(scratch, 'catalog/sendgrid/provider.json'));
    await expect(load()).rejects.toThrow('catalog/sendgrid/: no provider.json (the catalog entry)');
  });
});

/**
 * The samples `switchboard trigger` sends are its catalog folder's files, byte for byte: codegen
 * copies each file's text into generated/samples.ts, so the server reads no file at run time (from
 * any working directory, or compiled into dist/). Twilio's sample is form text, not JSON, and is
 * kept as text.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../../generated/catalog.ts';
import { PRESET_NAMES } from '../../../generated/constants.ts';
import { SAMPLE_TEXTS } from '../../../generated/samples.ts';

const catalog = join(import.meta.dirname, '../../../catalog');

describe('catalog samples in generated/samples.ts', () => {
  const named = PRESET_NAMES.flatMap((preset) =>
    (PROVIDER_CATALOG[preset].samples ?? []).map(({ file }) => [preset, file] as const),
  );

  it.each(named)('%s holds %s exactly as its catalog folder does', (preset, file) => {
    const bytes = readFileSync(join(catalog, preset, file));
    expect(Buffer.from(SAMPLE_TEXTS[preset]?.[file] ?? '', 'utf8').equals(bytes)).toBe(true);
  });

  it('holds no sample the catalog does not name, and keeps form text as text', () => {
    const held = Object.entries(SAMPLE_TEXTS).flatMap(([preset, files]) =>
      Object.keys(files ?? {}).map((file) => `${preset}/${file}`),
    );
    expect(held.sort()).toEqual(named.map(([preset, file]) => `${preset}/${file}`).sort());
    expect(SAMPLE_TEXTS.twilio?.['message-received.txt']).toMatch(/^[^{][^\n]*=/);
  });
});

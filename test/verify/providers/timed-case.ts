/**
 * Helpers for the cases' deliveries: a sample's payload made fresh, and the clock in the formats
 * providers write.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** A sample payload from the preset's catalog folder, with a fresh field so each delivery is a new event. */
export function samplePayload(preset: string, file: string): Buffer {
  const text = readFileSync(new URL(`../../../catalog/${preset}/${file}`, import.meta.url), 'utf8');
  const doc = JSON.parse(text) as unknown;
  return Buffer.from(JSON.stringify(Array.isArray(doc) ? doc : { ...(doc as object), delivered: randomUUID() }));
}

export const unixSeconds = (ms: number): string => String(Math.floor(ms / 1000));

/** ISO 8601 in whole seconds, as Box, Zendesk and Twitch write it. */
export const isoSeconds = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

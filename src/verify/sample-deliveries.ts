/**
 * A sample delivery per preset, as its sender would make it: a trimmed real payload (the samples in
 * catalog/<preset>/, which codegen bundles into generated/samples.ts, so nothing is read from disk),
 * fresh ids and timestamps, the sender's own headers, and the signature or token the preset puts
 * on it. `switchboard trigger` sends these; nothing here touches the network.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { PresetName } from '../../generated/constants.ts';
import { SAMPLE_TEXTS } from '../../generated/samples.ts';
import type { Sample } from '../../generated/types.ts';
import { resolveJsonPointer } from './identify.ts';
import type { Preset } from './preset-types.ts';

type JsonObject = Record<string, unknown>;

interface SendContext {
  nowMs: number;
  /** A fresh id per send, so a repeated trigger is a new event rather than a deduplicated retry. */
  uid: string;
}

interface SampleDefinition {
  name: string;
  description: string;
  /** Its file in catalog/<preset>/, whose text generated/samples.ts holds. */
  file: string;
  /** Makes the document look freshly sent (ids, timestamps) and returns the sender's own headers. */
  prepare(doc: JsonObject, context: SendContext): Record<string, string>;
}

export interface TriggerSampleInfo {
  name: string;
  description: string;
}

function record(value: unknown): JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

/**
 * The value of a fresh kind (uuid, now_unix, now_ms, now_iso): the times are numbers here, since a
 * payload's timestamp field is one unless the sample has a string there. Undefined for any other name.
 */
function freshValue(kind: string, { nowMs, uid }: SendContext): string | number | undefined {
  switch (kind) {
    case 'uuid':
      return uid;
    case 'now_unix':
      return Math.floor(nowMs / 1000);
    case 'now_ms':
      return nowMs;
    case 'now_iso':
      return new Date(nowMs).toISOString();
    default:
      return undefined;
  }
}

/** 12 random bytes: Stripe's and Slack's event ids are short random tokens, not UUIDs. */
const randomId = (): string => randomBytes(12).toString('base64url');

/** Any `{name}`: the names are the catalog schema's (its description and pattern), not listed here. */
const PLACEHOLDER = /\{([a-z_]+)\}/g;

/**
 * A header value or fresh template with its placeholders filled in; each random one is drawn
 * afresh. A name that is no placeholder stays as written.
 */
function fillTemplate(template: string, context: SendContext): string {
  return template.replace(PLACEHOLDER, (written, name: string) => {
    if (name === 'random_uuid') return randomUUID();
    if (name === 'random_id') return randomId();
    if (name === 'random_id_upper') return randomId().toUpperCase();
    const value = freshValue(name, context);
    return value === undefined ? written : String(value);
  });
}

/** Sets the value a JSON pointer names, when its parent exists (a sample names only paths it has). */
function setPointer(doc: JsonObject, pointer: string, value: unknown): void {
  const tokens = pointer.split('/').slice(1);
  const last = tokens.pop();
  const parent = resolveJsonPointer(doc, tokens.length === 0 ? '' : `/${tokens.join('/')}`);
  if (last === undefined || typeof parent !== 'object' || parent === null) return;
  if (Array.isArray(parent)) parent[Number(last)] = value;
  else
    (parent as JsonObject)[last] =
      typeof value === 'number' && typeof (parent as JsonObject)[last] === 'string' ? String(value) : value;
}

/** A catalog sample (catalog/<name>/provider.json): its headers' placeholders and fresh pointers filled in. */
function catalogSample(definition: Sample): SampleDefinition {
  const { name, file, description } = definition;
  return {
    name,
    file,
    description,
    prepare(doc, context) {
      for (const [pointer, fresh] of Object.entries(definition.fresh ?? {})) {
        if (fresh === undefined) continue;
        // A template has a {placeholder} in it and makes a string; a bare kind is the value itself.
        setPointer(doc, pointer, fresh.includes('{') ? fillTemplate(fresh, context) : freshValue(fresh, context));
      }
      const headers: Record<string, string> = {};
      for (const [header, value = ''] of Object.entries(definition.headers ?? {})) {
        headers[header.toLowerCase()] = fillTemplate(value, context);
      }
      return headers;
    },
  };
}

function samplesOf(preset: PresetName): readonly SampleDefinition[] {
  return (PROVIDER_CATALOG[preset].samples ?? []).map(catalogSample);
}

/** The samples `switchboard trigger` can send for a preset; the first is the default. */
export function listSamples(preset: PresetName): TriggerSampleInfo[] {
  return samplesOf(preset).map(({ name, description }) => ({ name, description }));
}

export interface SampleDelivery {
  sample: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** A form sample's fields, encoded as the sender posts them. */
function formBody(doc: JsonObject): string {
  const fields = new URLSearchParams();
  for (const [name, value] of Object.entries(doc))
    fields.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  return fields.toString();
}

/** The sample of that name (case-insensitive), or the preset's first; undefined when it has none such. */
function findSample(preset: PresetName, name: string | undefined): SampleDefinition | undefined {
  const available = samplesOf(preset);
  return name === undefined ? available[0] : available.find((s) => s.name.toLowerCase() === name.toLowerCase());
}

/**
 * The request a real sender would make with `credential` (a signing secret for signed presets, a
 * token for token presets, nothing for open ones), or undefined when the preset has no such sample.
 */
export function sampleDelivery(
  preset: Preset,
  sampleName: string | undefined,
  credential: string | undefined,
  nowMs: number,
): SampleDelivery | undefined {
  const definition = findSample(preset.name, sampleName);
  if (definition === undefined) return undefined;
  const text = SAMPLE_TEXTS[preset.name]?.[definition.file];
  if (text === undefined) throw new Error(`${preset.name}: sample ${definition.file} is not in generated/samples.ts`);
  // A .txt sample is form fields (Twilio posts a form): its fields are freshened by name (/Name).
  const form = definition.file.endsWith('.txt');
  const parsed: unknown = form ? Object.fromEntries(new URLSearchParams(text.trim())) : JSON.parse(text);
  // An array payload (HubSpot sends a batch) is kept as it is; prepare() reaches into it by pointer.
  const doc = Array.isArray(parsed) ? (parsed as unknown as JsonObject) : record(parsed);
  const senderHeaders = definition.prepare(doc, { nowMs, uid: randomUUID() });
  const made = Buffer.from(form ? formBody(doc) : JSON.stringify(doc), 'utf8');
  const body =
    credential !== undefined && preset.signBody !== undefined
      ? preset.signBody({ body: made, secret: credential, nowMs })
      : made;
  const contentType = form ? 'application/x-www-form-urlencoded' : 'application/json';
  const headers: Record<string, string> = { 'content-type': contentType, ...senderHeaders };
  if (credential !== undefined && preset.sign !== undefined) {
    Object.assign(headers, preset.sign({ body, secret: credential, nowMs, headers }));
  } else if (credential !== undefined && preset.tokenHeader !== undefined) {
    headers[preset.tokenHeader] = credential;
  }
  return { sample: definition.name, headers, body };
}

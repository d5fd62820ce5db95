/**
 * A catalog provider's identity and summary, from its templates: the first event-type template
 * whose every placeholder is found names the event (else "unknown"), the first external-id
 * template gives its id (else none), and every summary template that is found is one part of the
 * summary line. Nothing here throws on odd input: a body is whatever a sender (or a forger) sent.
 */
import type { ProviderCatalogEntry } from '../../generated/types.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { LazyBody } from './identify.ts';
import type { DeliveryBody, HeaderBag, Identify, Preset } from './preset-types.ts';
import { summarizeGeneric, summaryLine } from './summary.ts';
import { credentialNameIn, fillField, FormFields, parseFieldTemplate, type FieldTemplate } from './schemes/template.ts';

/**
 * A catalog template, parsed; one that reads a credential-like name is refused, since what it
 * fills in is shown wherever the event is listed (its summary, its delivery id).
 */
function catalogTemplate(template: string, where: string): FieldTemplate {
  const parsed = parseFieldTemplate(template, where);
  const credential = credentialNameIn(parsed);
  if (credential !== null) {
    throw invalidArgument(`${where}: "${template}" reads ${credential}, which looks like a credential`);
  }
  return parsed;
}

function firstFilled(templates: readonly FieldTemplate[], body: DeliveryBody, headers: HeaderBag): string | null {
  const form = new FormFields(body.bytes);
  for (const template of templates) {
    const value = fillField(template, body, headers, form);
    if (value !== null) return value;
  }
  return null;
}

export function catalogIdentify(entry: ProviderCatalogEntry): Identify | undefined {
  if (entry.identify === undefined) return undefined;
  const where = `catalog/${entry.name}/provider.json`;
  const eventType = entry.identify.event_type.map((t) => catalogTemplate(t, `${where} identify`));
  const externalId = (entry.identify.external_id ?? []).map((t) => catalogTemplate(t, `${where} identify`));
  return (body, headers, parsed) => {
    const lazy = parsed ?? new LazyBody(body);
    return {
      eventType: firstFilled(eventType, lazy, headers) ?? 'unknown',
      externalId: firstFilled(externalId, lazy, headers),
    };
  };
}

export function catalogSummarize(entry: ProviderCatalogEntry): Preset['summarize'] {
  if (entry.summary === undefined) return summarizeGeneric;
  const parts = entry.summary.map((t) => catalogTemplate(t, `catalog/${entry.name}/provider.json summary`));
  return (body, headers) => {
    const form = new FormFields(body.bytes);
    const line = summaryLine(parts.map((part) => fillField(part, body, headers, form)));
    return line ?? summarizeGeneric(body, headers);
  };
}

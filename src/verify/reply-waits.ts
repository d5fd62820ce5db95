/**
 * Whether a delivery waits for the app's answer, from the catalog's reply data (`waits`): every
 * delivery, or those matching a condition on the body. Pure, over the bytes, like the rest of
 * verify/: ingest asks it once a delivery has passed its check.
 */
import type { ProviderCatalogEntry } from '../../generated/types.ts';
import { isRecord, resolveJsonPointer } from './identify.ts';
import type { DeliveryBody } from './preset-types.ts';
import { FormFields } from './schemes/template.ts';

type ReplyWaits = NonNullable<ProviderCatalogEntry['reply']>['waits'];
type ReplyCondition = Exclude<ReplyWaits, 'all'>[number];

function matches(condition: ReplyCondition, body: DeliveryBody, form: FormFields): boolean {
  if ('form' in condition) return form.get(condition.form) !== null;
  const json = body.json;
  if (!isRecord(json)) return false;
  const value = resolveJsonPointer(json, condition.json);
  return (typeof value === 'string' || typeof value === 'number') && condition.in.includes(value);
}

/** True when the provider holds this delivery's request open for the app's answer. */
export function deliveryWaits(waits: ReplyWaits, body: DeliveryBody): boolean {
  if (waits === 'all') return true;
  const form = new FormFields(body.bytes);
  return waits.some((condition) => matches(condition, body, form));
}

/**
 * The catalog's templates, parsed once when a preset is built. Two kinds:
 * - what a scheme signs (`{timestamp}.{body}`, `{method}{url}{body}{timestamp}`): literal text and
 *   the parts of a request, the body used byte for byte;
 * - where an event's type, id and summary come from (`{header:X-Gitea-Event}.{/action}`): headers,
 *   JSON pointers into the body and form fields.
 */
import { invalidArgument } from '../../errors/app-error.ts';
import { looksLikeCredential } from '../../shared/credential-names.ts';
import { headerValue } from '../headers.ts';
import { asIdentifier, isRecord, resolveJsonPointer } from '../identify.ts';
import type { DeliveryBody, HeaderBag } from '../preset-types.ts';

export type SignedPart =
  | { kind: 'text'; text: string }
  | { kind: 'body' }
  | { kind: 'timestamp' }
  | { kind: 'url' }
  | { kind: 'method' }
  | { kind: 'header'; name: string };

// A header's name is any HTTP token (generic-hmac's users name their own; the catalog's are plainer).
const SIGNED_PLACEHOLDER = /\{(body|timestamp|url|method|header:([!#$%&'*+.^_`|~0-9A-Za-z-]+))\}/g;

/**
 * A template split into its literal text and its placeholders, each made by `part`. Text holding a
 * brace is a placeholder this kind of template does not know, and is refused.
 */
function splitTemplate<P>(
  template: string,
  where: string,
  placeholder: RegExp,
  part: (match: RegExpMatchArray) => P,
): (P | { kind: 'text'; text: string })[] {
  const parts: (P | { kind: 'text'; text: string })[] = [];
  let last = 0;
  const text = (value: string): void => {
    if (value === '') return;
    if (/[{}]/.test(value)) throw invalidArgument(`${where}: unknown placeholder in "${template}"`);
    parts.push({ kind: 'text', text: value });
  };
  for (const match of template.matchAll(placeholder)) {
    text(template.slice(last, match.index));
    last = match.index + match[0].length;
    parts.push(part(match));
  }
  text(template.slice(last));
  return parts;
}

/** A signed-content template; {body} must appear exactly once, since a signature that skips it proves nothing. */
export function parseSignedTemplate(template: string, where: string): SignedPart[] {
  const parts = splitTemplate<SignedPart>(template, where, SIGNED_PLACEHOLDER, (match) => {
    const name = match[1] ?? '';
    // The header as written, so a detail names it as the sender's docs do; it is looked up case-insensitively.
    return name.startsWith('header:')
      ? { kind: 'header', name: match[2] ?? '' }
      : { kind: name as 'body' | 'timestamp' | 'url' | 'method' };
  });
  if (parts.filter((p) => p.kind === 'body').length !== 1) {
    throw invalidArgument(`${where}: "${template}" must sign {body} exactly once`);
  }
  return parts;
}

export interface SignedValues {
  body: Buffer;
  timestamp?: string | undefined;
  url?: string | undefined;
  method?: string | undefined;
  headers: ReadonlyMap<string, string>;
}

/** The template filled in, as the pieces an HMAC or signature is computed over. */
export function signedPieces(parts: readonly SignedPart[], values: SignedValues): (string | Buffer)[] {
  return parts.map((part) => {
    switch (part.kind) {
      case 'text':
        return part.text;
      case 'body':
        return values.body;
      case 'timestamp':
        return values.timestamp ?? '';
      case 'url':
        return values.url ?? '';
      case 'method':
        return values.method ?? 'POST';
      case 'header':
        return values.headers.get(part.name) ?? '';
    }
  });
}

/** The concatenation, for schemes whose libraries take one buffer. */
export function signedBytes(parts: readonly SignedPart[], values: SignedValues): Buffer {
  return Buffer.concat(signedPieces(parts, values).map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

export const signedHeaderNames = (parts: readonly SignedPart[]): string[] =>
  parts.flatMap((p) => (p.kind === 'header' ? [p.name] : []));

type FieldPart =
  | { kind: 'text'; text: string }
  | { kind: 'header'; name: string }
  | { kind: 'pointer'; pointer: string }
  | { kind: 'form'; name: string };

export type FieldTemplate = readonly FieldPart[];

const FIELD_PLACEHOLDER = /\{(header:[^{}]+|form:[^{}]+|\/[^{}]*)\}/g;

export function parseFieldTemplate(template: string, where: string): FieldTemplate {
  return splitTemplate<FieldPart>(template, where, FIELD_PLACEHOLDER, (match) => {
    const spec = match[1] ?? '';
    if (spec.startsWith('header:')) return { kind: 'header', name: spec.slice('header:'.length) };
    if (spec.startsWith('form:')) return { kind: 'form', name: spec.slice('form:'.length) };
    return { kind: 'pointer', pointer: spec };
  });
}

/**
 * The first name a field template reads that looks like a credential (a header, a form field, or
 * any key on a JSON pointer's path: `{/token}`, `{/signature/token}`), or null. What such a
 * template fills in would show the credential as an event's summary or delivery id.
 */
export function credentialNameIn(template: FieldTemplate): string | null {
  for (const part of template) {
    if (part.kind === 'text') continue;
    const names =
      part.kind === 'pointer'
        ? part.pointer
            .split('/')
            .slice(1)
            .map((key) => key.replaceAll('~1', '/').replaceAll('~0', '~'))
        : [part.name];
    const found = names.find(looksLikeCredential);
    if (found !== undefined) return found;
  }
  return null;
}

/** A form-encoded body's fields, parsed at most once per delivery. */
export class FormFields {
  private fields: URLSearchParams | null | undefined;
  constructor(private readonly body: Buffer) {}
  get(name: string): string | null {
    if (this.fields === undefined) {
      const text = this.body.toString('latin1');
      this.fields = /^[\w%+.~*=&-]*$/.test(text) && text.includes('=') ? new URLSearchParams(text) : null;
    }
    return this.fields?.get(name) ?? null;
  }
}

/**
 * The template filled in from a delivery, or null when any placeholder finds nothing (so the next
 * template is tried). A pointer into an array of one element reaches into it (`/events/0/type`).
 */
export function fillField(
  template: FieldTemplate,
  body: DeliveryBody,
  headers: HeaderBag,
  form: FormFields,
): string | null {
  let out = '';
  for (const part of template) {
    let value: string | null;
    if (part.kind === 'text') value = part.text;
    else if (part.kind === 'header') value = asIdentifier(headerValue(headers, part.name));
    else if (part.kind === 'form') value = asIdentifier(form.get(part.name));
    else {
      const json = body.json;
      value = isRecord(json) || Array.isArray(json) ? asIdentifier(resolveJsonPointer(json, part.pointer)) : null;
    }
    if (value === null) return null;
    out += value;
  }
  return out === '' ? null : out;
}

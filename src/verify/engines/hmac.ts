/**
 * HMAC over a template of the request (39 catalog providers): the engine of schemes/hmac-scheme.ts
 * with the catalog's parameters; it signs the URL when its template has {url}.
 */
import { createHmacScheme } from '../schemes/hmac-scheme.ts';
import { code, defineEngine, type SchemeOf } from './engine.ts';

type HmacScheme = SchemeOf<'hmac'>;

/** The headers the table lists: the signature's (as the sender writes it), then a timestamp header. */
function headerNames(scheme: HmacScheme): string[] {
  const { signature } = scheme;
  const names = signature.headers.map((h, i) =>
    i === 0 && signature.prefix !== undefined ? `${h}: ${signature.prefix}…` : h,
  );
  if (signature.format === 'pairs') {
    const sep = signature.separator ?? ',';
    const t = signature.timestamp_key === undefined ? '' : `${signature.timestamp_key}=…${sep}`;
    names[0] = `${signature.headers[0]}: ${t}${signature.signature_key ?? 'v1'}=…`;
  }
  const from = scheme.timestamp?.from ?? '';
  if (from.startsWith('header:')) names.push(from.slice('header:'.length));
  return names;
}

export const hmacEngine = defineEngine<'hmac'>({
  kind: 'hmac',
  signsUrl: (scheme) => scheme.signed.includes('{url}'),
  signatureHeaders: (scheme) => scheme.signature.headers,
  build: ({ scheme, where, options }) => createHmacScheme(scheme, where, { publicUrl: options.public_url }),
  docs: {
    scheme: (scheme) => {
      const key = scheme.key === 'hex' ? ', hex-decoded key' : scheme.key === 'base64' ? ', base64-decoded key' : '';
      return `HMAC-${scheme.algorithm.toUpperCase()} ${scheme.encoding} of ${code(scheme.signed)}${key}`;
    },
    headers: (scheme) => headerNames(scheme).map(code).join(', '),
    timestamped: (scheme) => scheme.timestamp !== undefined,
    bodyTimestamp: (scheme) => {
      const from = scheme.timestamp?.from ?? '';
      return from.startsWith('/') ? from : undefined;
    },
  },
});

/** A JWT signed HS256 whose claims hash the body (QStash, …); QStash's names the URL it was sent to. */
import { createJwtScheme } from '../schemes/jwt-scheme.ts';
import { code, defineEngine } from './engine.ts';

export const jwtHs256Engine = defineEngine<'jwt-hs256'>({
  kind: 'jwt-hs256',
  usesUrl: (scheme) => scheme.subject_url === true,
  signatureHeaders: (scheme) => [scheme.header],
  build: ({ scheme, options }) => createJwtScheme(scheme, { publicUrl: options.public_url }),
  docs: {
    scheme: () => 'JWT HS256 with a body hash',
    headers: (scheme) => code(scheme.bearer === true ? `${scheme.header}: Bearer …` : scheme.header),
    timestamped: (scheme) => scheme.expires === true || scheme.issued_at === true,
  },
});

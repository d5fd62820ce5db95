/**
 * A shared token in a header (or as a Bearer token), compared in constant time against every
 * configured token (rotation): GitLab's X-Gitlab-Token, the generic token preset's header (its
 * `token_header` config, else the catalog's), and any sender that authenticates so.
 */
import { invalidArgument } from '../../errors/app-error.ts';
import { headerValue } from '../headers.ts';
import { usableSecrets } from '../hmac.ts';
import { credentialMismatch, MISSING_SECRET, malformedHeader, missingHeader, rotationNote } from '../verdicts.ts';
import { findMatchingKey } from '../timing-safe.ts';
import type { VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { code, defineEngine, type Verification } from './engine.ts';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

interface TokenOptions {
  /** Display spelling of the token header; looked up case-insensitively. */
  header: string;
  /** Whether `Authorization: Bearer <token>` is accepted as well as the header. */
  acceptBearer: boolean;
}

interface Candidate {
  source: string;
  value: string;
}

/**
 * A shared token, compared in constant time against every configured token (rotation). Both the
 * header and a Bearer token are compared when both are sent, so a sender migrating from one to the
 * other is not rejected for sending a stale copy of one of them.
 */
function verifyToken(options: TokenOptions, input: VerifyInput): VerifyOutcome {
  const tokens = usableSecrets(input.secrets);
  if (tokens.length === 0) return MISSING_SECRET;
  const candidates: Candidate[] = [];
  const fromHeader = headerValue(input.headers, options.header);
  if (fromHeader !== undefined) candidates.push({ source: options.header, value: fromHeader.trim() });
  if (options.acceptBearer) {
    const authorization = headerValue(input.headers, 'authorization');
    const bearer = authorization === undefined ? null : BEARER.exec(authorization.trim());
    if (bearer?.[1] !== undefined) candidates.push({ source: 'Authorization: Bearer', value: bearer[1] });
    else if (authorization !== undefined && candidates.length === 0) {
      return malformedHeader('Authorization', 'Bearer <token>');
    }
  }
  if (candidates.length === 0) {
    const alternatives = options.acceptBearer ? ' or Authorization: Bearer' : '';
    return missingHeader(`${options.header}${alternatives}`);
  }
  // Every candidate is compared even after a hit, so timing does not reveal which one (if any)
  // held the right token.
  let matched: { candidate: Candidate; tokenIndex: number } | undefined;
  for (const candidate of candidates) {
    const tokenIndex = findMatchingKey(tokens, [candidate.value], (token) => token);
    if (tokenIndex !== -1 && matched === undefined) matched = { candidate, tokenIndex };
  }
  if (matched === undefined) {
    return credentialMismatch('token', candidates.map((c) => c.source).join(', '));
  }
  const rotation = rotationNote('token', matched.tokenIndex, tokens.length);
  return { ok: true, detail: `token matched (${matched.candidate.source})${rotation}` };
}

function tokenVerification(options: TokenOptions): Verification {
  if (!HEADER_NAME.test(options.header)) throw invalidArgument(`token_header "${options.header}" is not a header name`);
  const header = options.header.toLowerCase();
  return {
    requiredHeaders: options.acceptBearer ? [[header, 'authorization']] : [header],
    sensitiveHeaders: options.acceptBearer ? [header, 'authorization'] : [header],
    tokenHeader: header,
    verify: (input) => verifyToken(options, input),
  };
}

export const tokenEngine = defineEngine<'token'>({
  kind: 'token',
  schemeOptions: (scheme) => (scheme.configurable_header === true ? ['token_header'] : []),
  credentialKeys: ['token'],
  build: ({ scheme, options }) =>
    tokenVerification({
      // Only an entry whose header is configurable takes token_header (schemeOptions below;
      // preset-options.ts refuses it elsewhere).
      header: options.token_header ?? scheme.header ?? 'X-Webhook-Token',
      acceptBearer: scheme.bearer === true,
    }),
  docs: {
    scheme: () => 'shared token, constant-time compare',
    headers: (scheme) => {
      const header = scheme.header ?? '';
      return code(scheme.bearer === true ? `${header} or Authorization: Bearer` : header);
    },
    timestamped: () => false,
  },
});

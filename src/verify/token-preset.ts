import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { entryIdentify } from './catalog-identity.ts';
import { headerValue } from './headers.ts';
import { MISSING_SECRET, usableSecrets } from './hmac.ts';
import { genericIdentity, isRecord, LazyBody } from './identify.ts';
import { findMatchingKey } from './timing-safe.ts';
import type {
  DeliveryBody,
  EventIdentity,
  HeaderBag,
  Identify,
  Preset,
  VerifyInput,
  VerifyOutcome,
} from './preset-types.ts';
import { at, firstLine, numbered, shortRef, summarizeGeneric, summaryLine, textOf } from './summary.ts';

const DEFAULT_TOKEN_HEADER = 'X-Webhook-Token';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

export interface TokenPresetOptions {
  name: 'token' | 'gitlab';
  /** Display spelling of the token header; looked up case-insensitively. */
  header: string;
  /** Whether `Authorization: Bearer <token>` is accepted as well as the header. */
  acceptBearer: boolean;
  identify: Identify;
  summarize: Preset['summarize'];
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
function verifyToken(options: TokenPresetOptions, input: VerifyInput): VerifyOutcome {
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
      return { ok: false, reason: 'malformed_header', detail: 'malformed Authorization (expected Bearer <token>)' };
    }
  }
  if (candidates.length === 0) {
    const alternatives = options.acceptBearer ? ' or Authorization: Bearer' : '';
    return { ok: false, reason: 'missing_header', detail: `missing header ${options.header}${alternatives}` };
  }
  // Every candidate is compared even after a hit, so timing does not reveal which one (if any)
  // held the right token.
  let matched: { candidate: Candidate; tokenIndex: number } | undefined;
  for (const candidate of candidates) {
    const tokenIndex = findMatchingKey(tokens, [candidate.value], (token) => token);
    if (tokenIndex !== -1 && matched === undefined) matched = { candidate, tokenIndex };
  }
  if (matched === undefined) {
    return {
      ok: false,
      reason: 'token_mismatch',
      detail: `token mismatch (${candidates.map((c) => c.source).join(', ')})`,
    };
  }
  const rotation = tokens.length > 1 ? `; token ${matched.tokenIndex + 1} of ${tokens.length}` : '';
  return { ok: true, detail: `token matched (${matched.candidate.source})${rotation}` };
}

export function createTokenPreset(options: TokenPresetOptions): Preset {
  if (!HEADER_NAME.test(options.header)) throw invalidArgument(`token_header "${options.header}" is not a header name`);
  const header = options.header.toLowerCase();
  return {
    name: options.name,
    trustMode: 'token',
    credential: 'token',
    requiredHeaders: options.acceptBearer ? [[header, 'authorization']] : [header],
    sensitiveHeaders: options.acceptBearer ? [header, 'authorization'] : [header],
    tokenHeader: header,
    verify: (input) => verifyToken(options, input),
    identify: options.identify,
    summarize: options.summarize,
  };
}

/** Generic token senders: nothing is known about the payload, so identity is heuristic. */
function identifyGenericToken(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  return genericIdentity(parsed ?? new LazyBody(body), headers);
}

/** GitLab: the project, then the branch and the last commit's subject, or the merge request or issue. */
function summarizeGitlab(body: DeliveryBody): string | null {
  const json = body.json;
  if (!isRecord(json)) return null;
  const attributes = at(json, 'object_attributes');
  const iid = numbered(at(attributes, 'iid'));
  const action = textOf(at(attributes, 'action'));
  const commits = at(json, 'commits');
  const lastCommit = Array.isArray(commits) ? (commits.at(-1) as unknown) : undefined;
  return summaryLine([
    at(json, 'project', 'path_with_namespace'),
    shortRef(json['ref']),
    iid === null ? action : `${action ?? ''} ${iid}`.trim(),
    at(attributes, 'title'),
    firstLine(at(lastCommit, 'message')),
  ]);
}

export function createGenericTokenPreset(tokenHeader: string = DEFAULT_TOKEN_HEADER): Preset {
  return createTokenPreset({
    name: 'token',
    header: tokenHeader,
    acceptBearer: true,
    identify: identifyGenericToken,
    summarize: summarizeGeneric,
  });
}

/** GitLab sends its secret token verbatim in X-Gitlab-Token and never as a Bearer token. */
export const gitlabPreset: Preset = createTokenPreset({
  name: 'gitlab',
  header: 'X-Gitlab-Token',
  acceptBearer: false,
  identify: entryIdentify(PROVIDER_CATALOG.gitlab),
  summarize: summarizeGitlab,
});

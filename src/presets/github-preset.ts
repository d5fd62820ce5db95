import { headerValue } from './headers.ts';
import { compareSha256, hexAfterPrefix, hmacEncoded, isOutcome, readSignature, signedPreset } from './hmac.ts';
import { asIdentifier, isRecord, LazyBody } from './identify.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { at, firstLine, numbered, shortRef, summaryLine, textOf } from './summary.ts';

const SIGNATURE_HEADER = 'X-Hub-Signature-256';
const PREFIX = 'sha256=';

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body. GitHub signs no
 * timestamp, so there is nothing to check for freshness; dedupe on X-GitHub-Delivery instead.
 * The legacy SHA-1 `X-Hub-Signature` is deliberately not accepted as a fallback: a sender that
 * offers only SHA-1 is either ancient or stripping the stronger header.
 */
export function verifyGithub(input: VerifyInput): VerifyOutcome {
  const signature = readSignature(input, SIGNATURE_HEADER);
  if (isOutcome(signature)) return signature;
  const candidate = hexAfterPrefix(signature.value, PREFIX, SIGNATURE_HEADER);
  if (isOutcome(candidate)) return candidate;
  return compareSha256(SIGNATURE_HEADER, signature.secrets, [candidate], [input.body], 'hex');
}

export function signGithub(input: SignInput): Record<string, string> {
  return { 'x-hub-signature-256': PREFIX + hmacEncoded('sha256', input.secret, [input.body], 'hex') };
}

/** `pull_request.opened` style: the event header, plus the body's action when it has one. */
export function identifyGithub(body: Buffer, headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const event = asIdentifier(headerValue(headers, 'x-github-event'));
  const json = (parsed ?? new LazyBody(body)).json;
  const action = isRecord(json) ? asIdentifier(json['action']) : null;
  const eventType = event === null ? 'unknown' : action === null ? event : `${event}.${action}`;
  return { eventType, externalId: asIdentifier(headerValue(headers, 'x-github-delivery')) };
}

/**
 * The repository, then what happened in it: the branch or tag and the head commit's subject for a
 * push; the action, number and title for pull requests and issues; the action and the object's
 * name (release, workflow run, check) otherwise.
 */
export function summarizeGithub(body: DeliveryBody): string | null {
  const json = body.json;
  if (!isRecord(json)) return null;
  const item = at(json, 'pull_request') ?? at(json, 'issue') ?? at(json, 'discussion');
  const number = numbered(at(item, 'number') ?? json['number']);
  const action = textOf(json['action']);
  const name =
    at(item, 'title') ??
    at(json, 'release', 'tag_name') ??
    at(json, 'workflow_run', 'name') ??
    at(json, 'check_run', 'name') ??
    at(json, 'workflow_job', 'name');
  return summaryLine([
    at(json, 'repository', 'full_name') ?? at(json, 'organization', 'login'),
    shortRef(json['ref']),
    action === null || number === null ? action : `${action} ${number}`,
    number !== null && action === null ? number : null,
    name,
    firstLine(at(json, 'head_commit', 'message')),
  ]);
}

export const githubPreset = signedPreset(
  'github',
  { requiredHeaders: ['x-hub-signature-256'], sensitiveHeaders: ['x-hub-signature-256', 'x-hub-signature'] },
  { verify: verifyGithub, sign: signGithub, identify: identifyGithub, summarize: summarizeGithub },
);

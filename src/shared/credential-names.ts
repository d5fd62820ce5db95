/**
 * Which names look like they hold a credential, whether the name is a header's (`X-Api-Key`,
 * `X-Gitlab-Token`, `Stripe-Signature`) or a JSON field's (`api_key`, `apiKey`, `password`,
 * `token`). One matcher for both, so what the store redacts from headers and what a summary, an
 * event's delivery id or a log line leaves out cannot disagree: a value kept out of the stored
 * headers must not come back as text taken from the payload, and the other way round.
 *
 * A name is split into words at separators (`-`, `_`, `.`, spaces) and at camelCase boundaries and
 * lower-cased, then joined (`x-api-key`, `apiKey` and `API_KEY` all hold `apikey`). A name looks
 * like a credential when it holds one of the stems below anywhere (`x-hub-signature-256`,
 * `client_secret`), ends in one of the others (`access_token`, `x-gitlab-token`, `api_key`, but not
 * `x-token-count` or `total_tokens`, which count), or when its last word is one of the short words
 * that would match too much inside others (`auth` but not `author`, `sig` but not `signal`).
 * Trailing numbers do not count (`api_key_2`). Hiding an innocent field from a summary is the
 * price of never showing a credential.
 */

/** Anywhere in the joined name. */
const ANYWHERE: readonly string[] = [
  'secret',
  'signature',
  'password',
  'passwd',
  'passphrase',
  'passcode',
  'credential',
  'authorization',
  'cookie',
  'privatekey',
  'signingkey',
];

/** At the end of the joined name: a `token_type` or `api_key_id` names something else. */
const AT_END: readonly string[] = ['token', 'apikey', 'accesskey', 'sessionid'];

/** The last word, whole. */
const LAST_WORDS: ReadonlySet<string> = new Set(['auth', 'jwt', 'sig', 'otp', 'pwd', 'pass', 'bearer']);

/**
 * An idempotency key or token names a delivery so a retry is recognised (`Idempotency-Key`,
 * Twilio's `I-Twilio-Idempotency-Token`): it proves nothing, and it is what a delivery id is.
 */
const NOT_A_CREDENTIAL = 'idempotency';

const CAMEL_BOUNDARY = /([a-z0-9])([A-Z])/g;
const SEPARATORS = /[^a-z0-9]+/;
const NUMBER = /^\d+$/;

/** Names already decided: ingest asks for every header of every delivery, mostly the same few. */
const decided = new Map<string, boolean>();
const MAX_DECIDED = 1024;

function decide(name: string): boolean {
  const words = name
    .replace(CAMEL_BOUNDARY, '$1 $2')
    .toLowerCase()
    .split(SEPARATORS)
    .filter((word) => word !== '');
  while (words.length > 0 && NUMBER.test(words.at(-1) ?? '')) words.pop();
  const joined = words.join('').replace(/\d+$/, '');
  if (joined.includes(NOT_A_CREDENTIAL)) return false;
  return (
    ANYWHERE.some((stem) => joined.includes(stem)) ||
    AT_END.some((stem) => joined.endsWith(stem)) ||
    LAST_WORDS.has(words.at(-1) ?? '')
  );
}

/** Whether a header name or a JSON key looks like it holds a credential (any case, any separators). */
export function looksLikeCredential(name: string): boolean {
  let answer = decided.get(name);
  if (answer === undefined) {
    answer = decide(name);
    // Names come from senders: the memory is bounded whatever they send.
    if (decided.size >= MAX_DECIDED) decided.clear();
    decided.set(name, answer);
  }
  return answer;
}

import { asIdentifier, isRecord, LazyBody, parseJsonBody } from '../identify.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, ProviderHooks } from '../preset-types.ts';
import { firstLine, summaryLine, textOf } from '../summary.ts';

/**
 * Form-encoded bodies (slash commands, interactivity) are not JSON. Interactivity wraps its JSON in
 * a `payload` field; a slash command is recognised by its `command` field.
 */
function formParams(body: Buffer): URLSearchParams | null {
  const text = body.toString('latin1');
  if (!/^[\w%+.~*=&-]*$/.test(text) || !text.includes('=')) return null;
  return new URLSearchParams(text);
}

function identifyForm(body: Buffer): EventIdentity | null {
  const params = formParams(body);
  if (params === null) return null;
  const payload = params.get('payload');
  if (payload !== null) {
    const json = parseJsonBody(Buffer.from(payload, 'utf8'));
    if (isRecord(json)) return { eventType: asIdentifier(json['type']) ?? 'unknown', externalId: null };
  }
  if (params.has('command')) return { eventType: 'slash_command', externalId: asIdentifier(params.get('trigger_id')) };
  return null;
}

/**
 * Events API: an event_callback is named by its inner `event.type` (`app_mention`), anything else
 * by its top-level `type` (`url_verification`); `event_id` is unique per event across retries.
 */
function identifySlack(body: Buffer, _headers: HeaderBag, parsed?: DeliveryBody): EventIdentity {
  const json = (parsed ?? new LazyBody(body)).json;
  if (!isRecord(json)) return identifyForm(body) ?? { eventType: 'unknown', externalId: null };
  const topType = asIdentifier(json['type']);
  const event = json['event'];
  const innerType = topType === 'event_callback' && isRecord(event) ? asIdentifier(event['type']) : null;
  return { eventType: innerType ?? topType ?? 'unknown', externalId: asIdentifier(json['event_id']) };
}

/**
 * The challenge to echo for Slack's `url_verification` handshake, or null when the body is not one.
 * Only answer it after verify() passed: Slack signs the handshake like any other request, and
 * echoing unverified challenges would let anyone confirm the endpoint exists and what it runs.
 */
export function slackUrlVerificationChallenge(body: Buffer, _headers: HeaderBag): string | null {
  const json = parseJsonBody(body);
  if (!isRecord(json) || json['type'] !== 'url_verification') return null;
  const challenge = json['challenge'];
  return typeof challenge === 'string' && challenge.length > 0 ? challenge : null;
}

/**
 * The event type and the channel it happened in, then who and the first line of what was said:
 * for an Events API callback from its inner event, for a slash command from its form fields.
 */
function summarizeSlack(body: DeliveryBody): string | null {
  const json = body.json;
  if (isRecord(json)) {
    const event = isRecord(json['event']) ? json['event'] : json;
    const channel = textOf(event['channel']);
    const user = textOf(event['user']);
    return summaryLine([
      event['type'],
      channel === null ? null : `in ${channel}`,
      user === null ? null : `by ${user}`,
      firstLine(event['text']),
    ]);
  }
  const params = formParams(body.bytes);
  const command = params?.get('command');
  if (params === null || command === null || command === undefined) return null;
  const channel = textOf(params.get('channel_name'));
  const user = textOf(params.get('user_name'));
  return summaryLine([
    command,
    channel === null ? null : `in #${channel}`,
    user === null ? null : `by ${user}`,
    firstLine(params.get('text')),
  ]);
}

/**
 * Slack: `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 of `v0:{ts}:{body}` keyed by the app's signing
 * secret, the timestamp in X-Slack-Request-Timestamp, on the hmac engine
 * (catalog/slack/provider.json). The same scheme covers Events API JSON, slash commands and
 * interactivity (form-encoded), since it signs raw bytes.
 */
export const slackHooks: ProviderHooks = { identify: identifySlack, summarize: summarizeSlack };

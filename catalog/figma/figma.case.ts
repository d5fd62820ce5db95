/**
 * Figma: no signature. The webhook's passcode, chosen when it was created, comes back in every
 * delivery's JSON body, and a receiver compares it with the one it chose (Figma's documented
 * check, written here independently of src/). No npm package checks it, so the deliveries are
 * Figma's published examples, byte for byte: with the case's secret, which is the passcode of
 * those examples, FIGMA_FILE_UPDATE is exactly what the docs print.
 * https://developers.figma.com/docs/rest-api/webhooks-events
 * https://developers.figma.com/docs/rest-api/webhooks-security
 */
import type { ProviderCase, Signed } from '../../test/verify/providers/provider-case.ts';

/** The passcode of Figma's published examples. */
export const FIGMA_EXAMPLE_PASSCODE = 'secretpasscode';

/** Figma's published FILE_UPDATE example, as the docs print it. */
export const FIGMA_FILE_UPDATE = `{
"event_type": "FILE_UPDATE",
"file_key": "CL06nJNn5eZLQKDoARMND5",
"file_name": "Developer page mockup demo",
"passcode": "secretpasscode",
"timestamp": "2020-02-23T20:27:16Z",
"webhook_id": "22"
}`;

/** Figma's published PING example (sent when a webhook is created), as the docs print it. */
export const FIGMA_PING = `{
"event_type": "PING",
"passcode": "secretpasscode",
"timestamp": "2020-02-23T20:27:16Z",
"webhook_id": "22"
}`;

/** A published example with another passcode in it, every other byte as published. */
export function withPasscode(example: string, passcode: string): Buffer {
  const published = `"passcode": ${JSON.stringify(FIGMA_EXAMPLE_PASSCODE)}`;
  if (!example.includes(published)) throw new Error('not one of the published examples');
  return Buffer.from(example.replace(published, `"passcode": ${JSON.stringify(passcode)}`), 'utf8');
}

/** What Figma tells a receiver to do: compare the body's passcode with the one it chose. */
export function figmaAccepts({ body }: Signed, passcode: string): boolean {
  try {
    const doc = JSON.parse(body.toString('utf8')) as { passcode?: unknown };
    return doc.passcode === passcode;
  } catch {
    return false;
  }
}

export const figmaCase: ProviderCase = {
  preset: 'figma',
  credential: 'secret',
  secret: FIGMA_EXAMPLE_PASSCODE,
  wrongSecret: 'not-the-webhook-passcode',
  deliver: (passcode) => ({
    body: withPasscode(FIGMA_FILE_UPDATE, passcode),
    headers: { 'content-type': 'application/json', 'user-agent': 'Figma' },
  }),
  accepts: figmaAccepts,
  timestamped: false,
  // The passcode is in the body, so no header is required (a body without it is 400: figma.test.ts).
  requiredHeader: null,
  eventType: 'FILE_UPDATE',
  bodyUnsigned: true,
  proof: 'example',
};

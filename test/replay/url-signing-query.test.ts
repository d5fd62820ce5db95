/**
 * Twilio signs the full URL it called, query string included (and puts a JSON body's hash there,
 * as bodySHA256). A re-signed delivery of a Twilio event, by replay, by forwarding and by
 * `switchboard listen`, carries the query it arrived with and is signed over it: the local app
 * checks with the twilio package's own validateRequest and validateRequestWithBody, over its public
 * URL plus the query it received. All on the wire: a real switchboard on 127.0.0.1, real consumers,
 * listen as a child process.
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startListenWire, type ListenWire } from '../listen/support/listen-wire.ts';
import { formFields, TWILIO_URL, twilioForm, webhooks } from '../../catalog/twilio/twilio.case.ts';
import { startConsumer, type Consumer, type RecordedRequest } from '../support/local-server.ts';

const TOKEN = `twilio-query-${randomUUID()}`;
/** The Auth Token on the server; the laptop's (listen's) is another. */
const SERVER_AUTH_TOKEN = '12345678901234567890123456789012';
const LAPTOP_AUTH_TOKEN = 'abcdefabcdefabcdefabcdefabcdef12';

let wire: ListenWire;
/** Where the forward rule sends; it has a query of its own, which the original one follows. */
let forwarded: Consumer;

beforeAll(async () => {
  forwarded = await startConsumer();
  wire = await startListenWire({
    token: TOKEN,
    config: [
      'providers:',
      `  twilio: { preset: twilio, secret: "${SERVER_AUTH_TOKEN}", public_url: "${TWILIO_URL}" }`,
      'forward:',
      `  local-app: { to: "${forwarded.url('/forwarded?via=rule')}", providers: [twilio] }`,
      '',
    ].join('\n'),
  });
});

afterAll(async () => {
  await wire?.close();
  await forwarded?.close();
});

const signatureOf = (r: RecordedRequest): string => {
  const value = r.headers['x-twilio-signature'];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
};

/** The URL the local app checks: its public URL, plus the query string it received. */
const checkedUrl = (r: RecordedRequest): string => `${TWILIO_URL}${new URL(r.url, 'http://x').search}`;

/** What the app's twilio middleware does: a form body by its fields, anything else by bodySHA256. */
function twilioAccepts(r: RecordedRequest, authToken: string): boolean {
  const form = String(r.headers['content-type']).startsWith('application/x-www-form-urlencoded');
  return form
    ? webhooks.validateRequest(authToken, signatureOf(r), checkedUrl(r), formFields(r.body))
    : webhooks.validateRequestWithBody(authToken, signatureOf(r), checkedUrl(r), r.body.toString());
}

/** Posts as Twilio does to /hooks/twilio?<query>, signed over TWILIO_URL?<query>; the stored event's id. */
async function sendTwilio(query: string, json?: object): Promise<string> {
  let body: string;
  let headers: Record<string, string>;
  if (json === undefined) {
    const params = twilioForm();
    body = new URLSearchParams(params).toString();
    const signature = webhooks.getExpectedTwilioSignature(SERVER_AUTH_TOKEN, `${TWILIO_URL}?${query}`, params);
    headers = { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature };
  } else {
    body = JSON.stringify(json);
    query = `${query}&bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
    const signature = webhooks.getExpectedTwilioSignature(SERVER_AUTH_TOKEN, `${TWILIO_URL}?${query}`, {});
    headers = { 'content-type': 'application/json', 'x-twilio-signature': signature };
  }
  const res = await fetch(`${wire.server}/hooks/twilio?${query}`, { method: 'POST', headers, body });
  const answer = (await res.json()) as { id: string };
  expect(res.status, JSON.stringify(answer)).toBe(200);
  return answer.id;
}

async function replay(id: string, target: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${wire.server}/api/events/${id}/replay`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ target_url: target }),
  });
  return { status: res.status, body: await res.json() };
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('a re-signed Twilio event carries and signs the query string it arrived with', () => {
  const since = new Date(Date.now() - 60_000).toISOString();
  const form = { id: '', query: `tenant=7&region=eu-${randomUUID().slice(0, 8)}` };
  const json = { id: '', query: `tenant=8&region=us-${randomUUID().slice(0, 8)}` };

  beforeAll(async () => {
    form.id = await sendTwilio(form.query);
    json.id = await sendTwilio(json.query, { type: 'com.twilio.messaging.message.delivered', id: randomUUID() });
  });

  it('replay: the twilio package accepts it over the public URL plus the query it received', async () => {
    const app = await wire.consumer();
    for (const event of [form, json]) {
      const result = await replay(event.id, app.url('/sms'));
      expect(result, JSON.stringify(result.body)).toMatchObject({ status: 200, body: { signed: 'resigned' } });
    }
    const [formReplay, jsonReplay] = app.requests;
    if (formReplay === undefined || jsonReplay === undefined) throw new Error('replays missing');
    expect(formReplay.url).toBe(`/sms?${form.query}`);
    expect(jsonReplay.url).toMatch(new RegExp(`^/sms\\?${json.query}&bodySHA256=[0-9a-f]{64}$`));
    for (const r of [formReplay, jsonReplay]) {
      expect(twilioAccepts(r, SERVER_AUTH_TOKEN), r.url).toBe(true);
      expect(twilioAccepts(r, LAPTOP_AUTH_TOKEN)).toBe(false);
    }
    // Without the query it arrived with, the very same signature is refused: the query is signed.
    expect(
      webhooks.validateRequest(SERVER_AUTH_TOKEN, signatureOf(formReplay), TWILIO_URL, formFields(formReplay.body)),
    ).toBe(false);
  });

  it('replay to a target with a query of its own: the original follows it, and both are signed', async () => {
    const app = await wire.consumer();
    expect((await replay(form.id, app.url('/sms?route=a'))).status).toBe(200);
    const [r] = app.requests;
    if (r === undefined) throw new Error('replay missing');
    expect(r.url).toBe(`/sms?route=a&${form.query}`);
    expect(twilioAccepts(r, SERVER_AUTH_TOKEN)).toBe(true);
  });

  it('forwarding: the rule delivers both with their query after its own, and the twilio package accepts them', async () => {
    await until(() => forwarded.requests.length >= 2, 'two forwarded deliveries');
    const [formForward, jsonForward] = forwarded.requests;
    if (formForward === undefined || jsonForward === undefined) throw new Error('forwards missing');
    expect(formForward.url).toBe(`/forwarded?via=rule&${form.query}`);
    expect(jsonForward.url).toMatch(new RegExp(`^/forwarded\\?via=rule&${json.query}&bodySHA256=`));
    for (const r of forwarded.requests) expect(twilioAccepts(r, SERVER_AUTH_TOKEN), r.url).toBe(true);
  });

  it("listen: signed with the laptop's Auth Token over the query it sends, which the twilio package accepts", async () => {
    const app = await wire.consumer();
    const child = wire.listen(app, ['--since', since, '--provider', 'twilio'], await wire.stateDir(), wire.server, {
      SWITCHBOARD_SIGN_SECRET: LAPTOP_AUTH_TOKEN,
    });
    await until(() => app.requests.length >= 2, 'two deliveries from listen');
    const [formListen, jsonListen] = app.requests;
    if (formListen === undefined || jsonListen === undefined) throw new Error(child.stdout() + child.stderr());
    expect(formListen.url).toBe(`/webhooks?${form.query}`);
    expect(jsonListen.url).toMatch(new RegExp(`^/webhooks\\?${json.query}&bodySHA256=`));
    for (const r of [formListen, jsonListen]) {
      expect(twilioAccepts(r, LAPTOP_AUTH_TOKEN), `${r.url}\n${child.stdout()}`).toBe(true);
      expect(twilioAccepts(r, SERVER_AUTH_TOKEN)).toBe(false);
    }
  }, 60_000);
});

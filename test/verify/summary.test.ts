/**
 * The one-line summary each preset takes from a payload (issue 18, item 1): what it shows per
 * sender, that it stays one line of at most 120 characters whatever arrives, and that it reuses
 * the parse identify() made.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import { EVENT_SUMMARY_LIMITS, PRESET_NAMES } from '../../generated/constants.ts';
import { catalogIdentify, catalogSummarize } from '../../src/verify/catalog-identity.ts';
import { githubPreset } from '../support/presets.ts';
import { LazyBody } from '../../src/verify/identify.ts';
import { openPreset } from '../support/presets.ts';
import type { DeliveryBody, HeaderBag, Preset } from '../../src/verify/preset-types.ts';
import { listSamples, sampleDelivery } from '../../src/verify/sample-deliveries.ts';
import { shopifyPreset } from '../support/presets.ts';
import { slackPreset } from '../support/presets.ts';
import { stripePreset } from '../support/presets.ts';
import { genericSummary, money, summaryLine, withoutCredentialFields } from '../../src/verify/summary.ts';
import { gitlabPreset } from '../support/presets.ts';
import { BINARY_BODY, githubDefinitions, githubExample, NOW_MS, presetNamed, presetOf } from './fixtures.ts';

const summarize = (preset: Preset, body: unknown, headers: HeaderBag = {}): string | null =>
  preset.summarize(new LazyBody(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))), headers);

/** One line, within the contract's length in characters (code points, as JSON Schema counts). */
function expectOneLine(summary: string | null): void {
  if (summary === null) return;
  expect([...summary].length).toBeGreaterThanOrEqual(EVENT_SUMMARY_LIMITS.minLength);
  expect([...summary].length).toBeLessThanOrEqual(EVENT_SUMMARY_LIMITS.maxLength);
  expect(summary).not.toMatch(/[\p{Cc}\u2028\u2029]/u);
  expect(summary).toBe(summary.trim());
  // A cut never leaves half a surrogate pair behind.
  expect(summary).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
}

describe('the summary of each sender', () => {
  it('is what each preset’s trigger sample shows', async () => {
    const generic = /^id: evt_\S+ · data\.order_id: ord_48213 · data\.carrier: UPS$/;
    const expected: Record<string, string | RegExp> = {
      'github push': 'Codertocat/Hello-World · master · Initial commit',
      'github pull_request': 'Codertocat/Hello-World · opened #2 · Update the README with new information.',
      'github issues': 'Codertocat/Hello-World · opened #1 · Spelling error in the README file',
      'stripe payment_intent.succeeded': 'payment_intent · pi_3PqYx2LkdIwHu7ix0Xyz9Qwe · 20.00 USD',
      'stripe invoice.paid': 'invoice · in_1PqZa1LkdIwHu7ixStUvWxYz · 20.00 USD',
      'slack app_mention':
        'app_mention · in C0123ABCD · by U0123ABCD · <@U0LAN0Z89> is it everything a river should be?',
      'shopify orders/create': 'orders/create · 5849123497233 · #1234',
      'standard-webhooks invoice.paid': 'id: inv_2hXqkV3cY8mP1rNbL0aT · customer_id: cust_9fKd2LmQ7rTz · amount: 4900',
      'linear Issue.create': 'ENG-123 · Checkout fails for saved cards',
      'gitlab push': 'mike/diaspora · master · fixed readme',
      'open generic': generic,
      // QStash carries whatever its publisher sent, so its summary is the generic one.
      'upstash-qstash message': /^id: [0-9a-f-]{36} · report\.kind: weekly · report\.account: acct_7842$/,
    };
    const seen: string[] = [];
    for (const name of PRESET_NAMES) {
      const preset = presetNamed(name);
      for (const { name: sampleName } of listSamples(name)) {
        const delivery = sampleDelivery(preset, sampleName, undefined, NOW_MS);
        if (delivery === undefined) throw new Error(`no ${name} ${sampleName}`);
        const summary = preset.summarize(new LazyBody(delivery.body), delivery.headers);
        expectOneLine(summary);
        const key = `${name} ${sampleName}`;
        // generic-hmac and token send the same generic sample as open.
        // A catalog preset's summary comes from its entry's templates: something of its sample shows.
        const fromCatalog = PROVIDER_CATALOG[name].summary !== undefined;
        const want = expected[key] ?? (fromCatalog ? /\S/ : generic);
        if (typeof want === 'string') expect(summary, key).toBe(want);
        else expect(summary, key).toMatch(want);
        if (key in expected) seen.push(key);
      }
    }
    expect(seen.sort()).toEqual(Object.keys(expected).sort());
  });

  it('tells apart GitHub’s own example payloads of every event, within one line', () => {
    let withRepository = 0;
    let total = 0;
    for (const definition of githubDefinitions()) {
      for (const example of definition.examples as unknown[]) {
        total += 1;
        const summary = summarize(githubPreset, example);
        expectOneLine(summary);
        const repository = (example as { repository?: { full_name?: string } }).repository?.full_name;
        if (repository !== undefined) {
          expect(summary?.startsWith(repository), definition.name).toBe(true);
          withRepository += 1;
        }
      }
    }
    expect(total).toBeGreaterThan(100);
    expect(withRepository).toBeGreaterThan(total / 2);
  });

  it('GitHub: the branch or tag of a push, the action and number of a pull request', () => {
    const push = githubExample('push') as Record<string, unknown>;
    expect(summarize(githubPreset, { ...push, ref: 'refs/tags/v1.2.0' })).toMatch(/ · tag v1\.2\.0( · |$)/);
    expect(summarize(githubPreset, githubExample('pull_request', 'closed'))).toMatch(/ · closed #\d+ · /);
    expect(summarize(githubPreset, { zen: 'Design for failure.', hook_id: 1 })).toBeNull();
  });

  it('Stripe: the object, its id and the amount in its currency, zero-decimal ones whole', () => {
    const event = (object: Record<string, unknown>) => ({ type: 'x.y', data: { object } });
    expect(summarize(stripePreset, event({ object: 'charge', id: 'ch_1', amount: 123456, currency: 'eur' }))).toBe(
      'charge · ch_1 · 1234.56 EUR',
    );
    expect(summarize(stripePreset, event({ object: 'charge', id: 'ch_2', amount: 500, currency: 'jpy' }))).toBe(
      'charge · ch_2 · 500 JPY',
    );
    expect(summarize(stripePreset, event({ object: 'customer', id: 'cus_1', email: 'a@b.c' }))).toBe(
      'customer · cus_1',
    );
    expect(summarize(stripePreset, { type: 'x', data: 'nope' })).toBeNull();
    expect(money(100, 'usd')).toBe('1.00 USD');
    expect(money(1.5, 'usd')).toBeNull();
    expect(money(100, 'dollars')).toBeNull();
  });

  it('Slack: the event type and channel, for the Events API and for slash commands', () => {
    expect(
      summarize(slackPreset, {
        type: 'event_callback',
        event: { type: 'message', channel: 'C42', user: 'U7', text: 'deploy\nnow' },
      }),
    ).toBe('message · in C42 · by U7 · deploy');
    const form = 'command=%2Fdeploy&text=api+to+prod&channel_name=ops&user_name=ana&trigger_id=1.2';
    expect(summarize(slackPreset, form)).toBe('/deploy · in #ops · by ana · api to prod');
    expect(summarize(slackPreset, 'not=a&slash=command')).toBeNull();
  });

  it('Shopify: the topic and the resource id, from the topic header and the body', () => {
    expect(
      summarize(shopifyPreset, { id: 632910392, title: 'IPod Nano' }, { 'x-shopify-topic': 'products/update' }),
    ).toBe('products/update · 632910392 · IPod Nano');
    expect(summarize(shopifyPreset, BINARY_BODY.toString('latin1'), { 'x-shopify-topic': 'orders/paid' })).toBe(
      'orders/paid',
    );
  });

  it('GitLab: the project, then the merge request or the branch', () => {
    expect(
      summarize(gitlabPreset, {
        object_kind: 'merge_request',
        project: { path_with_namespace: 'acme/api' },
        object_attributes: { iid: 12, action: 'open', title: 'Speed up login' },
      }),
    ).toBe('acme/api · open #12 · Speed up login');
  });

  it('other senders: the first few text fields, leaving out the type and times, nested ones by path', () => {
    expect(summarize(openPreset, { type: 'deploy.finished', service: 'api', ok: true })).toBe('service: api');
    expect(
      summarize(openPreset, { type: 'a', at: '2024-06-10T14:00:00Z', data: { order: 'o-1', total: 12.5, note: 'x' } }),
    ).toBe('data.order: o-1 · data.total: 12.5 · data.note: x');
    expect(summarize(openPreset, [1, 2, 3])).toBe('3 items');
    expect(summarize(openPreset, { long: 'y'.repeat(81), short: 'z' })).toBe('short: z');
    expect(summarize(openPreset, {})).toBeNull();
    expect(openPreset.summarize(new LazyBody(BINARY_BODY), {})).toBeNull();
    expect(openPreset.summarize(new LazyBody(Buffer.from('plain text')), {})).toBeNull();
  });
});

describe('credential-like fields (issue 37.3)', () => {
  it('the generic summary never shows a field whose name looks like a credential, nor what an object so named holds', () => {
    expect(summarize(openPreset, { password: 'hunter2', api_key: 'sk_live_123', token: 'abc' })).toBeNull();
    expect(
      summarize(openPreset, {
        apiKey: 'sk_live_1',
        'X-Api-Key': 'sk_live_2',
        clientSecret: 's3',
        credentials: { user: 'ada', pass: 'hunter2' },
        order: 'o-1',
        auth: { bearer: 'b' },
        data: { access_token: 'at', total_tokens: 12, note: 'x' },
      }),
    ).toBe('order: o-1 · data.total_tokens: 12 · data.note: x');
    // A Discord interactions PING: its interaction token is a credential for 15 minutes.
    expect(
      summarize(presetNamed('discord'), {
        id: '1187',
        application_id: '1187290427837456384',
        type: 1,
        token: 'aW50ZXJhY3Rpb246MTE4NzI5',
        version: 2,
      }),
    ).toBe('id: 1187 · application_id: 1187290427837456384 · version: 2');
  });

  it('a catalog template that reads a credential-like name is refused when its preset is built, and none does', () => {
    for (const name of PRESET_NAMES) expect(() => presetNamed(name), name).not.toThrow();
    const discord = PROVIDER_CATALOG.discord;
    expect(() => catalogSummarize({ ...discord, summary: ['{/data/name}', '{/token}'] })).toThrow(
      /"\{\/token\}" reads token, which looks like a credential/,
    );
    expect(() => catalogSummarize({ ...discord, summary: ['{header:X-Api-Key}'] })).toThrow(/reads X-Api-Key/);
    expect(() =>
      catalogIdentify({ ...discord, identify: { event_type: ['{/type}'], external_id: ['{/signature/token}'] } }),
    ).toThrow(/reads signature/);
  });

  it('a stored generic line loses the parts that show one; other lines stay as they are', () => {
    expect(withoutCredentialFields('password: hunter2 · api_key: sk_live_123 · token: abc')).toBeNull();
    expect(withoutCredentialFields('id: 1187 · application_id: 1 · token: aW50ZXJh')).toBe(
      'id: 1187 · application_id: 1',
    );
    expect(withoutCredentialFields('signature.token: x · event-data.id: e-1')).toBe('event-data.id: e-1');
    expect(withoutCredentialFields('service: api')).toBe('service: api');
    // A preset's line with a colon in its text is not a generic one.
    expect(withoutCredentialFields('octo/api · main · auth: fix login')).toBe('octo/api · main · auth: fix login');
    expect(withoutCredentialFields(null)).toBeNull();
  });
});

describe('summaryLine', () => {
  it('cuts at the contract’s length in characters, with … and without splitting an emoji', () => {
    const line = summaryLine(['👋'.repeat(200)]);
    expect([...(line ?? '')]).toHaveLength(EVENT_SUMMARY_LIMITS.maxLength);
    expect(line?.endsWith('👋…')).toBe(true);
    expect(summaryLine(['a\nb', '  c\u2028d  ', null, undefined, '', 7])).toBe('a b · c d · 7');
    expect(summaryLine([null, {}])).toBeNull();
  });

  it('is one line within the limit, or null, for any JSON a sender could send (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const summary = genericSummary(value);
        expectOneLine(summary);
        for (const preset of [githubPreset, stripePreset, slackPreset, shopifyPreset, gitlabPreset, openPreset]) {
          expectOneLine(summarize(preset, value));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('one parse per delivery', () => {
  it('identify() reads the parse it is given instead of parsing the bytes again', () => {
    // Bytes and parse disagree on purpose: the answer shows which one was read.
    const parsed: DeliveryBody = { bytes: Buffer.from('{}'), json: { action: 'opened', type: 'from.parse' } };
    expect(githubPreset.identify(parsed.bytes, { 'x-github-event': 'issues' }, parsed).eventType).toBe('issues.opened');
    expect(stripePreset.identify(parsed.bytes, {}, parsed).eventType).toBe('from.parse');
    expect(openPreset.identify(parsed.bytes, {}, parsed).eventType).toBe('from.parse');
    const overridden = presetOf({ preset: 'open', event_type_from: '/type' });
    expect(overridden.identify(parsed.bytes, {}, parsed).eventType).toBe('from.parse');
    // Without one, identify() parses the bytes itself, as before.
    expect(githubPreset.identify(Buffer.from('{"action":"closed"}'), { 'x-github-event': 'issues' }).eventType).toBe(
      'issues.closed',
    );
  });
});

/**
 * Figma beyond the common checks: the passcode is a secret carried in the body, so what is stored
 * is the delivery with the passcode blanked (and nothing else changed), and only an event that
 * passed its check is replayed (or sent by listen) with the configured passcode put back. Driven
 * on the wire with Figma's published examples.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateApiProviderDetail } from '../../../generated/validators.js';
import type { ApiReplayHeaders, Provider } from '../../../generated/types.ts';
import { resolveConfig } from '../../../src/config/resolve-config.ts';
import { credentialsFor, signingFor } from '../../../src/listen/local-signer.ts';
import { sampleDelivery } from '../../../src/verify/sample-deliveries.ts';
import { createProviderDirectory } from '../../../src/provider-directory/provider-directory.ts';
import { acceptedId, post, startHarness, type Harness } from '../../ingest/ingest-harness.ts';
import { expectAppError, replayHarness, type ReplayHarness } from '../../replay/replay-test-kit.ts';
import { startConsumer, type Consumer } from '../../support/local-server.ts';
import { expectFail, expectOk, presetOf } from '../fixtures.ts';
import {
  FIGMA_EXAMPLE_PASSCODE,
  FIGMA_FILE_UPDATE,
  FIGMA_PING,
  figmaAccepts,
  withPasscode,
} from '../../../catalog/figma/figma.case.ts';

const PREVIOUS = 'previous-figma-passcode';
/** The published example as it must be stored: the passcode's value blanked, every other byte as sent. */
const STORED_FILE_UPDATE = FIGMA_FILE_UPDATE.replace(`"passcode": "${FIGMA_EXAMPLE_PASSCODE}"`, '"passcode": ""');

describe('figma beyond the common checks', () => {
  const preset = presetOf({ preset: 'figma' });
  const check = (body: Buffer | string, secrets = [FIGMA_EXAMPLE_PASSCODE]) =>
    preset.verify({
      body: Buffer.from(body),
      headers: {},
      secrets,
      publicKeys: [],
      toleranceSeconds: 300,
      nowMs: Date.now(),
    });

  it("accepts Figma's published PING and FILE_UPDATE examples and names them", () => {
    for (const [example, type] of [
      [FIGMA_PING, 'PING'],
      [FIGMA_FILE_UPDATE, 'FILE_UPDATE'],
    ] as const) {
      expect(figmaAccepts({ body: Buffer.from(example), headers: {} }, FIGMA_EXAMPLE_PASSCODE)).toBe(true);
      expectOk(check(example));
      expect(preset.identify(Buffer.from(example), {}).eventType).toBe(type);
    }
  });

  it('accepts any passcode of a rotation, and says which', () => {
    const outcome = check(withPasscode(FIGMA_FILE_UPDATE, PREVIOUS), [FIGMA_EXAMPLE_PASSCODE, PREVIOUS]);
    expectOk(outcome);
    expect(outcome.detail).toContain('credential 2 of 2');
    expect(outcome.detail).not.toContain(PREVIOUS);
  });

  it('refuses a passcode that is only a prefix or an extension of the right one (compared whole, in constant time)', () => {
    for (const near of [FIGMA_EXAMPLE_PASSCODE.slice(0, -1), `${FIGMA_EXAMPLE_PASSCODE}x`, 'SECRETPASSCODE']) {
      const outcome = check(withPasscode(FIGMA_FILE_UPDATE, near));
      expectFail(outcome, 'token_mismatch');
      expect(outcome.detail).not.toContain(near);
    }
  });

  it('finds no passcode when it is absent, empty or not a string, or when the body is not JSON', () => {
    const bodies = [
      '{"event_type":"PING","webhook_id":"22"}',
      '{"event_type":"PING","passcode":""}',
      '{"event_type":"PING","passcode":12345}',
      '{"event_type":"PING","nested":{"passcode":"secretpasscode"}}',
      'passcode=secretpasscode',
      '{"event_type":"PING","passcode":"secretpasscode"',
    ];
    for (const body of bodies) {
      expect(preset.bodyCredential?.present(Buffer.from(body)), body).toBe(false);
      expectFail(check(body), 'missing_header');
    }
  });

  it('blanks only the value at /passcode, every other byte as sent (escapes, unicode, nesting, a repeated key)', () => {
    const body = Buffer.from(
      '{ "file_name" : "Caf\u00e9 \\"pass\\" \\u00e9 🎨",\n\t"passcode":"s\\u0065cret\\\\x", "nested": {"passcode": "kept"},' +
        ' "list": [1, -2.5e3, true, null, {"passcode": "kept too"}], "passcode" :  "secret\\\\x"}',
    );
    const redacted = preset.bodyCredential?.redact(body).toString('utf8');
    expect(redacted).toBe(
      '{ "file_name" : "Caf\u00e9 \\"pass\\" \\u00e9 🎨",\n\t"passcode":"", "nested": {"passcode": "kept"},' +
        ' "list": [1, -2.5e3, true, null, {"passcode": "kept too"}], "passcode" :  ""}',
    );
    // JSON.parse keeps the last of a repeated key, so that is the passcode a consumer reads and the one checked.
    expectOk(check(body, ['secret\\x']));
    const restored = preset.bodyCredential?.restore(Buffer.from(redacted ?? ''), 'new"one');
    expect(JSON.parse(restored?.toString('utf8') ?? '')).toMatchObject({
      passcode: 'new"one',
      nested: { passcode: 'kept' },
    });
  });

  it('switchboard trigger sends the sample with the configured passcode, which Figma’s check accepts', async () => {
    const delivery = sampleDelivery(preset, undefined, FIGMA_EXAMPLE_PASSCODE, Date.now());
    if (delivery === undefined) throw new Error('figma has no sample');
    expect(figmaAccepts(delivery, FIGMA_EXAMPLE_PASSCODE)).toBe(true);
    expectOk(check(delivery.body));
    expect(preset.identify(delivery.body, delivery.headers).eventType).toBe('FILE_UPDATE');
  });
});

describe('figma on the wire: stored without the passcode, replayed with it only when it passed', () => {
  const providers: Record<string, Provider> = {
    figma: { preset: 'figma', secret: [FIGMA_EXAMPLE_PASSCODE, PREVIOUS] },
  };
  let harness: Harness;
  let consumer: Consumer;
  let replays: ReplayHarness;

  beforeAll(async () => {
    harness = await startHarness({ providers });
    consumer = await startConsumer();
    replays = replayHarness(harness.db, resolveConfig({ providers }).providers);
  });

  afterAll(async () => {
    await replays.close();
    await consumer.close();
    await harness.close();
  });

  const url = (): string => `${harness.url}/hooks/figma`;

  async function replayed(eventId: string, unsigned = false): Promise<Buffer> {
    await replays.service().replay({ eventId, targetUrl: consumer.url(), caller: 'figma-test', unsigned });
    const received = consumer.requests.at(-1);
    if (received === undefined) throw new Error('nothing arrived');
    return received.body;
  }

  it("stores Figma's published example with only the passcode blanked; its replay is the delivery byte for byte", async () => {
    const answer = await post(url(), FIGMA_FILE_UPDATE, { 'user-agent': 'Figma' });
    expect(answer.status, answer.text).toBe(200);
    const stored = await harness.store.get(acceptedId(answer));
    expect(stored).toMatchObject({ passedCheck: true, verified: false, trustMode: 'token', eventType: 'FILE_UPDATE' });
    expect(stored?.payload.toString('utf8')).toBe(STORED_FILE_UPDATE);
    for (const row of await harness.rawRows()) expect(row).not.toContain(FIGMA_EXAMPLE_PASSCODE);

    const sent = await replayed(acceptedId(answer));
    expect(sent.toString('utf8')).toBe(FIGMA_FILE_UPDATE);
    expect(figmaAccepts({ body: sent, headers: {} }, FIGMA_EXAMPLE_PASSCODE)).toBe(true);
  });

  it('a delivery with the previous passcode of a rotation is stored blanked and replayed with the first one', async () => {
    const answer = await post(url(), withPasscode(FIGMA_PING, PREVIOUS));
    expect(answer.status, answer.text).toBe(200);
    for (const row of await harness.rawRows()) expect(row).not.toContain(PREVIOUS);
    const sent = await replayed(acceptedId(answer));
    expect(figmaAccepts({ body: sent, headers: {} }, FIGMA_EXAMPLE_PASSCODE)).toBe(true);
  });

  it('a wrong passcode is 401, recorded unverified without it, and its replay carries no passcode', async () => {
    const guess = 'guessed-figma-passcode';
    const answer = await post(url(), withPasscode(FIGMA_FILE_UPDATE, guess));
    expect(answer.status, answer.text).toBe(401);
    expect(answer.text).not.toContain(guess);
    const rejected = (await harness.rows('figma')).at(-1);
    expect(rejected).toMatchObject({ passedCheck: false, verified: false, eventType: 'FILE_UPDATE' });
    expect(rejected?.payload.toString('utf8')).toBe(STORED_FILE_UPDATE);
    for (const row of await harness.rawRows()) expect(row).not.toContain(guess);

    // Replay refuses it unless asked to send it without credentials; then it goes as stored.
    await expectAppError(replayed(rejected?.id ?? ''), 'invalid_argument', /did not pass its token check/);
    const sent = await replayed(rejected?.id ?? '', true);
    expect(sent.toString('utf8')).toBe(STORED_FILE_UPDATE);
    expect(figmaAccepts({ body: sent, headers: {} }, FIGMA_EXAMPLE_PASSCODE)).toBe(false);
  });

  it('a body without a passcode is 400 and not recorded', async () => {
    const before = (await harness.rows('figma')).length;
    for (const body of ['{"event_type":"PING","webhook_id":"22"}', '{"event_type":"PING","passcode":""}', 'not json']) {
      const answer = await post(url(), body);
      expect(answer.status, body).toBe(400);
      expect(answer.text).toContain('passcode');
    }
    expect((await harness.rows('figma')).length).toBe(before);
  });

  it('listen puts the passcode (its own secret) back only into an event that passed its check', async () => {
    const [passed, failed] = (await harness.rows('figma')).filter((e) => e.eventType === 'FILE_UPDATE');
    if (passed === undefined || failed === undefined) throw new Error('the events above are missing');
    const directory = createProviderDirectory(resolveConfig({ providers }).providers, () => 'connected');
    const detail: unknown = JSON.parse(JSON.stringify(directory.detail('figma')));
    if (!validateApiProviderDetail(detail)) throw new Error('figma detail is off the contract');
    const signing = signingFor(detail);
    expect(signing.kind).toBe('body');
    const info = (e: typeof passed): ApiReplayHeaders => ({
      id: e.id,
      provider: 'figma',
      trust_mode: e.trustMode,
      passed_check: e.passedCheck,
      handshake: false,
      headers: {},
    });
    const secret = 'laptop-figma-passcode';
    const sent = credentialsFor({ signing, event: info(passed), body: passed.payload, secret, nowMs: Date.now() });
    expect('body' in sent && sent.body !== undefined && figmaAccepts({ body: sent.body, headers: {} }, secret)).toBe(
      true,
    );
    const refused = credentialsFor({ signing, event: info(failed), body: failed.payload, secret, nowMs: Date.now() });
    expect(refused).toEqual({ headers: {}, reason: 'it did not pass its check on arrival' });
  });
});

/**
 * Webhook bodies to the fuzz config's signed, token and open providers, with valid, wrong, malformed
 * and missing credentials and reused delivery ids: what should be accepted is stored with exactly
 * the bytes sent (a retry answers with the first row), and what should be refused changes nothing.
 */
import { createHmac, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { anyJson } from './arbitraries.ts';
import { checkAnswer, sameSnapshot, send, type Answer } from './fuzz-http.ts';
import { fail, type Surface } from './surface.ts';
import {
  FUZZ_GITHUB_SECRET,
  FUZZ_HOOK_TOKEN,
  FUZZ_MAX_BODY_BYTES,
  FUZZ_PROVIDERS,
  STORED_TABLES,
  tableSnapshot,
  type FuzzProvider,
} from './target.ts';

export interface WebhookCase {
  provider: FuzzProvider;
  body: Buffer;
  credential: 'valid' | 'wrong' | 'malformed' | 'missing' | 'valid-other-body';
  contentType: string | undefined;
  event: string | undefined;
  delivery: 'fresh' | 'reuse' | 'none' | 'junk';
  junk: string;
}

const bodyArbitrary: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 2_048 }).map((b) => Buffer.from(b)),
  anyJson.map((v) => Buffer.from(JSON.stringify(v) ?? '')),
  fc.string({ maxLength: 500, unit: 'binary' }).map((s) => Buffer.from(s, 'utf8')),
  fc.constantFrom(
    Buffer.alloc(0),
    Buffer.from('\u0000'),
    Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
    Buffer.from('{"a":"\\u0000"}'),
    Buffer.from('{"n":1e999}'),
  ),
  // Around the providers' max_body_bytes, on both sides.
  fc.integer({ min: FUZZ_MAX_BODY_BYTES - 4_000, max: FUZZ_MAX_BODY_BYTES + 4_000 }).map((n) => Buffer.alloc(n, 0x7b)),
);

export const webhookSurface: Surface<WebhookCase> = {
  name: 'webhook-bodies',
  arbitrary: () =>
    fc.record({
      // The signed provider twice as often: it has the most ways to go wrong.
      provider: fc.constantFrom<FuzzProvider>('github', ...FUZZ_PROVIDERS),
      body: bodyArbitrary,
      credential: fc.constantFrom(
        'valid' as const,
        'valid' as const,
        'wrong' as const,
        'malformed' as const,
        'missing' as const,
        'valid-other-body' as const,
      ),
      contentType: fc.option(
        fc.oneof(
          fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain; charset=utf-8'),
          fc.string({ maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, '')),
        ),
        { nil: undefined },
      ),
      event: fc.option(
        fc.oneof(
          fc.constantFrom('issues', 'push', 'ping'),
          fc.string({ maxLength: 300 }).map((s) => s.replace(/[\r\n]/g, '')),
        ),
        { nil: undefined },
      ),
      delivery: fc.constantFrom('fresh' as const, 'fresh' as const, 'reuse' as const, 'none' as const, 'junk' as const),
      junk: fc.string({ maxLength: 300 }).map((s) => s.replace(/[\r\n]/g, '')),
    }),
  run: async (target, state, input) => {
    const headers: Record<string, string> = {};
    if (input.contentType !== undefined) headers['content-type'] = input.contentType;
    const secretFor = input.credential === 'wrong' ? 'not-the-secret' : FUZZ_GITHUB_SECRET;
    const signedBody =
      input.credential === 'valid-other-body' ? Buffer.concat([input.body, Buffer.from('x')]) : input.body;
    let deliveryId: string | undefined;
    if (input.provider === 'github') {
      if (input.event !== undefined) headers['x-github-event'] = input.event;
      if (input.credential === 'malformed') headers['x-hub-signature-256'] = input.junk;
      else if (input.credential !== 'missing')
        headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', secretFor).update(signedBody).digest('hex')}`;
      const reusable = [...state.deliveries.keys()];
      deliveryId =
        input.delivery === 'fresh'
          ? randomUUID()
          : input.delivery === 'reuse' && reusable.length > 0
            ? reusable[reusable.length - 1]
            : input.delivery === 'junk'
              ? input.junk
              : undefined;
      if (deliveryId !== undefined) headers['x-github-delivery'] = deliveryId;
    } else if (input.provider === 'hook') {
      if (input.credential === 'valid' || input.credential === 'valid-other-body')
        headers['x-webhook-token'] = FUZZ_HOOK_TOKEN;
      if (input.credential === 'wrong') headers['x-webhook-token'] = 'not-the-token';
      if (input.credential === 'malformed') headers.authorization = input.junk;
    }
    const shouldAccept =
      input.provider === 'open' ||
      (input.provider === 'github' && input.credential === 'valid') ||
      (input.provider === 'hook' && (input.credential === 'valid' || input.credential === 'valid-other-body'));
    const tooLarge = input.body.length > FUZZ_MAX_BODY_BYTES;
    const before = await tableSnapshot(target.pool);
    let answer: Answer;
    try {
      answer = await send(target, 'POST', `/hooks/${input.provider}`, headers, input.body);
    } catch (err) {
      // undici refuses some header values itself (e.g. non-visible characters) before sending.
      if (err instanceof Error && /invalid .*header|InvalidArgumentError/i.test(`${err.name} ${err.message}`))
        return 'client-refused';
      throw err;
    }
    checkAnswer(`POST /hooks/${input.provider}`, answer);
    if (shouldAccept && !tooLarge) {
      if (answer.status !== 200)
        fail(`a valid ${input.provider} delivery was refused: ${answer.status} ${answer.text.slice(0, 300)}`);
      const { id, duplicate } = JSON.parse(answer.text) as { id: string; duplicate: boolean };
      const row = await target.pool.one(
        sql.type(
          z.object({ payload: z.instanceof(Buffer), provider: z.string(), external_id: z.string().nullable() }),
        )`SELECT payload, provider, external_id FROM events WHERE id = ${id}::uuid`,
      );
      if (duplicate) {
        // A retry of a stored delivery: answered with the first row, and nothing added.
        if (row.provider !== input.provider || row.external_id === null)
          fail(`duplicate answered with an unrelated row ${id}`);
        sameSnapshot('duplicate delivery', before, await tableSnapshot(target.pool), ['events']);
      } else if (!row.payload.equals(input.body)) {
        fail(`stored bytes differ from the bytes sent (${row.payload.length} vs ${input.body.length})`);
      }
      if (!duplicate && deliveryId !== undefined && input.provider === 'github' && !state.deliveries.has(deliveryId)) {
        // Remembered so later cases can resend the same delivery id (a provider's retry).
        state.deliveries.set(deliveryId, input.body);
        if (state.deliveries.size > 200) state.deliveries.delete(state.deliveries.keys().next().value as string);
      }
      return `${input.provider} stored${duplicate ? ' (duplicate)' : ''}`;
    }
    if (answer.status < 400)
      fail(`a delivery that should be refused was accepted: ${input.provider} ${input.credential} → ${answer.status}`);
    sameSnapshot(`refused ${input.provider} delivery`, before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${input.provider} ${answer.status}`;
  },
};

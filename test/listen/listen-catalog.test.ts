/**
 * `switchboard listen` with catalog presets, end to end: a real switchboard (the composed server,
 * on its own database) on 127.0.0.1, the CLI as a child process, and a local app on 127.0.0.1 that
 * checks what arrives the way the provider's receivers do. The server holds the provider's
 * credentials; the local app holds only the laptop's, which listen signs with.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAccepts, basicAuthorization } from '../verify/providers/basic-case.ts';
import { BASIC_USERNAME } from '../verify/providers/provider-case.ts';
import type { RecordedRequest } from '../support/local-server.ts';
import { discordCase } from '../../catalog/discord/discord.case.ts';
import { sendgridCase } from '../../catalog/sendgrid/sendgrid.case.ts';
import { startListenWire, type ListenWire } from './support/listen-wire.ts';

/** Chargebee's password as the server knows it; the laptop's is another. */
const SERVER_PASSWORD = 'chargebee-server-password';
const LAPTOP_PASSWORD = 'chargebee-laptop-password';

let wire: ListenWire;

beforeAll(async () => {
  wire = await startListenWire({
    token: `listen-catalog-${randomUUID()}`,
    config: [
      'providers:',
      `  chargebee: { preset: chargebee, username: ${BASIC_USERNAME}, password: ${SERVER_PASSWORD} }`,
      `  discord: { preset: discord, public_key: "${discordCase.secret}" }`,
      `  sendgrid: { preset: sendgrid, public_key: "${sendgridCase.secret}" }`,
      '',
    ].join('\n'),
  });
});

afterAll(async () => {
  await wire?.close();
});

/** An RFC 3339 time just before now: listen started --since it sees what a test sends next, and nothing older. */
const justBefore = (): string => new Date(Date.now() - 1000).toISOString();

const headerOf = (r: RecordedRequest, name: string): string => {
  const value = r.headers[name];
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
};

describe('switchboard listen, HTTP Basic presets', () => {
  it("sends the laptop's Basic credentials with an event that passed its check, and none with one that failed", async () => {
    const since = justBefore();
    const passed = JSON.stringify({ id: `ev_${randomUUID()}`, event_type: 'subscription_created' });
    const forged = JSON.stringify({ id: `ev_${randomUUID()}`, event_type: 'subscription_cancelled' });
    expect(await wire.post('/hooks/chargebee', passed, { authorization: basicAuthorization(SERVER_PASSWORD) })).toBe(
      200,
    );
    expect(await wire.post('/hooks/chargebee', forged, { authorization: basicAuthorization('guessed') })).toBe(401);

    const target = await wire.consumer();
    const args = ['--since', since, '--provider', 'chargebee', '--include-unverified'];
    const child = wire.listen(target, args, await wire.stateDir(), wire.server, {
      SWITCHBOARD_SIGN_SECRET: `${BASIC_USERNAME}:${LAPTOP_PASSWORD}`,
    });
    await child.waitFor(/subscription_cancelled .*<-- 200/);
    const [first, second] = target.requests;
    if (first === undefined || second === undefined) throw new Error(child.stdout() + child.stderr());
    expect(first.body.toString()).toBe(passed);
    // The local app's own HTTP Basic check, written from RFC 7617, with the laptop's password.
    const delivered = { body: first.body, headers: { authorization: headerOf(first, 'authorization') } };
    expect(basicAccepts(delivered, LAPTOP_PASSWORD)).toBe(true);
    expect(basicAccepts(delivered, SERVER_PASSWORD)).toBe(false);
    // Trust is never laundered: the delivery that failed on arrival goes with no credentials at all.
    expect(second.body.toString()).toBe(forged);
    expect(second.headers.authorization).toBeUndefined();
    expect(child.stdout() + child.stderr()).not.toContain(
      Buffer.from(`${BASIC_USERNAME}:${SERVER_PASSWORD}`).toString('base64'),
    );
  }, 60_000);
});

describe('switchboard listen without a signing secret (41.11)', () => {
  const start = async (providers: readonly string[]): Promise<string> => {
    const target = await wire.consumer();
    const args = providers.flatMap((name) => ['--provider', name]);
    const child = wire.listen(target, args, await wire.stateDir());
    await child.waitFor(/^Ready!/m);
    return child.stdout() + child.stderr();
  };

  it('says nothing of unsigned events when its only providers are asymmetric: they keep their own signatures', async () => {
    const output = await start(['discord', 'sendgrid']);
    expect(output).not.toMatch(/unsigned/i);
    expect(output).toMatch(/^Ready! Forwarding \S+ → \S+$/m);
  }, 60_000);

  it('names the providers whose events go unsigned, and only those', async () => {
    const output = await start(['discord', 'chargebee']);
    expect(output).toMatch(/^Events of chargebee are forwarded unsigned: set SWITCHBOARD_SIGN_SECRET/m);
    expect(output).toMatch(/^Ready! Forwarding \S+ → \S+ \(chargebee unsigned\)$/m);
    expect(output).not.toMatch(/discord[^\n]*unsigned/);
  }, 60_000);
});

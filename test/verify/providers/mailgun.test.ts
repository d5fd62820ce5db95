import { describe, expect, it } from 'vitest';
import { expectFail, expectOk, presetOf } from '../fixtures.ts';
import { mailgunAccepts, mailgunBody, mailgunCase } from '../../../catalog/mailgun/mailgun.case.ts';

describe('mailgun beyond the common checks', () => {
  const preset = presetOf({ preset: 'mailgun' });
  const check = (body: Buffer, secrets = [mailgunCase.secret]) =>
    preset.verify({ body, headers: {}, secrets, publicKeys: [], toleranceSeconds: 300, nowMs: Date.now() });

  it('refuses a changed token or timestamp (what Mailgun signs)', () => {
    const body = mailgunBody(mailgunCase.secret, Date.now());
    const doc = JSON.parse(body.toString()) as { signature: { token: string } };
    // A different last character, whatever the random token ended in.
    const last = doc.signature.token.slice(-1);
    doc.signature.token = `${doc.signature.token.slice(0, -1)}${last === '0' ? '1' : '0'}`;
    const changed = Buffer.from(JSON.stringify(doc));
    expect(mailgunAccepts(changed, mailgunCase.secret)).toBe(false);
    expectFail(check(changed), 'bad_signature');
  });

  it('reads the legacy form fields of the same names, and accepts the second key of a rotation', () => {
    const json = JSON.parse(mailgunBody('second', Date.now()).toString()) as {
      signature: Record<string, string>;
    };
    const form = Buffer.from(new URLSearchParams({ ...json.signature, event: 'opened' }).toString());
    const outcome = check(form, ['first', 'second']);
    expectOk(outcome);
    expect(outcome.detail).toContain('secret 2 of 2');
    expect(preset.identify(form, {}).eventType).toBe('opened');
  });

  it('says what is missing when the body carries no signature', () => {
    expectFail(check(Buffer.from('{"event-data":{"event":"delivered"}}')), 'missing_header');
  });
});

/**
 * One provider of the catalog under test: a real-looking delivery signed as the provider signs it
 * (by its own npm package where that package signs; otherwise by switchboard's test signer, which
 * the case first shows the provider's package accepts, or by the provider's documented scheme
 * computed here, independently of src/), and the provider's own verifier, which must accept
 * switchboard's re-signed replay. describeProvider() runs the pure checks on every case
 * (provider-cases.test.ts); the wire test (catalog-wire.test.ts) runs every case through one real
 * server. A case is its provider's `catalog/<preset>/<preset>.case.ts` (a whole case, or one call
 * to a scheme's builder here such as body-hmac-case.ts): all-cases.ts finds it, and both tests run it.
 */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PROVIDER_CATALOG } from '../../../generated/catalog.ts';
import type { PresetName } from '../../../generated/constants.ts';
import type { Provider } from '../../../generated/types.ts';
import { findMissingHeader } from '../../../src/verify/headers.ts';
import type { Preset } from '../../../src/verify/preset-types.ts';
import { flipByte, presetOf } from '../fixtures.ts';

export interface Signed {
  body: Buffer;
  headers: Record<string, string>;
}

export interface ProviderCase {
  preset: PresetName;
  /** Config besides preset and the credential (public_url, say). */
  config?: Partial<Provider>;
  /** The credential as config takes it (secret, or public_key for asymmetric presets). */
  credential: 'secret' | 'public_key' | 'token' | 'password';
  secret: string;
  wrongSecret: string;
  /** A fresh delivery signed with `secret` as if sent at `atMs`. */
  deliver(secret: string, atMs: number): Promise<Signed> | Signed;
  /** The provider's own verifier (its package, or its documented scheme): does it accept this? */
  accepts(delivery: Signed, secret: string): Promise<boolean> | boolean;
  /** Whether a timestamp is signed (so a stale one must be refused). */
  timestamped: boolean;
  /**
   * The signed timestamp is inside the body (Linear's webhookTimestamp): a re-signed replay sends
   * the stored bytes, so it is exactly as old as the original and cannot be made fresh.
   */
  timestampInBody?: boolean;
  /** A required header: without it the delivery is 400 before its body is read. */
  requiredHeader: string | null;
  eventType: string;
  /**
   * The provider signs or presents a credential that does not cover the body (HTTP Basic, Mailgun's
   * timestamp and token), so a changed body is not a failed check; docs/providers.md says so.
   */
  bodyUnsigned?: boolean;
  /** What proves the case, as the catalog says it (checked against the catalog). */
  proof: 'package-signs' | 'package-verifies' | 'example' | 'switchboard';
}

export const PUBLIC_URL = 'https://hooks.example.com/hooks/';

/** A shared secret as config takes it, and a wrong one, both named after `name`. */
export const sharedSecret = (name: string) =>
  ({ credential: 'secret', secret: `${name}-current`, wrongSecret: `${name}-wrong` }) as const;

/**
 * The provider's check of a signature carried inside the body (Adyen, Mailgun): a body that does not
 * parse is not accepted.
 */
export const bodyCheck =
  (check: (body: Buffer, secret: string) => boolean) =>
  ({ body }: Signed, secret: string): boolean => {
    try {
      return check(body, secret);
    } catch {
      return false;
    }
  };

/** A JSON delivery: the body with its content type and the provider's headers. */
export const jsonDelivery = (body: Buffer, headers: Record<string, string>): Signed => ({
  body,
  headers: { 'content-type': 'application/json', ...headers },
});

export function hmac(
  algorithm: 'sha1' | 'sha256' | 'sha512',
  key: string | Buffer,
  parts: readonly (string | Buffer)[],
  encoding: 'hex' | 'base64' | 'base64url',
): string {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest(encoding);
}

/** Hex SHA-256 of a body, as the JWT schemes (Netlify, Vonage) put it in a claim. */
export const sha256Hex = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

export function presetFor(c: ProviderCase): Preset {
  const publicUrl = typeof c.config?.public_url === 'string' ? { public_url: c.config.public_url } : {};
  return presetOf({
    preset: c.preset,
    ...publicUrl,
    ...(c.credential === 'public_key' ? { public_key: c.secret } : {}),
  });
}

/** The user name the wire test configures for HTTP Basic cases (credential: password). */
export const BASIC_USERNAME = 'switchboard';

/** A case's secret as the check compares it: HTTP Basic compares `username:password`. */
export function configured(c: ProviderCase, secret: string): string {
  return c.credential === 'password' ? `${BASIC_USERNAME}:${secret}` : secret;
}

/** Checks a delivery with these credentials: public keys for a public-key preset, else secrets. */
export function verifyNow(preset: Preset, delivery: Signed, credentials: string[], nowMs = Date.now()) {
  const asKeys = preset.credential === 'public_key';
  return preset.verify({
    body: delivery.body,
    headers: delivery.headers,
    secrets: asKeys ? [] : credentials,
    publicKeys: asKeys ? credentials : [],
    toleranceSeconds: 300,
    nowMs,
  });
}

export function describeProvider(c: ProviderCase): void {
  describe(`preset ${c.preset}`, () => {
    const preset = presetFor(c);

    it('is proven the way the catalog says (docs/providers.md’s table is generated from it)', () => {
      expect(c.proof).toBe(PROVIDER_CATALOG[c.preset].proof.by);
    });

    const { scheme } = PROVIDER_CATALOG[c.preset];
    if (scheme.kind === 'hmac') {
      it('is tested stale exactly when the catalog declares a timestamp, in the body where it says so', () => {
        expect(c.timestamped).toBe(scheme.timestamp !== undefined);
        expect(c.timestampInBody === true).toBe(scheme.timestamp?.from.startsWith('/') === true);
      });
    }

    it('verifies a delivery signed as the provider signs it, and names it', async () => {
      const delivery = await c.deliver(c.secret, Date.now());
      expect(await c.accepts(delivery, c.secret), 'the provider’s own verifier accepts the delivery').toBe(true);
      expect(verifyNow(preset, delivery, [configured(c, c.secret)])).toMatchObject({ ok: true });
      expect(preset.identify(delivery.body, delivery.headers).eventType).toBe(c.eventType);
    });

    const refusal = preset.trustMode === 'token' ? 'token_mismatch' : 'bad_signature';

    it('rejects a tampered body and the wrong secret or key', async () => {
      const delivery = await c.deliver(c.secret, Date.now());
      const tampered = { ...delivery, body: flipByte(delivery.body) };
      const refused = refusal;
      if (c.bodyUnsigned !== true) {
        expect(await c.accepts(tampered, c.secret)).toBe(false);
        expect(verifyNow(preset, tampered, [configured(c, c.secret)])).toMatchObject({ ok: false, reason: refused });
      }
      const wrong = await c.deliver(c.wrongSecret, Date.now());
      expect(verifyNow(preset, wrong, [configured(c, c.secret)])).toMatchObject({ ok: false, reason: refused });
    });

    if (c.timestamped) {
      it('rejects a stale timestamp, in the past or the future, and a forged one as forged', async () => {
        const stale = await c.deliver(c.secret, Date.now() - 3_600_000);
        expect(verifyNow(preset, stale, [c.secret])).toMatchObject({ ok: false, reason: 'stale_timestamp' });
        const ahead = await c.deliver(c.secret, Date.now() + 3_600_000);
        expect(verifyNow(preset, ahead, [c.secret])).toMatchObject({ ok: false, reason: 'stale_timestamp' });
        // Authenticity comes first: an old forgery must not learn that its signature merely aged.
        const forged = await c.deliver(c.wrongSecret, Date.now() - 3_600_000);
        expect(verifyNow(preset, forged, [configured(c, c.secret)])).toMatchObject({ ok: false, reason: refusal });
      });
    } else {
      it('has no timestamp to go stale: a day-old delivery still verifies', async () => {
        const old = await c.deliver(c.secret, Date.now() - 86_400_000);
        expect(verifyNow(preset, old, [configured(c, c.secret)])).toMatchObject({ ok: true });
      });
    }

    it('accepts either credential while one rotates, says which one matched, and neither of two wrong ones', async () => {
      const both = [configured(c, c.wrongSecret), configured(c, c.secret)];
      const current = await c.deliver(c.secret, Date.now());
      const previous = await c.deliver(c.wrongSecret, Date.now());
      expect(verifyNow(preset, current, both)).toMatchObject({ ok: true, detail: expect.stringMatching(/ 2 of 2$/) });
      expect(verifyNow(preset, previous, both)).toMatchObject({ ok: true, detail: expect.stringMatching(/ 1 of 2$/) });
      const neither = [configured(c, c.wrongSecret), configured(c, c.wrongSecret)];
      expect(verifyNow(preset, current, neither)).toMatchObject({ ok: false, reason: refusal });
    });

    it('reports missing_header, naming it, when any header it requires is dropped', async () => {
      const delivery = await c.deliver(c.secret, Date.now());
      expect(findMissingHeader(preset.requiredHeaders, delivery.headers)).toBeNull();
      for (const entry of preset.requiredHeaders) {
        const names = typeof entry === 'string' ? [entry] : entry;
        const headers = Object.fromEntries(
          Object.entries(delivery.headers).filter(([name]) => !names.includes(name.toLowerCase())),
        );
        expect(findMissingHeader(preset.requiredHeaders, headers)).toBe(names.join(' or '));
        const outcome = verifyNow(preset, { ...delivery, headers }, [configured(c, c.secret)]);
        expect(outcome, names.join()).toMatchObject({ ok: false, reason: 'missing_header' });
        expect(outcome.detail.toLowerCase()).toContain(`missing header ${names[0] ?? ''}`);
      }
    });

    it('rejects every delivery with missing_secret when no credential is configured', async () => {
      const delivery = await c.deliver(c.secret, Date.now());
      for (const none of [[], [''], ['', '']]) {
        expect(verifyNow(preset, delivery, none)).toMatchObject({ ok: false, reason: 'missing_secret' });
      }
    });

    it('keeps its verdict to one short line, without a credential or a signature', async () => {
      const delivery = await c.deliver(c.secret, Date.now());
      const outcomes = [
        verifyNow(preset, delivery, [configured(c, c.secret)]),
        verifyNow(preset, delivery, [configured(c, c.wrongSecret)]),
        verifyNow(preset, { ...delivery, body: flipByte(delivery.body) }, [configured(c, c.secret)]),
        verifyNow(preset, delivery, [configured(c, c.secret)], Date.now() + 86_400_000),
      ];
      // Every header value, and each part of one (`t=…,v1=<digest>`, `v1,<b64> …`), long enough to
      // be a signature, a token or a key.
      const carried = Object.values(delivery.headers)
        .flatMap((value) => [value, ...value.split(/[\s,;=]+/)])
        .filter((fragment) => fragment.length >= 16);
      for (const { detail } of outcomes) {
        expect(detail.length).toBeLessThan(120);
        expect(detail).not.toMatch(/[\r\n]/);
        for (const secret of [c.secret, c.wrongSecret, ...carried]) expect(detail).not.toContain(secret);
      }
    });

    if (c.requiredHeader !== null) {
      it(`requires ${c.requiredHeader}`, async () => {
        const delivery = await c.deliver(c.secret, Date.now());
        const name = c.requiredHeader?.toLowerCase() ?? '';
        const headers = Object.fromEntries(Object.entries(delivery.headers).filter(([k]) => k.toLowerCase() !== name));
        expect(findMissingHeader(preset.requiredHeaders, headers)).toContain(name);
      });
    }

    const { bodyCredential } = preset;
    if (bodyCredential !== undefined) {
      it('stores the delivery with its credential blanked, and a replay with it restored passes the provider’s check', async () => {
        const original = await c.deliver(c.secret, Date.now());
        const stored = bodyCredential.redact(original.body);
        expect(stored.includes(c.secret)).toBe(false);
        expect(await c.accepts({ ...original, body: stored }, c.secret)).toBe(false);
        const replay = { ...original, body: bodyCredential.restore(stored, configured(c, c.secret)) };
        expect(replay.body.equals(original.body)).toBe(true);
        expect(await c.accepts(replay, c.secret)).toBe(true);
      });
    } else if (preset.sign !== undefined) {
      const sign = preset.sign;
      const resign = async (ageMs: number): Promise<Signed> => {
        const original = await c.deliver(c.secret, Date.now() - ageMs);
        const signed = sign({
          body: original.body,
          secret: configured(c, c.secret),
          nowMs: Date.now(),
          headers: original.headers,
        });
        return { body: original.body, headers: { ...original.headers, ...signed } };
      };
      it('re-signs a replay that the provider’s own verifier accepts', async () => {
        // A timestamp in the body is replayed as stored, so only a recent original can pass.
        const replay = await resign(c.timestampInBody === true ? 0 : 120_000);
        expect(await c.accepts(replay, c.secret)).toBe(true);
        expect(verifyNow(preset, replay, [configured(c, c.secret)])).toMatchObject({ ok: true });
        expect(await c.accepts(replay, c.wrongSecret)).toBe(false);
      });
      if (c.timestampInBody === true) {
        it('re-signs an old delivery that both checks still find stale: its timestamp is in the body', async () => {
          const replay = await resign(3_600_000);
          expect(await c.accepts(replay, c.secret)).toBe(false);
          expect(verifyNow(preset, replay, [c.secret])).toMatchObject({ ok: false, reason: 'stale_timestamp' });
        });
      }
    } else if (preset.tokenHeader !== undefined) {
      const header = preset.tokenHeader;
      it('replays with the configured token in its header, which the provider’s check accepts', async () => {
        const original = await c.deliver(c.secret, Date.now());
        const stored = Object.fromEntries(Object.entries(original.headers).filter(([k]) => k.toLowerCase() !== header));
        expect(await c.accepts({ body: original.body, headers: stored }, c.secret)).toBe(false);
        const replay = { body: original.body, headers: { ...stored, [header]: c.secret } };
        expect(await c.accepts(replay, c.secret)).toBe(true);
        expect(verifyNow(preset, replay, [c.secret])).toMatchObject({ ok: true });
      });
    } else {
      it('replays with the original signature, which the provider’s own verifier accepts', async () => {
        const original = await c.deliver(c.secret, Date.now());
        const kept = Object.fromEntries(
          Object.entries(original.headers).filter(([k]) => (preset.originalHeaders ?? []).includes(k.toLowerCase())),
        );
        expect(await c.accepts({ body: original.body, headers: kept }, c.secret)).toBe(true);
      });
    }
  });
}

/**
 * The `serve` banner says what is set in a person's words (issue 41.10): a provider checked with a
 * public key has a public key set, not a secret; one whose public key is missing says so.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startupBanner } from '../../src/cli/startup-banner.ts';
import { resolveConfig } from '../../src/config/resolve-config.ts';

function ed25519(encoding: 'hex' | 'base64'): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString(encoding);
}

describe('the serve banner names the credential a provider holds', () => {
  it('says "public key set" for public-key providers and "secret set" for HMAC ones', () => {
    const config = resolveConfig({
      providers: {
        discord: { preset: 'discord', public_key: ed25519('hex') },
        clerk: { preset: 'clerk', public_key: [`whpk_${ed25519('base64')}`, ed25519('base64')] },
        sendgrid: { preset: 'sendgrid', public_key: '' },
        github: { preset: 'github', secret: 'a-github-secret' },
        ci: { trust_mode: 'token', token: 'a-token' },
      },
    });
    const banner = startupBanner({ config, running: { url: 'http://127.0.0.1:1', mcpUrl: 'http://127.0.0.1:1/mcp' } });
    expect(banner).toMatch(/^ {2}discord +POST \/hooks\/discord +signed \(discord\) +public key set$/m);
    expect(banner).toMatch(/^ {2}clerk +POST \/hooks\/clerk +signed \(clerk\) +2 public keys set$/m);
    expect(banner).toMatch(/^ {2}sendgrid +.* +NO PUBLIC KEY: every delivery is rejected$/m);
    expect(banner).toMatch(/^ {2}github +.* +secret set$/m);
    expect(banner).toMatch(/^ {2}ci +.* +token set$/m);
    expect(banner).not.toMatch(/discord.*secret/);
  });
});

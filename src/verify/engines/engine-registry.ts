/**
 * Scheme kind → its engine: the one place that chooses by kind. The record is typed over every kind
 * the catalog schema allows, so a new kind does not compile until it has an engine, and a provider
 * whose scheme exists needs no change here (its catalog entry is enough).
 */
import { basicEngine } from './basic.ts';
import { adyenHmacEngine } from './adyen-hmac.ts';
import { configuredHmacEngine } from './configured-hmac.ts';
import { ecdsaP256Engine } from './ecdsa-p256.ts';
import { ed25519Engine } from './ed25519.ts';
import type { Scheme, SchemeEngine, SchemeKind } from './engine.ts';
import { hmacEngine } from './hmac.ts';
import { jwtHs256Engine } from './jwt-hs256.ts';
import { mailgunSignatureEngine } from './mailgun-signature.ts';
import { openEngine } from './open.ts';
import { passcodeEngine } from './passcode.ts';
import { standardWebhooksEngine } from './standard-webhooks.ts';
import { tokenEngine } from './token.ts';
import { twilioEngine } from './twilio.ts';

type EngineTable = { readonly [K in SchemeKind]: SchemeEngine<K> };

const ENGINES: EngineTable = {
  hmac: hmacEngine,
  'configured-hmac': configuredHmacEngine,
  'standard-webhooks': standardWebhooksEngine,
  ed25519: ed25519Engine,
  'ecdsa-p256': ecdsaP256Engine,
  'jwt-hs256': jwtHs256Engine,
  'mailgun-signature': mailgunSignatureEngine,
  'adyen-hmac': adyenHmacEngine,
  twilio: twilioEngine,
  token: tokenEngine,
  basic: basicEngine,
  passcode: passcodeEngine,
  open: openEngine,
};

/**
 * The engine of a scheme's kind. Callers hand it back the scheme it was looked up by, so each
 * engine only ever sees a scheme of its own kind.
 */
export function engineFor(scheme: Scheme): SchemeEngine<SchemeKind> {
  return ENGINES[scheme.kind];
}

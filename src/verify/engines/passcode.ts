/**
 * A shared secret the sender puts in the body (Figma's passcode). Figma calls it a passcode; it is
 * the provider's shared secret, so config names it secret.
 */
import { createPasscodeScheme } from '../schemes/credential-schemes.ts';
import { code, defineEngine } from './engine.ts';

export const passcodeEngine = defineEngine<'passcode'>({
  kind: 'passcode',
  credential: () => 'token',
  build: ({ scheme }) => createPasscodeScheme(scheme.pointer ?? '/passcode'),
  docs: {
    scheme: () => 'passcode in the body, constant-time compare',
    headers: (scheme) => `body ${code(scheme.pointer ?? '')}`,
    timestamped: () => false,
  },
});

/** HTTP Basic: `username:password` pairs from config, compared in constant time. */
import { createBasicScheme } from '../schemes/credential-schemes.ts';
import { code, defineEngine } from './engine.ts';

export const basicEngine = defineEngine<'basic'>({
  kind: 'basic',
  credentialKeys: ['username', 'password'],
  build: () => createBasicScheme(),
  docs: {
    scheme: () => 'HTTP Basic, constant-time compare',
    headers: () => code('Authorization: Basic …'),
    timestamped: () => false,
  },
});

/** Header names that must never reach a consumer, whatever was stored. */
export const NEVER_SENT = [
  'cookie',
  'authorization',
  'proxy-authorization',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'x-forwarded-for',
  'x-forwarded-proto',
  'forwarded',
  'x-real-ip',
  'expect',
];

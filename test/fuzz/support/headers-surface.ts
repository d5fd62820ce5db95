/**
 * Requests written on a raw socket, with header bytes Node's own client will not send (obs-text,
 * invalid UTF-8, control characters, huge values, injected line ends) and conflicting framing
 * (duplicate Content-Length, Content-Length with chunked). No credential is valid, so nothing may
 * be stored.
 */
import fc from 'fast-check';
import { sendRaw, type RawResponse } from '../../support/raw-socket.ts';
import { checkAnswer, closeSession, sameSnapshot } from './fuzz-http.ts';
import type { Surface } from './surface.ts';
import { STORED_TABLES, tableSnapshot } from './target.ts';

export interface HeaderCase {
  method: string;
  path: string;
  headers: Array<[string, Buffer]>;
  body: Buffer;
  framing:
    'length' | 'chunked' | 'none' | 'duplicate-length-same' | 'duplicate-length-different' | 'length-and-chunked';
  auth: 'valid' | 'invalid' | 'none';
}

const HEADER_NAMES = [
  'authorization',
  'content-type',
  'accept',
  'host',
  'x-hub-signature-256',
  'x-github-event',
  'x-github-delivery',
  'x-webhook-token',
  'mcp-session-id',
  'mcp-protocol-version',
  'x-request-id',
  'x-forwarded-for',
  'last-event-id',
  'cookie',
  'origin',
  'expect',
  'connection',
  'user-agent',
];

const headerValue: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 60 }).map((s) => Buffer.from(s.replace(/[\r\n]/g, ''), 'utf8')) },
  // Bytes Node's own client refuses to send: obs-text, invalid UTF-8, control characters.
  {
    weight: 3,
    arbitrary: fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b.filter((x) => x !== 0x0d && x !== 0x0a))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from([0xff, 0xfe, 0xfd]),
      Buffer.from([0xc3, 0x28]),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('Bearer \u00ff\u00fe', 'latin1'),
    ),
  },
  // Huge: past Node's 16 KiB header limit sometimes.
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 20_000 }).map((n) => Buffer.alloc(n, 0x61)) },
  // Header injection attempts: a bare CR or LF inside a value.
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.from('a\rb'),
      Buffer.from('a\nX-Injected: 1'),
      Buffer.from('\r\n\r\nGET / HTTP/1.1'),
    ),
  },
);

export const headersSurface: Surface<HeaderCase> = {
  name: 'headers',
  arbitrary: () =>
    fc.record({
      method: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'HEAD', 'OPTIONS', 'PATCH') },
        { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{1,12}$/) },
      ),
      path: fc.oneof(
        fc.constantFrom(
          '/hooks/github',
          '/hooks/hook',
          '/api/events',
          '/api/events?limit=2',
          '/mcp',
          '/healthz',
          '/metrics',
          '/',
          '/api/providers',
          '/hooks/nope',
          '/api/events/not-a-uuid/raw',
        ),
        fc.stringMatching(/^\/[\x21-\x7e]{0,60}$/),
      ),
      headers: fc.array(
        fc.tuple(
          fc.oneof(
            { weight: 4, arbitrary: fc.constantFrom(...HEADER_NAMES) },
            { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,30}$/) },
          ),
          headerValue,
        ),
        { maxLength: 8 },
      ),
      body: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
      framing: fc.constantFrom(
        'length',
        'length',
        'chunked',
        'none',
        'duplicate-length-same',
        'duplicate-length-different',
        'length-and-chunked',
      ),
      auth: fc.constantFrom('valid' as const, 'invalid' as const, 'none' as const),
    }),
  run: async (target, _state, input) => {
    // The ingest routes here never see a valid signature or token, so nothing may be stored.
    const before = await tableSnapshot(target.pool);
    const lines: Buffer[] = [
      Buffer.from(
        `${input.method} ${input.path} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\nConnection: close\r\n`,
        'latin1',
      ),
    ];
    if (input.auth === 'valid') lines.push(Buffer.from(`Authorization: Bearer ${target.token}\r\n`));
    if (input.auth === 'invalid') lines.push(Buffer.from('Authorization: Bearer not-the-token\r\n'));
    for (const [name, value] of input.headers) {
      // Framing headers are set below on purpose, never at random (a declared length larger than
      // the body would only make the server wait for bytes that never come).
      if (name.toLowerCase() === 'content-length' || name.toLowerCase() === 'transfer-encoding') continue;
      lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), value, Buffer.from('\r\n')]));
    }
    let body: Buffer = Buffer.alloc(0);
    switch (input.framing) {
      case 'length':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\n`));
        body = input.body;
        break;
      case 'chunked':
        lines.push(Buffer.from('Transfer-Encoding: chunked\r\n'));
        body =
          input.body.length === 0
            ? Buffer.from('0\r\n\r\n')
            : Buffer.concat([
                Buffer.from(`${input.body.length.toString(16)}\r\n`),
                input.body,
                Buffer.from('\r\n0\r\n\r\n'),
              ]);
        break;
      case 'duplicate-length-same':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nContent-Length: ${input.body.length}\r\n`));
        body = input.body;
        break;
      case 'duplicate-length-different':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nContent-Length: ${input.body.length + 1}\r\n`));
        body = input.body;
        break;
      case 'length-and-chunked':
        lines.push(Buffer.from(`Content-Length: ${input.body.length}\r\nTransfer-Encoding: chunked\r\n`));
        body = Buffer.concat([
          Buffer.from(`${input.body.length.toString(16)}\r\n`),
          input.body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]);
        break;
      case 'none':
        break;
    }
    lines.push(Buffer.from('\r\n'));
    const bytes = Buffer.concat([...lines, body]);
    const response: RawResponse | null = await sendRaw(target.port, bytes, 10_000);
    if (response === null) {
      // Closed without an answer: acceptable only for requests Node's parser refuses outright.
      return 'closed';
    }
    const text = response.body.toString('utf8');
    checkAnswer(`${input.method} ${input.path.slice(0, 60)} (raw)`, {
      status: response.status,
      headers: response.headers,
      text,
    });
    if (response.headers['mcp-session-id'] !== undefined)
      await closeSession(target, response.headers['mcp-session-id']);
    sameSnapshot('raw request', before, await tableSnapshot(target.pool), STORED_TABLES);
    return `${response.status}`;
  },
};

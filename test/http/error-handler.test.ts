import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.ts';
import { isDatabaseUnavailable } from '../../src/errors/database-unavailable.ts';
import { errorHandler } from '../../src/http/error-handler.ts';
import { requestId } from '../../src/http/request-id.ts';
import { silentLogger } from '../support/database.ts';
import { listenLocal, type Listening } from '../support/local-server.ts';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

/** What each path throws: the shapes pg, pg-pool and slonik produce when PostgreSQL is away. */
const THROWN: Record<string, () => unknown> = {
  '/refused': () => new AggregateError([withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')], ''),
  '/shutdown': () => withCode('terminating connection due to administrator command', '57P01'),
  '/slonik': () =>
    Object.assign(new Error('Connection error.'), {
      name: 'ConnectionError',
      cause: new Error('Connection terminated unexpectedly'),
    }),
  '/pool-timeout': () => new Error('timeout exceeded when trying to connect'),
  '/bug': () => new TypeError('x is not a function'),
  '/statement': () => withCode('duplicate key value violates unique constraint', '23505'),
  '/app-error': () =>
    new AppError('rate_limited', 'slow down', {
      retryAfterSeconds: 2,
      cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED'),
    }),
};

let server: Listening;
let origin: string;

beforeAll(async () => {
  const app = new Koa();
  app.silent = true;
  app.use(requestId(silentLogger));
  app.use(errorHandler(silentLogger));
  app.use((ctx) => {
    const thrown = THROWN[ctx.path];
    if (thrown === undefined) throw new Error(`no case for ${ctx.path}`);
    throw thrown();
  });
  const handle = app.callback();
  server = await listenLocal((req, res) => void handle(req, res));
  origin = server.origin;
});

afterAll(() => server?.close());

describe('the shared error handler', () => {
  it.each(['/refused', '/shutdown', '/slonik', '/pool-timeout'])(
    'answers an unreachable database (%s) 503 with Retry-After, not 500',
    async (path) => {
      const res = await fetch(`${origin}${path}`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toEqual({
        error: { code: 'unavailable', message: 'database unavailable; try again shortly' },
      });
    },
  );

  it.each(['/bug', '/statement'])('still answers other unexpected failures (%s) 500 with a reference', async (path) => {
    const res = await fetch(`${origin}${path}`);
    expect(res.status).toBe(500);
    expect(res.headers.get('retry-after')).toBeNull();
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('internal');
    expect(body.error.message).toMatch(/^internal error; reference [0-9a-f-]{36} in the server log$/);
  });

  it('leaves an AppError as its thrower meant it, whatever its cause', async () => {
    const res = await fetch(`${origin}/app-error`);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
  });
});

describe('isDatabaseUnavailable', () => {
  it('looks through wrapped errors, but not endlessly', () => {
    let nested: unknown = withCode('connect ECONNREFUSED', 'ECONNREFUSED');
    for (let i = 0; i < 3; i += 1) nested = new Error('wrapper', { cause: nested });
    expect(isDatabaseUnavailable(nested)).toBe(true);
    for (let i = 0; i < 10; i += 1) nested = new Error('wrapper', { cause: nested });
    expect(isDatabaseUnavailable(nested)).toBe(false);
    expect(isDatabaseUnavailable({ name: 'BackendTerminatedUnexpectedlyError' })).toBe(true);
    expect(isDatabaseUnavailable('ECONNREFUSED')).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
  });
});

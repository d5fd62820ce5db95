import { describe, expect, it } from 'vitest';
import { ERROR_CODES, REPLAY_ERROR_CODES } from '../../generated/constants.ts';
import { validateErrorEnvelope } from '../../generated/validators.js';
import {
  AppError,
  ERROR_REGISTRY,
  fillTemplate,
  methodNotAllowed,
  payloadTooLarge,
  unavailable,
} from '../../src/errors/app-error.ts';
import type { ErrorCode } from '../../generated/constants.ts';
import { errorEnvelope } from '../../src/errors/error-envelope.ts';

const codes = Object.keys(ERROR_REGISTRY) as ErrorCode[];

describe('the error registry', () => {
  it('registers exactly the codes of the error envelope schema, each with its own status', () => {
    expect([...codes].sort()).toEqual([...ERROR_CODES].sort());
    const statuses = codes.map((code) => ERROR_REGISTRY[code].status);
    expect(new Set(statuses).size).toBe(codes.length);
    for (const status of statuses) expect(status >= 400 && status <= 599).toBe(true);
  });

  it('maps every code to one of the five tool codes, and the five to themselves', () => {
    for (const code of codes) expect(REPLAY_ERROR_CODES).toContain(ERROR_REGISTRY[code].toolCode);
    for (const code of REPLAY_ERROR_CODES) expect(ERROR_REGISTRY[code].toolCode).toBe(code);
  });

  it('serialises every code to a valid envelope, on the wire and in a tool result', () => {
    for (const code of codes) {
      const error = new AppError(code, {}, { retryAfterSeconds: 2.2 });
      const wire = errorEnvelope(error, 'wire');
      const tool = errorEnvelope(error, 'tool');
      expect(validateErrorEnvelope(wire), code).toBe(true);
      expect(validateErrorEnvelope(tool), code).toBe(true);
      expect(wire.error.code).toBe(code);
      expect(tool.error.code).toBe(ERROR_REGISTRY[code].toolCode);
      // retry_after belongs to rate_limited alone, in whole seconds.
      expect(wire.error.retry_after).toBe(code === 'rate_limited' ? 3 : undefined);
    }
  });

  it('fills message templates, and keeps a placeholder it has no value for visible', () => {
    expect(payloadTooLarge(1024).message).toBe('request body too large; the limit is 1024 bytes');
    expect(payloadTooLarge(1024, { closeConnection: true }).headers).toEqual({ Connection: 'close' });
    const method = methodNotAllowed('PUT', '/mcp', ['GET', 'POST']);
    expect([method.status, method.message, method.headers]).toEqual([
      405,
      'method PUT not allowed on /mcp',
      { Allow: 'GET, POST' },
    ]);
    expect(unavailable().retryAfterSeconds).toBeGreaterThan(0);
    expect(fillTemplate('a {x} b {y}', { x: 1 })).toBe('a 1 b {y}');
  });
});

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';
import type { ErrorEnvelope } from '../../../generated/types.ts';
import { validateErrorEnvelope } from '../../../generated/validators.js';

interface TextResult {
  content?: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

function onlyText(result: TextResult): string {
  expect(result.content).toHaveLength(1);
  const [item] = result.content ?? [];
  expect(item?.type).toBe('text');
  return item?.text ?? '';
}

/** Calls a tool that must succeed: structured content, and the same JSON as text. */
export async function callOk<T = Record<string, unknown>>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as TextResult;
  if (result.isError === true) throw new Error(`${name} failed: ${onlyText(result)}`);
  expect(result.structuredContent).toBeDefined();
  expect(JSON.parse(onlyText(result))).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** Calls a tool that must fail: isError, the envelope as the only text, no structured content. */
export async function callError(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<ErrorEnvelope['error']> {
  const result = (await client.callTool({ name, arguments: args })) as TextResult;
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const envelope: unknown = JSON.parse(onlyText(result));
  expect(validateErrorEnvelope(envelope), JSON.stringify(validateErrorEnvelope.errors)).toBe(true);
  return (envelope as ErrorEnvelope).error;
}

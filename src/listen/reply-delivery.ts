/**
 * `switchboard listen --reply`: one delivery whose provider waits, sent to the local app once (no
 * retry: the provider is waiting, and a second send of an interaction does harm), its answer read
 * up to the server's cap within the server's wait, and turned into the answer call's body
 * (ApiReplyAnswer). The app's bytes go back to the server only, never to the terminal.
 */
import { request, type Agent } from 'undici';
import type { ApiReplyAnswer } from '../../generated/types.ts';
import { AnswerTooLargeError, readBounded } from './bounded-body.ts';
import { describeNetworkError } from './server-client.ts';

/** The most headers passed back; the server keeps only Content-Type and a short allowlist anyway. */
const MAX_HEADERS = 100;

/** What the app answered, as the answer call carries it, and what the terminal line shows of it. */
export interface LocalAnswer {
  answer: ApiReplyAnswer;
  /** The app's status, when it answered. */
  status: number | null;
  /** Why there is no usable answer, in words (never the app's bytes). */
  error: string | null;
}

function headersOf(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || Object.keys(headers).length >= MAX_HEADERS) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function failureOf(err: unknown, timedOut: boolean): ApiReplyAnswer {
  if (err instanceof AnswerTooLargeError) return { failure: 'too_large' };
  if (timedOut) return { failure: 'no_answer' };
  const text = describeNetworkError(err);
  if (/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/.test(text)) return { failure: 'could_not_connect' };
  return { failure: 'failed' };
}

/** POSTs the delivery to the app once and reads its answer, within timeoutMs and maxBytes. */
export async function askLocalApp(options: {
  url: URL;
  headers: Record<string, string | string[]>;
  body: Buffer;
  agent: Agent;
  timeoutMs: number;
  maxBytes: number;
  signal: AbortSignal;
}): Promise<LocalAnswer> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([deadline, options.signal]);
  let status: number | null = null;
  try {
    const response = await request(options.url, {
      method: 'POST',
      headers: options.headers,
      body: options.body,
      dispatcher: options.agent,
      signal,
    });
    status = response.statusCode;
    const bytes = await readBounded(response, options.maxBytes, `POST ${options.url.href}`);
    return {
      answer: { status, headers: headersOf(response.headers), body_base64: bytes.toString('base64') },
      status,
      error: null,
    };
  } catch (err: unknown) {
    const answer = failureOf(err, deadline.aborted);
    return { answer, status, error: 'failure' in answer ? answer.failure : describeNetworkError(err) };
  }
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect as netConnect } from 'node:net';
import { expect } from 'vitest';
import type { buildConnector, Dispatcher } from 'undici';
import { DeliveryFailure, type DeliveryFailureReason } from '../../../src/outbound/delivery-failure.ts';
import {
  createGuardedDispatcher,
  type ConnectAttempt,
  type RawConnector,
} from '../../../src/outbound/target-policy/guarded-dispatcher.ts';
import {
  checkTarget,
  type CheckedTarget,
  type ResolvedAddress,
  type Resolver,
} from '../../../src/outbound/target-policy/resolve-target.ts';
import type { SelfAddress } from '../../../src/outbound/target-policy/self-loop.ts';
import type { TargetPolicy } from '../../../src/outbound/target-policy/target-policy.ts';
import { parseTarget } from '../../../src/outbound/target-policy/target-url.ts';
import { listenLocal } from '../../support/local-server.ts';

/** The only host a test socket is ever opened to, whatever address the guard asked for. */
const STAND_IN_HOST = '127.0.0.1';

export interface RecordingConnector {
  connect: RawConnector;
  /** What the guard asked the connector to open, in order. */
  attempts: buildConnector.Options[];
}

/** Records every socket the guard asks for and opens none. */
export function refusingConnector(): RecordingConnector {
  const attempts: buildConnector.Options[] = [];
  return {
    attempts,
    connect: (opts, callback) => {
      attempts.push(opts);
      callback(new Error('test connector: no socket is opened in this test'), null);
    },
  };
}

/**
 * Records the address the guard approved but opens the socket to a loopback test server instead,
 * so "allowed non-loopback" paths complete without a packet leaving the machine even if the guard
 * is wrong.
 */
export function standInConnector(port: number): RecordingConnector {
  const attempts: buildConnector.Options[] = [];
  return {
    attempts,
    connect: (opts, callback) => {
      attempts.push(opts);
      const socket = netConnect({ host: STAND_IN_HOST, port });
      socket.once('connect', () => callback(null, socket));
      socket.once('error', (error) => callback(error, null));
    },
  };
}

export interface ScriptedResolver {
  resolver: Resolver;
  calls: string[];
}

/**
 * Answers the n-th lookup with the n-th script entry (the last one repeats), the way a rebinding
 * DNS server changes its answer between lookups.
 */
export function scriptedResolver(...answers: (readonly string[])[]): ScriptedResolver {
  const calls: string[] = [];
  return {
    calls,
    resolver: async (hostname) => {
      calls.push(hostname);
      const answer = answers[Math.min(calls.length - 1, answers.length - 1)] ?? [];
      return answer.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
}

/** A resolver that fails the test if anything asks it. */
export function forbiddenResolver(): ScriptedResolver {
  const calls: string[] = [];
  return {
    calls,
    resolver: async (hostname) => {
      calls.push(hostname);
      throw new Error(`resolver must not be called (asked for ${hostname})`);
    },
  };
}

export interface TestServer {
  host: string;
  port: number;
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  requests: { method: string; url: string; host: string | undefined }[];
  close: () => Promise<void>;
}

export async function startServer(
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok'),
): Promise<TestServer> {
  const listening = await listenLocal((req, res) => {
    state.requests.push({ method: req.method ?? '', url: req.url ?? '', host: req.headers.host });
    handler(req, res);
  }, host);
  const state: TestServer = {
    host,
    port: listening.port,
    connections: 0,
    requests: [],
    close: () => listening.close(),
  };
  listening.server.on('connection', () => {
    state.connections += 1;
  });
  return state;
}

/**
 * The DeliveryFailure an action ends in: thrown (the target checks), or answered as a result
 * (`deliver()` answers `{ ok: false, failure }`).
 */
async function failureOf(action: Promise<unknown> | (() => unknown)): Promise<DeliveryFailure> {
  let caught: unknown;
  try {
    const value: unknown = await (typeof action === 'function' ? action() : action);
    if (typeof value === 'object' && value !== null && 'failure' in value) caught = value.failure;
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected a delivery failure').toBeInstanceOf(DeliveryFailure);
  return caught as DeliveryFailure;
}

/** Asserts a refusal (nothing sent) whose detail names the rule, and its reason when given. */
export async function expectRefused(
  action: Promise<unknown> | (() => unknown),
  detail: RegExp,
  reason?: DeliveryFailureReason,
): Promise<DeliveryFailure> {
  const failure = await failureOf(action);
  expect(failure.code, failure.detail).toBe('refused');
  expect(failure.detail).toMatch(detail);
  if (reason !== undefined) expect(failure.reason).toBe(reason);
  return failure;
}

export interface PrepareDeliveryOptions {
  policy: TargetPolicy;
  resolver?: Resolver;
  selfAddresses?: readonly SelfAddress[];
  connect?: RawConnector;
  onConnect?: (attempt: ConnectAttempt) => void;
  connectTimeoutMs?: number;
}

/**
 * The guard's checks in the order a delivery makes them (deliver-event.ts): validate the target
 * without touching the network, resolve and check it once, refuse loops, and pin a dispatcher to
 * the checked address. `dispatcher` goes to undici `request(target.url, …)`; close it when done.
 */
export async function prepareDelivery(
  target: string,
  options: PrepareDeliveryOptions,
): Promise<{ target: CheckedTarget; dispatcher: Dispatcher }> {
  const checked = await checkTarget(parseTarget(target), options);
  const dispatcher = createGuardedDispatcher({ ...options, pinned: checked });
  return { target: checked, dispatcher };
}

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric switchboard exports, in one registry per server instance (tests run several
 * servers in one process, and prom-client's global registry would mix them). The state gauges
 * (database pool, MCP sessions) are read at scrape time from what they describe, so observePool
 * in metrics-route.ts registers them once the pool and the MCP surface exist.
 */
export interface Metrics {
  registry: Registry;
  deliveries: Counter<'provider' | 'outcome'>;
  verificationFailures: Counter<'provider' | 'reason'>;
  rejectedNotRecorded: Counter<'provider'>;
  lateReplies: Counter<'provider'>;
  ingestLatency: Histogram<'provider'>;
  queueMessages: Counter<'provider' | 'outcome'>;
  mcpCalls: Counter<'tool' | 'code'>;
  replays: Counter<'outcome'>;
  rateLimited: Counter<'class'>;
  sseClients: Gauge;
  forwardDeliveries: Counter<'rule' | 'outcome'>;
  forwardAttemptDuration: Histogram<'rule'>;
}

export function createMetrics(options: { collectDefaults?: boolean } = {}): Metrics {
  const registry = new Registry();
  // prom-client's default names already start with process_ or nodejs_: the prefix is only ours.
  if (options.collectDefaults ?? true) collectDefaultMetrics({ register: registry, prefix: 'switchboard_' });
  const registers = [registry];
  // Every name is switchboard_<name>; counters differ only in what they count and by which labels.
  const counter = <L extends string>(name: string, labelNames: readonly L[], help: string): Counter<L> =>
    new Counter({ name: `switchboard_${name}`, help, labelNames, registers });
  return {
    registry,
    deliveries: counter(
      'webhook_deliveries_total',
      ['provider', 'outcome'],
      'Webhook deliveries by provider and outcome (stored, duplicate, rejected, not_found, too_large, bad_request, unavailable).',
    ),
    verificationFailures: counter(
      'verification_failures_total',
      ['provider', 'reason'],
      'Deliveries whose signature or token did not check out, by reason.',
    ),
    rejectedNotRecorded: counter(
      'rejected_not_recorded_total',
      ['provider'],
      'Rejected deliveries answered 401 but not stored, because their source address was over ingest.record_rejected_per_minute.',
    ),
    lateReplies: counter(
      'reply_late_answers_total',
      ['provider'],
      'Answers from switchboard listen --reply refused as late: another listener answered first, or the wait had ended.',
    ),
    ingestLatency: new Histogram({
      name: 'switchboard_ingest_duration_seconds',
      help: 'Time from request to acknowledgement (row committed) for webhook deliveries.',
      labelNames: ['provider'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    queueMessages: counter(
      'queue_messages_total',
      ['provider', 'outcome'],
      'Queue messages by provider and outcome (stored, failed).',
    ),
    mcpCalls: counter(
      'mcp_tool_calls_total',
      ['tool', 'code'],
      'MCP tool calls by tool and result code (ok or an error code).',
    ),
    replays: counter('replays_total', ['outcome'], 'Replay attempts by outcome (delivered, or an error code).'),
    rateLimited: counter(
      'rate_limited_total',
      ['class'],
      'Requests refused by a rate limit, by bucket class (read, write, replay).',
    ),
    sseClients: new Gauge({ name: 'switchboard_sse_clients', help: 'Open /api/stream connections.', registers }),
    forwardDeliveries: counter(
      'forward_deliveries_total',
      ['rule', 'outcome'],
      'Forward attempts by rule and outcome (delivered; failed, to be retried; dead, after max_attempts).',
    ),
    forwardAttemptDuration: new Histogram({
      name: 'switchboard_forward_attempt_duration_seconds',
      help: "Time one forward attempt took, from loading the event to the consumer's answer (or the failure).",
      labelNames: ['rule'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
  };
}

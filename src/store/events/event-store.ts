/**
 * The one store every surface reads: MCP, the HTTP API and the UI all go through this interface,
 * so the shapes they serve cannot drift.
 */
import type { ListOrder } from '../../../generated/constants.ts';
import type {
  ApiEventList,
  ApiEventSummary,
  EventHeaders,
  EventReply,
  EventSummary,
  ListWebhookEventsOutput,
  TrustMode,
} from '../../../generated/types.ts';
import type { ArrivalRequest } from '../../sanitize/sanitize-request.ts';

export interface NewEvent {
  provider: string;
  eventType: string;
  trustMode: TrustMode;
  verified: boolean;
  /**
   * Signed and token events: whether the signature or token checked out on arrival. Omitted, a
   * signed event's is its `verified` and a token event's is false (never assumed to have passed).
   * Open and queue events have none.
   */
  passedCheck?: boolean;
  verifyDetail: string;
  externalId: string | null;
  contentType: string | null;
  sourceIp: string | null;
  /** Already sanitized: no secret or signature value may reach this point. */
  headers: EventHeaders;
  /** The exact bytes received, or their first bytes when receivedSize says more arrived. */
  payload: Buffer;
  /** Set only when the payload was cut: how many bytes arrived (more than payload holds). */
  receivedSize?: number;
  /** One line from the payload (verify/summary.ts), at most the contract's length; none when omitted. */
  summary?: string | null;
  /** Webhooks only: the request it arrived in. Queue messages have none. */
  request?: ArrivalRequest;
  /**
   * A provider's registration handshake (verify/handshakes.ts), stored like any event but never
   * forwarded: it is protocol between the provider and switchboard, not something a consumer acts on.
   */
  handshake?: boolean;
  /**
   * The provider waits for the app's answer and this rule's target gives it: the rule's outbox row
   * is written already claimed by ingest (claim), as attempt 1, so the dispatcher does not send it
   * too; with leaseMs the claim expires then and the outbox may retry (reply.retry), without it
   * the row waits for ingest to settle it.
   */
  replyDelivery?: ReplyDelivery;
}

/** The outbox row of a reply attempt (NewEvent.replyDelivery). */
export interface ReplyDelivery {
  id: string;
  rule: string;
  claim: string;
  leaseMs: number | null;
}

/** A stored event: what was written, with the id, size and arrival time the store gave it. */
export interface StoredEvent extends Omit<
  NewEvent,
  'passedCheck' | 'receivedSize' | 'summary' | 'request' | 'handshake' | 'replyDelivery'
> {
  id: string;
  /**
   * Signed and token events: true only when the signature or token checked out on arrival (false
   * too when no outcome was recorded). Null for open and queue events, which are not checked.
   * Replay attaches credentials only when this is true.
   */
  passedCheck: boolean | null;
  payloadSize: number;
  /** How many bytes arrived when only the first payloadSize were stored; null when stored whole. */
  receivedSize: number | null;
  /** RFC 3339 with the database's full microsecond precision. */
  receivedAt: string;
  summary: string | null;
  /** Null for queue messages and for events stored before the request was recorded. */
  request: ArrivalRequest | null;
  /**
   * Whether ingest answered it as a registration handshake, as recorded when it was stored; null
   * for events stored before that was recorded (migration 0017: replay/handshake-event.ts reads
   * what ingest recorded then instead).
   */
  handshake: boolean | null;
  /** The provider waited for the app's answer: how that went (migration 0020); absent when it did not. */
  reply?: EventReply;
}

export interface InsertResult {
  event: EventSummary;
  /** True when (provider, external_id) was already stored: a provider's retry, acknowledged without a second row. */
  duplicate: boolean;
}

/**
 * The filters of list_webhook_events, which GET /api/events takes too (the same inputs, the same
 * checks: listQueryFromInput), plus the from/to window only the HTTP API has.
 */
export interface ListQuery {
  provider?: string | undefined;
  eventType?: string | undefined;
  /** Exclusive lower bound: an ISO-8601 time or an event id. */
  since?: string | undefined;
  /** Inclusive upper bound: an ISO-8601 time or an event id. */
  until?: string | undefined;
  /** Default newest_first; the cursor continues in the order it was made in. */
  order?: ListOrder | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  /** Full-text search over payloads. */
  q?: string | undefined;
  /** JSON containment filter on the payload. */
  match?: Record<string, unknown> | undefined;
  /** HTTP API only: received_at >= from. */
  from?: string | undefined;
  /** HTTP API only: received_at < to. */
  to?: string | undefined;
  verified?: boolean | undefined;
}

export interface EventStore {
  insert(event: NewEvent): Promise<InsertResult>;
  insertMany(events: readonly NewEvent[]): Promise<InsertResult[]>;
  get(id: string): Promise<StoredEvent | null>;
  /** A page of summaries without the one-line summary (MCP and the HTTP API both list listWithSummaries' page). */
  list(query: ListQuery): Promise<ListWebhookEventsOutput>;
  /** The same page, each event with its one-line summary: the HTTP API lists it, MCP with the line cut (src/mcp/event-summaries.ts). */
  listWithSummaries(query: ListQuery): Promise<ApiEventList>;
  /** Whether any stored event came from this provider (configured now or not). */
  providerHasEvents(provider: string): Promise<boolean>;
  /** Summaries of the given ids, in the order given, skipping unknown ids (for the live stream). */
  summaries(ids: readonly string[]): Promise<ApiEventSummary[]>;
  /**
   * Corrects the status recorded as answered to the event's sender: ingest records 200 before the
   * commit, and answers 503 instead when the commit is confirmed too late.
   */
  recordResponseStatus(id: string, status: number): Promise<void>;
  /** Records how the reply attempt of an event whose provider waited for the app's answer ended. */
  recordReply(id: string, reply: EventReply): Promise<void>;
}

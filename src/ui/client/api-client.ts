import { LIST_LIMIT } from '../../../generated/constants.ts';
import type {
  ApiEventList,
  ApiProviderDetail,
  Delivery,
  EventDeliveries,
  ApiEventDetail,
  ForwardList,
  ForwardRetryDeadResult,
  ForwardRuleStatus,
  ListProvidersOutput,
  ReplayHistory,
  ReplayResult,
  SearchEventsQuery,
} from '../../../generated/types.ts';

export interface UiConfig {
  replay: { default_target: string | null };
  /** The caller name the replay history gives the server's own token (SWITCHBOARD_TOKEN). */
  server_token_caller: string;
  /** How to run the CLI where the server runs; hints and copy buttons start with it (cli-command.ts). */
  cli_command: string;
}

/** An error envelope from the API, or a transport failure (status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | undefined;

  constructor(status: number, code: string, message: string, retryAfter?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export interface EventFilters {
  provider: string;
  eventType: string;
  verified: '' | NonNullable<SearchEventsQuery['verified']>;
  q: string;
  /** datetime-local values (the browser's zone); converted to RFC 3339 for the API. */
  from: string;
  to: string;
}

export const EMPTY_FILTERS: EventFilters = { provider: '', eventType: '', verified: '', q: '', from: '', to: '' };

/** Whether any filter is set (so an empty list means "nothing matches", not "nothing yet"). */
export const filtersActive = (filters: EventFilters): boolean =>
  (Object.keys(EMPTY_FILTERS) as (keyof EventFilters)[]).some((key) => filters[key].trim() !== '');

/** The part of an event type before its first dot: `pull_request` for `pull_request.opened`. */
export const familyOf = (eventType: string): string => eventType.split('.', 1)[0] ?? eventType;

export function localToIso(value: string): string | undefined {
  if (value === '') return undefined;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** @internal outside src/, only tests or benches use it */
export function filtersToQuery(filters: EventFilters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  if (filters.provider) params.set('provider', filters.provider);
  if (filters.eventType.trim()) params.set('event_type', filters.eventType.trim());
  if (filters.verified) params.set('verified', filters.verified);
  if (filters.q.trim()) params.set('q', filters.q.trim());
  const from = localToIso(filters.from);
  const to = localToIso(filters.to);
  if (from) params.set('from', from);
  if (to) params.set('to', to);
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params.toString();
}

async function errorOf(response: Response): Promise<ApiError> {
  const retryHeader = response.headers.get('retry-after');
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string; retry_after?: number } };
    const e = body.error;
    if (e && typeof e.code === 'string') {
      return new ApiError(
        response.status,
        e.code,
        e.message ?? e.code,
        e.retry_after ?? (retryHeader ? Number(retryHeader) : undefined),
      );
    }
  } catch {
    // not JSON: fall through to a generic error
  }
  return new ApiError(response.status, 'http_error', `HTTP ${response.status}`);
}

/**
 * Every call carries the bearer token; there are no cookies. A 401 anywhere means the token is
 * gone or revoked, and onUnauthorized sends the user back to sign-in.
 */
export class ApiClient {
  constructor(
    private readonly token: string,
    private readonly onUnauthorized: () => void,
  ) {}

  get authHeader(): string {
    return `Bearer ${this.token}`;
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(path, {
        ...init,
        cache: 'no-store',
        credentials: 'omit',
        headers: { Authorization: this.authHeader, Accept: 'application/json', ...(init.headers ?? {}) },
      });
    } catch (err) {
      throw new ApiError(0, 'network', err instanceof Error ? `network error: ${err.message}` : 'network error');
    }
    if (response.status === 401) this.onUnauthorized();
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  private async json<T>(path: string, init?: RequestInit): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  /** `before`: only events received before this RFC 3339 time (the API's exclusive `to`). */
  listEvents(
    filters: EventFilters,
    cursor?: string,
    limit: number = LIST_LIMIT.default,
    before?: string,
  ): Promise<ApiEventList> {
    const extra: Record<string, string> = { limit: String(limit) };
    if (cursor) extra.cursor = cursor;
    if (before !== undefined) extra.to = before;
    return this.json(`/api/events?${filtersToQuery(filters, extra)}`);
  }

  getEvent(id: string): Promise<ApiEventDetail> {
    return this.json(`/api/events/${encodeURIComponent(id)}`);
  }

  async getRaw(id: string): Promise<Blob> {
    return (await this.request(`/api/events/${encodeURIComponent(id)}/raw`, { headers: { Accept: '*/*' } })).blob();
  }

  replay(id: string, targetUrl: string, unsigned: boolean): Promise<ReplayResult> {
    return this.json(`/api/events/${encodeURIComponent(id)}/replay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        ...(targetUrl.trim() ? { target_url: targetUrl.trim() } : {}),
        ...(unsigned ? { unsigned: true } : {}),
      }),
    });
  }

  replays(id: string): Promise<ReplayHistory> {
    return this.json(`/api/events/${encodeURIComponent(id)}/replays`);
  }

  providers(): Promise<ListProvidersOutput> {
    return this.json('/api/providers');
  }

  providerDetail(name: string): Promise<ApiProviderDetail> {
    return this.json(`/api/providers/${encodeURIComponent(name)}`);
  }

  config(): Promise<UiConfig> {
    return this.json('/api/config');
  }

  forwards(): Promise<ForwardList> {
    return this.json('/api/forwards');
  }

  deliveries(eventId: string): Promise<EventDeliveries> {
    return this.json(`/api/events/${encodeURIComponent(eventId)}/deliveries`);
  }

  retryDelivery(deliveryId: string): Promise<Delivery> {
    return this.json(`/api/deliveries/${encodeURIComponent(deliveryId)}/retry`, { method: 'POST' });
  }

  retryDead(rule: string): Promise<ForwardRetryDeadResult> {
    return this.json(`/api/forwards/${encodeURIComponent(rule)}/retry-dead`, { method: 'POST' });
  }

  /** Pauses (true) or resumes (false) a rule; answers with its new status. */
  setPaused(rule: string, paused: boolean): Promise<ForwardRuleStatus> {
    return this.json(`/api/forwards/${encodeURIComponent(rule)}/${paused ? 'pause' : 'resume'}`, { method: 'POST' });
  }
}

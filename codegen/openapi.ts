/** The OpenAPI 3.1 document for /api, built from the same schemas as MCP so the surfaces cannot drift. */
import { bundleSchema, type JsonObject, type JsonValue, type SchemaRegistry } from './bundle-schema.ts';

const BASE = 'https://switchboard.dev/schemas/';

function component(registry: SchemaRegistry, file: string): JsonObject {
  const schema = registry.get(`${BASE}${file}`);
  if (!schema) throw new Error(`openapi: schema ${file} not found`);
  return bundleSchema(schema, registry, {
    keepNestedDescriptions: true,
    keepLengthBounds: true,
    keepLongEnums: true,
    keepStrictness: true,
  });
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });

const json = (schema: JsonObject, description: string): JsonObject => ({
  description,
  content: { 'application/json': { schema } },
});

const errors = (...statuses: number[]): JsonObject =>
  Object.fromEntries(
    statuses.map((s): [string, JsonValue] => [String(s), json(ref('ErrorEnvelope'), ERROR_TEXT[s] ?? 'Error')]),
  );

/** Each status with the one code it carries (src/errors/app-error.ts holds the registry). */
const ERROR_TEXT: Record<number, string> = {
  400: 'invalid_argument',
  401: 'unauthenticated: missing or unknown bearer token (WWW-Authenticate: Bearer)',
  403: 'forbidden: Host or Origin not allowed (DNS-rebinding protection)',
  404: 'not_found',
  405: 'method_not_allowed (see Allow)',
  409: 'conflict: a one-time action was already done (a second answer to a pending reply)',
  413: 'payload_too_large: request body too large',
  429: 'rate_limited (see Retry-After)',
  500: 'internal',
  502: 'replay_failed',
  503: 'unavailable: the database cannot be reached (see Retry-After)',
};

const queryParam = (name: string, schema: JsonObject, description: string): JsonObject => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

const idParam: JsonObject = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Event id (UUIDv7).',
  schema: { type: 'string', format: 'uuid' },
};

const deliveryIdParam: JsonObject = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Delivery id (UUIDv7): the X-Switchboard-Delivery header.',
  schema: { type: 'string', format: 'uuid' },
};

/** `listMcpOnlyInputs`: list_webhook_events inputs GET /api/events does not take (wait_ms). */
export function buildOpenApi(registry: SchemaRegistry, listMcpOnlyInputs: readonly string[]): JsonObject {
  // The query parameters of /api/events: list_webhook_events' filters, then the search the API adds.
  const queryParams = (file: string): JsonObject[] => {
    const props = (component(registry, file).properties ?? {}) as JsonObject;
    return Object.entries(props).map(([name, schema]) => {
      const { description, ...rest } = schema as JsonObject;
      return queryParam(name, rest, typeof description === 'string' ? description : name);
    });
  };
  // The search inputs travel as query-string text (match as JSON, verified as true/false), so
  // their query-string forms replace the tool's JSON-typed ones.
  const searchParams = queryParams('search-events-query.schema.json');
  const searchNames = new Set(searchParams.map((p) => p.name));
  const apiOmits = new Set<JsonValue | undefined>(listMcpOnlyInputs);
  const listParams = queryParams('tools/list-webhook-events.input.schema.json').filter(
    (p) => !searchNames.has(p.name) && !apiOmits.has(p.name),
  );
  // The replay body is the tool's input without the id, which the path carries.
  const replayInput = component(registry, 'tools/replay-webhook-event.input.schema.json');
  const { id: _id, ...replayBodyProps } = (replayInput.properties ?? {}) as JsonObject;
  // The rule-name path parameter takes the schema's own name rule.
  const ruleProps = (component(registry, 'forward-rule-status.schema.json').properties ?? {}) as Record<
    string,
    JsonObject
  >;
  const { description: _ruleText, ...ruleName } = ruleProps.name ?? {};
  const ruleParam: JsonObject = {
    name: 'name',
    in: 'path',
    required: true,
    description: 'A forward rule name, as in forward: of the config.',
    schema: ruleName,
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'switchboard HTTP API',
      version: '1',
      description:
        "The JSON API behind the web UI. It serves the MCP tools' shapes, from the same schemas; its event lists carry each event's one-line summary whole (ApiEventSummary), where MCP cuts it to keep agents' context small. Every endpoint needs Authorization: Bearer <token>.",
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }],
    paths: {
      '/api/events': {
        get: {
          operationId: 'listEvents',
          summary:
            'List events newest first (or oldest first with order=oldest_first), with the filters of list_webhook_events plus the from/to window. Page with cursor=next_cursor, keeping the other parameters.',
          parameters: [...listParams, ...searchParams],
          responses: {
            '200': json(ref('ApiEventList'), 'A page of events, each with its one-line summary'),
            ...errors(400, 401, 403, 429, 500, 503),
          },
        },
      },
      '/api/events/{id}': {
        get: {
          operationId: 'getEvent',
          parameters: [idParam],
          responses: {
            '200': json(
              ref('ApiEventDetail'),
              "The full event, with who an open provider's event looks like it came from",
            ),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/events/{id}/raw': {
        get: {
          operationId: 'getEventRaw',
          summary: 'The exact stored bytes, with the stored Content-Type.',
          parameters: [idParam],
          responses: {
            '200': {
              description: 'Raw payload',
              content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
            },
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/events/{id}/replay-headers': {
        get: {
          operationId: 'getEventReplayHeaders',
          summary:
            'The headers a replay of this event copies (never a signature, token or other secret), and whether it passed its check on arrival: with GET /api/events/{id}/raw, what a client needs to send the event on itself, signing with its own secret (switchboard listen).',
          parameters: [idParam],
          responses: {
            '200': json(ref('ApiReplayHeaders'), 'Replay-safe headers and the arrival check'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/events/{id}/replay': {
        post: {
          operationId: 'replayEvent',
          parameters: [idParam],
          requestBody: {
            required: false,
            content: {
              'application/json': {
                schema: { type: 'object', additionalProperties: false, properties: replayBodyProps },
              },
            },
          },
          responses: {
            '200': json(ref('ReplayResult'), 'Replay outcome'),
            ...errors(400, 401, 403, 404, 413, 429, 500, 502, 503),
          },
        },
      },
      '/api/events/{id}/replays': {
        get: {
          operationId: 'listReplays',
          summary: 'Replay history of one event, newest first.',
          parameters: [idParam],
          responses: {
            '200': json(ref('ReplayHistory'), 'Replay attempts'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/events/{id}/deliveries': {
        get: {
          operationId: 'listEventDeliveries',
          summary: "The event's delivery to each forward rule that took it, with every attempt.",
          parameters: [idParam],
          responses: {
            '200': json(ref('EventDeliveries'), 'Deliveries by rule'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/deliveries/{id}/retry': {
        post: {
          operationId: 'retryDelivery',
          summary:
            'Make a failed or dead delivery (or a pending one) due now, with a fresh max_attempts; 400 invalid_argument when it is already delivered or in flight.',
          parameters: [deliveryIdParam],
          responses: {
            '200': json(ref('Delivery'), 'The delivery, now pending'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/replies/{id}': {
        post: {
          operationId: 'answerReply',
          summary:
            "The app's answer to a delivery offered on GET /api/stream?reply=… (switchboard listen --reply), passed to the provider that waits: taken once, from a token whose stream was offered it (403 forbidden otherwise; 404 for an id this instance does not hold). A second answer, or one after the wait ended, is 409 conflict and counted as late (switchboard_reply_late_answers_total).",
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              description: 'The reply_id of the ApiReplyRequest.',
              schema: { type: 'string', format: 'uuid' },
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('ApiReplyAnswer') } } },
          responses: {
            '200': json(ref('ApiReplyAnswerResult'), 'Taken; the outcome recorded with the event'),
            ...errors(400, 401, 403, 404, 409, 413, 429, 500, 503),
          },
        },
      },
      '/api/forwards': {
        get: {
          operationId: 'listForwards',
          summary:
            'Every forward rule with its health: pending, dead, delivered in the last hour, oldest pending age, last error, paused.',
          responses: { '200': json(ref('ForwardList'), 'Forward rules'), ...errors(401, 403, 429, 500, 503) },
        },
      },
      '/api/forwards/{name}/retry-dead': {
        post: {
          operationId: 'retryDeadDeliveries',
          summary: 'Make every dead delivery of the rule pending now, each with a fresh max_attempts.',
          parameters: [ruleParam],
          responses: {
            '200': json(ref('ForwardRetryDeadResult'), 'How many became pending'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/forwards/{name}/pause': {
        post: {
          operationId: 'pauseForward',
          summary:
            "Stop sending the rule's deliveries (attempts in flight finish); new events still queue. Kept in the database: every instance and a restart see it.",
          parameters: [ruleParam],
          responses: {
            '200': json(ref('ForwardRuleStatus'), 'The rule, now paused'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/forwards/{name}/resume': {
        post: {
          operationId: 'resumeForward',
          summary: "Send the rule's deliveries again, starting with those waiting.",
          parameters: [ruleParam],
          responses: {
            '200': json(ref('ForwardRuleStatus'), 'The rule, now running'),
            ...errors(400, 401, 403, 404, 429, 500, 503),
          },
        },
      },
      '/api/providers': {
        get: {
          operationId: 'listProviders',
          responses: { '200': json(ref('ListProvidersOutput'), 'Providers'), ...errors(401, 403, 429, 500) },
        },
      },
      '/api/providers/{name}': {
        get: {
          operationId: 'getProvider',
          summary:
            'One provider: its status, plus how it signs (generic-hmac options) or where it takes its token, so a client can sign with its own secret exactly as the provider would. Never a secret.',
          parameters: [
            { name: 'name', in: 'path', required: true, description: 'Provider name.', schema: { type: 'string' } },
          ],
          responses: {
            '200': json(ref('ApiProviderDetail'), 'The provider'),
            ...errors(401, 403, 404, 429, 500),
          },
        },
      },
      '/api/config': {
        get: {
          operationId: 'getConfig',
          summary:
            'What the web UI needs to know about the server (the replay default target, the name its own token has in the replay history). Never a secret.',
          responses: { '200': json(ref('ApiConfig'), 'Server settings for the UI'), ...errors(401, 403, 429, 500) },
        },
      },
      '/api/stream': {
        get: {
          operationId: 'streamEvents',
          summary:
            'Server-Sent Events: each new ApiEventSummary as a `event` message with id = event id (no id for an event placed in the list before one already sent, so the resume point never moves back); heartbeats as comments. Send Last-Event-ID to resume: the events after that one in the list order, each once, and none at or before it. Without Last-Event-ID every event committed after the response starts is sent, so a client that opens the stream first and then pages GET /api/events?since=<last id>&order=oldest_first misses nothing (switchboard listen catches up so). See docs/reference/asyncapi.yaml.',
          parameters: [
            { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', format: 'uuid' } },
            queryParam(
              'reply',
              { type: 'string', minLength: 1 },
              "switchboard listen --reply: the providers (comma-separated, or * for every one) whose deliveries that wait for the app's answer (reply: {from: listen}) this stream answers. Each comes as a `reply` message (ApiReplyRequest, no id), to be answered with POST /api/replies/{reply_id}. 400 when no provider answers through listen.",
            ),
          ],
          responses: {
            '200': { description: 'Event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
            ...errors(400, 401, 403, 429, 500, 503),
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        EventSummary: component(registry, 'event-summary.schema.json'),
        ApiEventSummary: component(registry, 'api-event-summary.schema.json'),
        ApiEventList: component(registry, 'api-event-list.schema.json'),
        EventDetail: component(registry, 'event-detail.schema.json'),
        ApiEventDetail: component(registry, 'api-event-detail.schema.json'),
        ProviderStatus: component(registry, 'provider-status.schema.json'),
        ApiProviderDetail: component(registry, 'api-provider-detail.schema.json'),
        ApiReplayHeaders: component(registry, 'api-replay-headers.schema.json'),
        ApiReplyRequest: component(registry, 'api-reply-request.schema.json'),
        ApiReplyAnswer: component(registry, 'api-reply-answer.schema.json'),
        ApiReplyAnswerResult: component(registry, 'api-reply-answer-result.schema.json'),
        ReplayResult: component(registry, 'replay-result.schema.json'),
        ReplayHistory: component(registry, 'replay-history.schema.json'),
        ForwardRuleStatus: component(registry, 'forward-rule-status.schema.json'),
        ForwardList: component(registry, 'forward-list.schema.json'),
        Delivery: component(registry, 'delivery.schema.json'),
        EventDeliveries: component(registry, 'event-deliveries.schema.json'),
        ForwardRetryDeadResult: component(registry, 'forward-retry-dead-result.schema.json'),
        ErrorEnvelope: component(registry, 'error-envelope.schema.json'),
        ListProvidersOutput: component(registry, 'tools/list-providers.output.schema.json'),
        ApiConfig: {
          title: 'ApiConfig',
          description:
            'Server settings the web UI shows. default_target is replay.default_target, or null when none is configured. server_token_caller is the caller name the replay history records for SWITCHBOARD_TOKEN, which the UI shows as "server token". cli_command is how to run the CLI where the server runs (switchboard, npx @switchboard-dev/switchboard, or npm start -- in a clone), which the UI\'s hints and copy buttons start with.',
          type: 'object',
          additionalProperties: false,
          required: ['replay', 'server_token_caller', 'cli_command'],
          properties: {
            server_token_caller: { type: 'string', minLength: 1 },
            cli_command: { type: 'string', minLength: 1 },
            replay: {
              type: 'object',
              additionalProperties: false,
              required: ['default_target'],
              properties: { default_target: { anyOf: [{ type: 'string', format: 'uri' }, { type: 'null' }] } },
            },
          },
        },
      },
    },
  };
}

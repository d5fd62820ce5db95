/**
 * The four tools of the contract, each a manifest entry (name, schemas, annotations: all from
 * generated/tool-manifest.ts) paired with the generated validators and the code that answers it.
 * Inputs are validated before anything runs; outputs are validated before anything is sent, so a
 * client never receives a result that breaks the schema it was promised.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_MANIFEST, type ToolManifestEntry, type ToolName } from '../../generated/tool-manifest.ts';
import type { GeneratedValidator } from '../../generated/validators.js';
import {
  validateGetWebhookEventInput,
  validateGetWebhookEventOutput,
  validateListProvidersInput,
  validateListProvidersOutput,
  validateListWebhookEventsInput,
  validateListWebhookEventsOutput,
  validateReplayWebhookEventInput,
  validateReplayWebhookEventOutput,
} from '../../generated/validators.js';
import {
  AppError,
  fillTemplate,
  internalError,
  invalidArgument,
  notFound,
  unavailable,
  type ErrorParams,
} from '../errors/app-error.ts';
import { isDatabaseUnavailable } from '../errors/database-unavailable.ts';
import { describeSchemaErrors } from '../errors/schema-errors.ts';
import type { Logger } from '../log/logger.ts';
import { listEventsWithSummaries } from '../provider-directory/list-events.ts';
import type { ProviderDirectory } from '../provider-directory/provider-directory.ts';
import type { ReplayService } from '../replay/replay-types.ts';
import type { EventStore } from '../store/events/event-store.ts';
import { listQueryFromInput } from '../store/events/list-statement.ts';
import { toEventDetail } from '../event-wire/event-detail.ts';
import { toMcpEventSummary } from './event-summaries.ts';
import type { EventWaits } from './event-waits.ts';
import { toolError, toolSuccess } from './tool-results.ts';

export interface SwitchboardToolsDeps {
  store: Pick<EventStore, 'get' | 'listWithSummaries' | 'providerHasEvents'>;
  providers: ProviderDirectory;
  /** Applies the replay rate limit and writes the audit trail itself (shared with /api). */
  replay: ReplayService;
  /** Takes one token from the caller's read bucket; throws AppError rate_limited when empty. */
  checkReadLimit: (caller: string) => void;
  logger: Logger;
  /** ResolvedConfig.replay.defaultTarget: list_providers reports it as replay_default_target. */
  replayDefaultTarget: string | undefined;
  /** ResolvedConfig.rateLimits.replay: replay_webhook_event's description states it. */
  replayRate: ReplayRate;
  /** list_webhook_events' wait_ms: the live bus, and the per-caller limit on waiting calls. */
  waits: Pick<EventWaits, 'readOrWait'>;
}

/** Who is calling, and what ends the call early. */
interface ToolCall {
  /** The token name: the identity for rate limits and audit. */
  readonly caller: string;
  /**
   * Aborts when the client cancels the call, or when its session or token ends; in the latter
   * case the reason is the AppError the call is answered with (unauthenticated, unavailable).
   */
  readonly signal: AbortSignal;
}

/** @internal outside src/, only tests or benches use it */
export interface ReplayRate {
  capacity: number;
  refillPerSecond: number;
}

/**
 * "a burst of 10, then 1 every 2 s": a token bucket as an agent can plan around it.
 * @internal outside src/, only tests or benches use it
 */
export function describeRate(rate: ReplayRate): string {
  const round = (value: number): string => String(Number(value.toFixed(1)));
  const sustained =
    rate.refillPerSecond >= 1
      ? `${round(rate.refillPerSecond)} per second`
      : `1 every ${round(1 / rate.refillPerSecond)} s`;
  return `a burst of ${rate.capacity}, then ${sustained}`;
}

export interface SwitchboardTools {
  /** The tools/list result: built once, it never changes while the process runs. */
  readonly list: Tool[];
  call(name: string, args: Record<string, unknown> | undefined, call: ToolCall): Promise<CallToolResult>;
  has(name: string): boolean;
}

interface ToolDefinition<Input, Output> {
  validateInput: GeneratedValidator<Input>;
  validateOutput: GeneratedValidator<Output>;
  /** Reads draw from the read bucket here; replay's bucket is the ReplayService's to charge. */
  readonly chargesRead: boolean;
  run(input: Input, call: ToolCall): Promise<Output>;
}

type AnyDefinition = ToolDefinition<never, unknown>;

const define = <Input, Output>(definition: ToolDefinition<Input, Output>): AnyDefinition =>
  definition as unknown as AnyDefinition;

/**
 * A failure nobody anticipated, as a caller may see it: logged in full with a reference, answered
 * internal (the contract's code for "not your request's fault"). A database that cannot be reached
 * says so, with the same reference, so an agent waits and retries instead of reporting a bug.
 */
export function unexpectedFailure(log: Logger, err: unknown, context: Record<string, unknown>, what: string): AppError {
  const { error, correlationId } = internalError();
  if (isDatabaseUnavailable(err)) {
    log.warn({ err, correlationId, ...context }, `${what}: database unavailable`);
    return unavailable(`database unavailable; try again shortly (reference ${correlationId} in the server log)`, err);
  }
  log.error({ err, correlationId, ...context }, `${what} unexpectedly`);
  return error;
}

function manifestEntry(name: ToolName): ToolManifestEntry {
  const entry = TOOL_MANIFEST.find((t) => t.name === name);
  if (entry === undefined) throw new Error(`tool ${name} is missing from the generated manifest`);
  return entry;
}

/**
 * A tool as tools/list shows it. `values` fill the {name} placeholders of the manifest's
 * descriptions (the configured replay rate), which say what this server does, not its defaults.
 */
function toolListing(entry: ToolManifestEntry, values: ErrorParams = {}): Tool {
  return {
    name: entry.name,
    title: entry.title,
    description: fillTemplate(entry.description, values),
    annotations: { ...entry.annotations },
    inputSchema: entry.inputSchema,
    outputSchema: entry.outputSchema,
  };
}

/** The four tools' handlers side by side over the dependencies they share, as the tool manifest lists them. */
export function createSwitchboardTools(deps: SwitchboardToolsDeps): SwitchboardTools {
  const log = deps.logger;
  const definitions: Record<ToolName, AnyDefinition> = {
    list_webhook_events: define({
      validateInput: validateListWebhookEventsInput,
      validateOutput: validateListWebhookEventsOutput,
      chargesRead: true,
      run: (input, call) => {
        const query = listQueryFromInput(input);
        return deps.waits.readOrWait({
          caller: call.caller,
          // Past a newest-first cursor the pages hold older events, which cannot arrive later.
          waitMs: input.cursor !== undefined && input.order === 'newest_first' ? 0 : input.wait_ms,
          signal: call.signal,
          read: async () => {
            const page = await listEventsWithSummaries(deps, query);
            return { ...page, events: page.events.map(toMcpEventSummary) };
          },
          isEmpty: (page) => page.events.length === 0,
        });
      },
    }),
    get_webhook_event: define({
      validateInput: validateGetWebhookEventInput,
      validateOutput: validateGetWebhookEventOutput,
      chargesRead: true,
      run: async (input) => {
        const stored = await deps.store.get(input.id);
        if (stored === null) throw notFound(`no event with id ${input.id}`);
        return toEventDetail(stored, { maxPayloadBytes: input.max_payload_bytes });
      },
    }),
    replay_webhook_event: define({
      validateInput: validateReplayWebhookEventInput,
      validateOutput: validateReplayWebhookEventOutput,
      chargesRead: false,
      run: (input, call) =>
        deps.replay.replay({
          eventId: input.id,
          targetUrl: input.target_url,
          caller: call.caller,
          unsigned: input.unsigned === true,
        }),
    }),
    list_providers: define({
      validateInput: validateListProvidersInput,
      validateOutput: validateListProvidersOutput,
      chargesRead: true,
      run: () =>
        Promise.resolve({ providers: deps.providers.list(), replay_default_target: deps.replayDefaultTarget ?? null }),
    }),
  };
  const descriptionValues = { replay_rate: describeRate(deps.replayRate) };
  const list = (Object.keys(definitions) as ToolName[]).map((name) =>
    toolListing(manifestEntry(name), descriptionValues),
  );
  const isToolName = (name: string): name is ToolName => Object.hasOwn(definitions, name);

  return {
    list,
    has: isToolName,
    async call(name, args, call) {
      const { caller } = call;
      if (!isToolName(name)) throw new Error(`unknown tool ${name}`);
      const definition = definitions[name];
      try {
        if (definition.chargesRead) deps.checkReadLimit(caller);
        const input: unknown = args ?? {};
        if (!definition.validateInput(input)) {
          return toolError(invalidArgument(describeSchemaErrors(definition.validateInput.errors, 'arguments')));
        }
        const output = await definition.run(input, call);
        if (!definition.validateOutput(output)) {
          const { error, correlationId } = internalError();
          log.error(
            {
              correlationId,
              tool: name,
              caller,
              schemaErrors: describeSchemaErrors(definition.validateOutput.errors, 'result'),
            },
            'MCP tool result does not match its output schema; not sent',
          );
          return toolError(error);
        }
        return toolSuccess(output as Record<string, unknown>);
      } catch (err) {
        // The session or token ended while the call waited: said with the code that tells the
        // client what happened (unauthenticated: the token was revoked), not the nearest tool code.
        if (call.signal.aborted && err === call.signal.reason && err instanceof AppError) return toolError(err, 'wire');
        if (err instanceof AppError && err.code !== 'internal') return toolError(err);
        return toolError(unexpectedFailure(log, err, { tool: name, caller }, 'MCP tool failed'));
      }
    },
  };
}

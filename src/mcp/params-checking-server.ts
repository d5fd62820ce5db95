/**
 * The SDK's Server, with request params checked before the SDK sees them. The SDK parses each
 * request against its handler's schema and answers a failed parse with -32603 (internal error)
 * and a dump of zod issues; a request the client got wrong deserves -32602 (invalid params) and
 * a message saying which field is wrong. The check runs at the transport boundary rather than
 * inside the handlers because for tools/call the SDK's own pre-check would otherwise answer
 * first, with its own wording.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { getMethodLiteral } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import { safeParse, type AnyObjectSchema, type SchemaOutput } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCRequest,
  type JSONRPCErrorResponse,
  type JSONRPCRequest,
  type Notification,
  type Request,
  type Result,
  type ServerCapabilities,
  type ServerNotification,
  type ServerRequest,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js';

type HandlerExtra = RequestHandlerExtra<ServerRequest | Request, ServerNotification | Notification>;
type Handler<T extends AnyObjectSchema> = (
  request: SchemaOutput<T>,
  extra: HandlerExtra,
) => ServerResult | Result | Promise<ServerResult | Result>;

const MAX_ISSUES = 3;
const MAX_PATH_CHARS = 64;

/**
 * Request schemas by method, per server. A WeakMap and not a field: the SDK registers ping and
 * initialize from its constructors, before a subclass's fields exist.
 */
const schemasOf = new WeakMap<Server, Map<string, AnyObjectSchema>>();

interface Issue {
  path?: unknown;
  message?: unknown;
}

function issuesOf(error: unknown): Issue[] {
  const issues = (error as { issues?: unknown } | null)?.issues;
  return Array.isArray(issues) ? (issues as Issue[]) : [];
}

/** "name: expected string, received number"; the path is schema keys, the text zod's, never the value sent. */
function describeIssue(issue: Issue): string {
  const path = Array.isArray(issue.path) ? issue.path.map(String) : [];
  // Every path starts at the request; `params` itself is named only when params as a whole is wrong.
  const field = (path[0] === 'params' && path.length > 1 ? path.slice(1) : path).join('.').slice(0, MAX_PATH_CHARS);
  const text = typeof issue.message === 'string' ? issue.message.replace(/^Invalid input: /, '') : 'invalid';
  return field === '' ? text : `${field}: ${text}`;
}

/** The refusal for a request whose params break its method's schema, or undefined when they fit. */
function checkRequestParams(schema: AnyObjectSchema, request: JSONRPCRequest): string | undefined {
  const parsed = safeParse(schema, request);
  if (parsed.success) return undefined;
  const issues = issuesOf(parsed.error);
  const described = issues.slice(0, MAX_ISSUES).map(describeIssue);
  if (issues.length > MAX_ISSUES) described.push(`and ${issues.length - MAX_ISSUES} more`);
  return `Invalid params for ${request.method}: ${described.length > 0 ? described.join('; ') : 'they do not match the request schema'}`;
}

/**
 * The SDK runs a request carrying `params.task` as a task, and without the tasks capability
 * (switchboard has none) it throws a plain Error, which goes out as -32603 too.
 */
function asksForTask(request: JSONRPCRequest): boolean {
  return request.params !== undefined && Object.hasOwn(request.params, 'task');
}

/** Answers the request on the stream it came in on, as the SDK would answer it. */
function refuse(transport: Transport, request: JSONRPCRequest, message: string): void {
  const answer: JSONRPCErrorResponse = {
    jsonrpc: '2.0',
    id: request.id,
    error: { code: ErrorCode.InvalidParams, message },
  };
  transport
    .send(answer, { relatedRequestId: request.id })
    .catch((err: unknown) => transport.onerror?.(err instanceof Error ? err : new Error(String(err))));
}

export class ParamsCheckingServer extends Server {
  #runsTasks: boolean;

  constructor(...args: ConstructorParameters<typeof Server>) {
    super(...args);
    this.#runsTasks = args[1]?.capabilities?.tasks !== undefined;
  }

  override registerCapabilities(capabilities: ServerCapabilities): void {
    super.registerCapabilities(capabilities);
    if (capabilities.tasks !== undefined) this.#runsTasks = true;
  }

  override setRequestHandler<T extends AnyObjectSchema>(requestSchema: T, handler: Handler<T>): void {
    let schemas = schemasOf.get(this);
    if (schemas === undefined) {
      schemas = new Map();
      schemasOf.set(this, schemas);
    }
    schemas.set(getMethodLiteral(requestSchema), requestSchema);
    super.setRequestHandler(requestSchema, handler);
  }

  override removeRequestHandler(method: string): void {
    schemasOf.get(this)?.delete(method);
    super.removeRequestHandler(method);
  }

  override async connect(transport: Transport): Promise<void> {
    await super.connect(transport);
    // Wrapped after connect: the SDK chains any earlier onmessage but cannot be stopped by it.
    const dispatch = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (isJSONRPCRequest(message)) {
        const refusal = this.refusalFor(message);
        if (refusal !== undefined) {
          refuse(transport, message, refusal);
          return;
        }
      }
      dispatch?.(message, extra);
    };
  }

  private refusalFor(request: JSONRPCRequest): string | undefined {
    // A method without a handler is the SDK's to answer (method not found), whatever its params.
    const schema = schemasOf.get(this)?.get(request.method);
    if (schema === undefined) return undefined;
    if (!this.#runsTasks && asksForTask(request))
      return `Invalid params for ${request.method}: task: this server does not run requests as tasks`;
    return checkRequestParams(schema, request);
  }
}

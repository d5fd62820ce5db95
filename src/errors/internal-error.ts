/**
 * The base of switchboard's own failures outside an HTTP answer (config, start-up, the embedded
 * PostgreSQL, the CLI, listen's view of a server). Each class has a stable `code`, as undici's
 * errors have `UND_ERR_*`: a caller or a log reader branches on the code, never on the wording
 * of a message, which may change. An HTTP answer's codes are the error registry's (app-error.ts).
 * @internal outside src/, only tests or benches use it
 */
export const INTERNAL_ERROR_CODES = [
  'SB_ERR_ANSWER_TOO_LARGE',
  'SB_ERR_CONFIG',
  'SB_ERR_DATA_DIR_IN_USE',
  'SB_ERR_EMBEDDED_POSTGRES',
  'SB_ERR_LISTEN_FATAL',
  'SB_ERR_MIGRATION',
  'SB_ERR_POOLER',
  'SB_ERR_PORT_IN_USE',
  'SB_ERR_POSTGRES_UNREACHABLE',
  'SB_ERR_SERVER_ANSWER',
  'SB_ERR_SERVER_BUSY',
  'SB_ERR_SERVER_REFUSED',
  'SB_ERR_SERVER_UNREACHABLE',
  'SB_ERR_TRIGGER_UNREACHABLE',
  'SB_ERR_USAGE',
] as const;

export type InternalErrorCode = (typeof INTERNAL_ERROR_CODES)[number];

export abstract class InternalError extends Error {
  abstract readonly code: InternalErrorCode;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // The subclass's own name in stacks and logs (`ConfigError: …`), without each one setting it.
    this.name = new.target.name;
  }
}

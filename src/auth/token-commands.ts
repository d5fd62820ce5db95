/**
 * `switchboard token create <name> | list | revoke <name>`: the logic, with output going through
 * the io given, so the CLI only parses argv, opens the database and calls runTokenCommand.
 */
import { AppError, invalidArgument } from '../errors/app-error.ts';
import { escapeForTerminal } from '../shared/terminal-text.ts';
import type { ApiToken, TokenRepository } from '../store/records/token-repository.ts';
import { ENV_TOKEN_CALLER } from './token-service.ts';

export interface TokenCommandIo {
  /** Results: the new token, the table. */
  out: (text: string) => void;
  /** Notes for the human. */
  err: (text: string) => void;
}

/** Exit codes as the CLI's: 0 done, 1 failed, 2 bad usage. */
const TOKEN_USAGE = 'usage: switchboard token create <name> | token list | token revoke <name>\n';

/** Creates a token and returns its plaintext, the only time it exists outside the caller's hands. */
async function createToken(
  tokens: Pick<TokenRepository, 'create'>,
  name: string,
): Promise<{ name: string; token: string }> {
  // "env" is the identity of SWITCHBOARD_TOKEN; a managed token of that name would share its rate limits and audit trail.
  if (name === ENV_TOKEN_CALLER)
    throw invalidArgument(`the token name ${ENV_TOKEN_CALLER} is reserved for SWITCHBOARD_TOKEN`);
  return tokens.create(name);
}

/**
 * A plain table of names and dates, never a token or its hash. Each cell is escaped for the
 * terminal: a name written to the database by other means than `token create` may hold anything.
 * @internal outside src/, only tests or benches use it
 */
export function formatTokenList(list: readonly ApiToken[]): string {
  if (list.length === 0) return 'no tokens\n';
  const rows = [
    ['NAME', 'CREATED', 'LAST USED', 'STATUS'],
    ...list.map((t) => [
      escapeForTerminal(t.name),
      t.createdAt,
      t.lastUsedAt ?? '-',
      t.revokedAt === null ? 'active' : `revoked ${t.revokedAt}`,
    ]),
  ];
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return (
    rows
      .map((row) =>
        row
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export async function runTokenCommand(
  args: readonly string[],
  tokens: TokenRepository,
  io: TokenCommandIo,
): Promise<number> {
  const [sub, name, ...extra] = args;
  const needsName = sub === 'create' || sub === 'revoke';
  if (
    sub === undefined ||
    !['create', 'list', 'revoke'].includes(sub) ||
    extra.length > 0 ||
    needsName !== (name !== undefined)
  ) {
    io.err(TOKEN_USAGE);
    return 2;
  }
  try {
    if (sub === 'create' && name !== undefined) {
      const created = await createToken(tokens, name);
      io.out(`${created.token}\n`);
      io.err(`created token ${created.name}; it is shown only this once, so store it now\n`);
    } else if (sub === 'revoke' && name !== undefined) {
      const revokedNow = await tokens.revoke(name);
      io.err(revokedNow ? `revoked token ${name}\n` : `token ${name} was already revoked\n`);
    } else {
      io.out(formatTokenList(await tokens.list()));
    }
    return 0;
  } catch (error) {
    if (error instanceof AppError && (error.code === 'invalid_argument' || error.code === 'not_found')) {
      io.err(`${error.message}\n`);
      return error.code === 'invalid_argument' ? 2 : 1;
    }
    throw error;
  }
}

import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.ts';
import type { TokenRepository } from '../store/records/token-repository.ts';

export const INITIAL_TOKEN_NAME = 'default';
export const TOKEN_FILE_NAME = 'token';

export interface EnsureInitialTokenOptions {
  tokens: Pick<TokenRepository, 'create' | 'list'>;
  /** The data directory; the token is written to <dataDir>/token. */
  dataDir: string;
  /** SWITCHBOARD_TOKEN; when set, no managed token is needed. */
  envToken?: string | undefined;
}

export interface InitialTokenResult {
  /** True only on the start that created the token: the one time it can be shown. */
  created: boolean;
  /** The plaintext token, present only when created. Print it once; it is not kept anywhere else but the file. */
  token?: string;
  /** Where the token file is (or would be). */
  path: string;
}

/**
 * First start: with no SWITCHBOARD_TOKEN and no managed token at all (revoked ones count: an
 * operator who revoked every token meant it), create `default` so /mcp is usable without a
 * manual step, yet never open. The token goes to <dataDir>/token, readable by the owner only.
 */
export async function ensureInitialToken(options: EnsureInitialTokenOptions): Promise<InitialTokenResult> {
  const file = path.join(options.dataDir, TOKEN_FILE_NAME);
  if (options.envToken) return { created: false, path: file };
  if ((await options.tokens.list()).length > 0) return { created: false, path: file };
  let token: string;
  try {
    ({ token } = await options.tokens.create(INITIAL_TOKEN_NAME));
  } catch (error) {
    // Another instance sharing the database created it first; it has already shown the token.
    if (error instanceof AppError && error.code === 'invalid_argument') return { created: false, path: file };
    throw error;
  }
  await writePrivateFile(file, `${token}\n`);
  return { created: true, token, path: file };
}

/**
 * Written to a private temporary name and renamed, so the token is never readable by others,
 * not even for a moment, and a pre-existing file with looser permissions is replaced, not reused.
 */
async function writePrivateFile(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, content, { mode: 0o600, flag: 'wx' });
    // The umask cannot widen 0600, but a filesystem that ignores the mode argument can.
    await chmod(temporary, 0o600);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

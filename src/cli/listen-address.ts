/**
 * Where `serve` listens: --host or server.host; --port, else PORT, else server.port (whose default
 * the schema gives). `trigger` posts where serve would listen, so both read it here, and a port
 * set in switchboard.yaml or PORT reaches both.
 */
import { SERVER_PORT } from '../../generated/constants.ts';
import { parsePort } from './command-line.ts';

/** The ports given outside the config, checked before the config is read (a usage error, exit 2). */
export interface GivenPorts {
  flag: number | undefined;
  env: number | undefined;
}

export interface ListenAddress {
  host: string;
  port: number;
  /** Where the port came from, for messages. */
  portFrom: '--port' | 'PORT' | 'server.port' | 'the default';
}

/** --port (serve only) and PORT; PORT is not read when --port is given. */
export function givenPorts(flag: string | undefined, env: NodeJS.ProcessEnv, command: string): GivenPorts {
  const fromFlag = parsePort(flag, '--port', command);
  return { flag: fromFlag, env: fromFlag === undefined ? parsePort(env.PORT, 'PORT', command) : undefined };
}

export function listenAddress(input: {
  ports: GivenPorts;
  /** --host (serve only). */
  flagHost?: string | undefined;
  server: { host: string; port: number };
}): ListenAddress {
  const { ports, server } = input;
  const host = input.flagHost ?? server.host;
  if (ports.flag !== undefined) return { host, port: ports.flag, portFrom: '--port' };
  if (ports.env !== undefined) return { host, port: ports.env, portFrom: 'PORT' };
  // Validation filled the schema's default in: a port equal to it may have been written or not.
  return { host, port: server.port, portFrom: server.port === SERVER_PORT.default ? 'the default' : 'server.port' };
}

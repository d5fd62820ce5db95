export const HELP_TEXT = `switchboard: receive, verify and store webhooks and queue messages; inspect and replay them over MCP.

Usage:
  switchboard [serve] [--config PATH] [--host HOST] [--port PORT]
      Start the server (default command). Host defaults to 127.0.0.1, port to $PORT or 8080.
  switchboard migrate [--config PATH]
      Apply database migrations and exit.
  switchboard token create <name> | token list | token revoke <name>
      Manage the bearer tokens that MCP and the HTTP API accept.
  switchboard trigger <provider> [sample] [--url BASE_URL] [--config PATH]
      Send a realistic sample event, signed with the provider's configured secret,
      to a running switchboard (default http://127.0.0.1:8080).
  switchboard --help | --version

Configuration:
  --config PATH, or SWITCHBOARD_CONFIG, or ./switchboard.yaml if present.
  DATABASE_URL                  PostgreSQL to use; without it an embedded PostgreSQL runs in the data dir.
  SWITCHBOARD_DATA_DIR          Data directory (default ./.switchboard).
  SWITCHBOARD_TOKEN             A static bearer token (identity "env").
  REDIS_URL                     Redis for queue providers (default redis://127.0.0.1:6379).
  SWITCHBOARD_DRAIN_TIMEOUT_MS  How long SIGTERM waits for in-flight requests before cutting
                                connections, in ms (0 to 600000; default 10000).
  LOG_LEVEL                     pino level (default info).
`;

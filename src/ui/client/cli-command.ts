/**
 * How the UI names switchboard's CLI in hints and copy buttons. The package's npm name is scoped:
 * the bare, unscoped name would ask the registry for some other package, so it is never shown.
 * After sign-in the server says how its CLI runs where it runs (GET /api/config cli_command:
 * `switchboard`, `npx @switchboard-dev/switchboard` or `npm start --` in a clone); before, the
 * sign-in page shows the installed and the npx forms.
 */
import { createContext } from 'preact';

/** The command of the installed package (npm install -g @switchboard-dev/switchboard). */
export const INSTALLED_CLI = 'switchboard';
/** The same without installing: npx fetches the scoped package. */
export const NPX_CLI = 'npx @switchboard-dev/switchboard';

/** The server's cli_command once known; the installed form until then. */
export const CliCommand = createContext<string>(INSTALLED_CLI);
